#!/usr/bin/env bash
# Configures and builds vsynth into a build folder.
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]     (default BUILD_DIR: build)
#   VSYNTH_BUILD_TARGETS="vsynth" scripts/build.sh ...     only those targets (and what they need)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-build}
shift || true
# Through ccache when it is installed (setup installs it): a rebuild after a small change, or
# CI's builds on a machine that built the same tree, recompile only what changed.
# Paths are hashed relative to the tree (CCACHE_BASEDIR) and without the build folder's path
# (CCACHE_NOHASHDIR; debug info then names the first tree that compiled a file), so clean clones
# and git worktrees of the same sources share one cache.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$root" -B "$root/$dir" -G Ninja "${launcher[@]}" "$@" >/dev/null
targets=()
for t in ${VSYNTH_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$root/$dir" -j"$(nproc)" "${targets[@]}"
