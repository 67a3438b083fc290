#!/usr/bin/env bash
# Configures and builds vsynth into a build folder.
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]     (default BUILD_DIR: build)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-build}
shift || true
cmake -S "$root" -B "$root/$dir" -G Ninja "$@" >/dev/null
cmake --build "$root/$dir" -j"$(nproc)"
