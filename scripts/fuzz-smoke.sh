#!/usr/bin/env bash
# Builds nothing: runs each libFuzzer target in BUILD_DIR for SECONDS from its seed corpus
# (shipped inputs), so CI proves the targets link and survive a short run.
#   scripts/fuzz-smoke.sh BUILD_DIR [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/${1:?build dir}
secs=${2:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/yaml" "$work/gguf"
cp "$root"/pipelines/*.yaml "$root"/tests/data/bad_configs/*.yaml "$work/yaml/"
"$build/tests/fuzz/fuzz_gguf_seeds" "$work/gguf" >/dev/null

echo "fuzz_yaml: ${secs}s"
"$build/tests/fuzz/fuzz_yaml" "$work/yaml" -max_total_time="$secs" -max_len=65536 \
  -rss_limit_mb=2048 -print_final_stats=1 2>&1 | tail -n 3
echo "fuzz_gguf: ${secs}s"
"$build/tests/fuzz/fuzz_gguf" "$work/gguf" -dict="$root/tests/fuzz/gguf.dict" \
  -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 2>&1 | tail -n 3
