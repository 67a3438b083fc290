#!/usr/bin/env bash
# Builds nothing: runs each libFuzzer target in BUILD_DIR for SECONDS from its seed corpus
# (shipped inputs), so a run proves the targets link and survive a short run (and finds what a
# few seconds of mutation can). A crash fails the script, prints the fuzzer's report and keeps
# the input under BUILD_DIR/fuzz-artifacts/ (replay: BUILD_DIR/tests/fuzz/TARGET FILE).
#   scripts/fuzz-smoke.sh BUILD_DIR [SECONDS]      (SECONDS per target, default 20)
#   scripts/fuzz-smoke.sh BUILD_DIR --replay       (the test `fuzz_replay`: each seed once,
#                                                   through targets linked with replay_main.cpp)
# BUILD_DIR: absolute, or relative to the source tree.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?build dir}
[[ $build = /* ]] || build=$root/$build
secs=${2:-20}
replay=0
[ "$secs" = "--replay" ] && replay=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"

# fuzz TARGET CORPUS [libFuzzer options...]: one bounded run; the last lines of its report on
# success, the whole report on failure.
fuzz() {
  local target=$1 corpus=$2
  shift 2
  if [ "$replay" = 1 ]; then
    echo "$target: replaying $(find "$corpus" -type f | wc -l) seed(s)"
    "$build/tests/fuzz/$target" "$corpus"
    return
  fi
  echo "$target: ${secs}s from $(find "$corpus" -type f | wc -l) seed(s)"
  if ! "$build/tests/fuzz/$target" "$corpus" -max_total_time="$secs" -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$target-" "$@" >"$work/$target.log" 2>&1; then
    cat "$work/$target.log"
    echo "fuzz-smoke: $target failed (input kept in $artifacts/)" >&2
    return 1
  fi
  grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$work/$target.log" || true
}

# Seeds: every shipped pipeline and bad config; valid GGUF files written by GgufWriter; every
# shipped task file; valid safetensors files written by the tests' writer.
mkdir -p "$work/yaml" "$work/gguf" "$work/tasks" "$work/safetensors"
cp "$root"/pipelines/*.yaml "$root"/tests/data/bad_configs/*.yaml "$work/yaml/"
"$build/tests/fuzz/fuzz_gguf_seeds" "$work/gguf" >/dev/null
cp "$root"/examples/tasks/*.jsonl "$work/tasks/"
"$build/tests/fuzz/fuzz_safetensors_seeds" "$work/safetensors" >/dev/null

fuzz fuzz_yaml "$work/yaml" -max_len=65536
fuzz fuzz_gguf "$work/gguf" -dict="$root/tests/fuzz/gguf.dict"
fuzz fuzz_task_lines "$work/tasks" -max_len=131072
fuzz fuzz_safetensors "$work/safetensors" -dict="$root/tests/fuzz/safetensors.dict"
