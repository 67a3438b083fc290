#!/usr/bin/env bash
# The code-context evaluation kit (docs/performance.md, "Code context"): fetches real
# open-source repositories as pinned PyPI sdists into a git-ignored cache, unpacks them, and
# runs tests/bench/bench_context over them (our pruning vs a sliding window at 512, 1024 and
# 2048 tokens). Nothing fetched is committed.
#
#   scripts/bench-context.sh [build-dir] [extra bench_context options...]
#
# Repositories (languages): click 8.1.7 (Python), cffi 1.17.1 (C + Python), JPype1 1.5.0
# (Java + C++ + Python), tiktoken 0.7.0 (Rust + Python).
# Environment: PYTHON (default python3) for pip; VSYNTH_CACHE_DIR (default <repo>/.cache).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
shift || true
python=${PYTHON:-python3}
cache="${VSYNTH_CACHE_DIR:-$root/.cache}/bench-repos"
sdists="$cache/sdists"
src="$cache/src"

# package version sha256-of-sdist
repos=(
  "click 8.1.7 ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de"
  "cffi 1.17.1 1c39c6016c32bc48dd54561950ebd6836e1670f2ae46128f67cf49e789c52824"
  "JPype1 1.5.0 425a6e1966afdd5848b60c2688bcaeb7e40ba504a686f1114589668e0631e878"
  "tiktoken 0.7.0 1077266e949c24e0291f6c350433c6f0971365ece2b173a23bc3b9f9defef6b6"
)

mkdir -p "$sdists" "$src"
for entry in "${repos[@]}"; do
  read -r name version sha <<<"$entry"
  # grep reads all of ls (no `| head`: an early exit would SIGPIPE ls under pipefail).
  file=$(ls "$sdists" 2>/dev/null | grep -i -E "^${name//-/[-_]}-${version}\.tar\.gz$" || true)
  file=${file%%$'\n'*}
  if [ -z "$file" ]; then
    echo "bench-context: downloading $name $version (sdist) into $sdists"
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
      --no-binary "$name" --dest "$sdists" "$name==$version"
    file=$(ls "$sdists" | grep -i -E "^${name//-/[-_]}-${version}\.tar\.gz$")
    file=${file%%$'\n'*}
  fi
  got=$(sha256sum "$sdists/$file" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "bench-context: $file has sha256 $got, expected $sha; delete it and run again" >&2
    exit 1
  fi
  if [ ! -d "$src/$name" ]; then
    tmp=$(mktemp -d)
    tar -xzf "$sdists/$file" -C "$tmp"
    mv "$tmp"/* "$src/$name"
    rmdir "$tmp"
  fi
done

bench="$build/tests/context/bench_context"
if [ ! -x "$bench" ]; then
  echo "bench-context: $bench is missing; build it: ninja -C $build bench_context" >&2
  exit 1
fi
mkdir -p "$root/results"
"$bench" --repos "$src" --json "$root/results/bench_context.json" "$@"
