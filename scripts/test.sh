#!/usr/bin/env bash
# Sets everything up on a fresh Debian machine and runs the whole test suite:
#   1. scripts/setup.sh (apt packages, default model, tree-sitter grammars, golden test models)
#   2. a release build (build/) and every ctest test but the GPU-labelled ones
#   3. an ASan/UBSan build (build-asan/) and the tests under the sanitizers, but those labelled
#      `slow` (whole-model golden runs, minutes each even unsanitized; they ran in step 2)
#   4. with VSYNTH_TEST_FUZZ=1: a clang build of the libFuzzer targets (build-fuzz/), each run
#      briefly from its seeds
# VSYNTH_TEST_QUICK=1 stops after step 2 (for a fast local loop).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=$(nproc)

"$root/scripts/setup.sh"

echo "== release build"
"$root/scripts/build.sh" build -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "== tests (release)"
ctest --test-dir build --output-on-failure -j"$jobs" -LE gpu

if [ "${VSYNTH_TEST_QUICK:-0}" = "1" ]; then
  echo "VSYNTH_TEST_QUICK=1: skipping the sanitizer and fuzz builds"
  exit 0
fi

echo "== ASan/UBSan build"
"$root/scripts/build.sh" build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVSYNTH_SANITIZE=address,undefined -DVSYNTH_BENCH=OFF -DVSYNTH_CUDA=OFF
echo "== tests (ASan/UBSan)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "gpu|slow"

if [ "${VSYNTH_TEST_FUZZ:-0}" != "1" ]; then
  exit 0
fi
echo "== fuzz targets (clang, libFuzzer)"
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -G Ninja -DVSYNTH_FUZZ=ON \
  -DVSYNTH_TESTS=OFF -DVSYNTH_BENCH=OFF -DVSYNTH_CUDA=OFF >/dev/null
cmake --build "$root/build-fuzz" -j"$jobs" --target fuzz_yaml fuzz_gguf fuzz_gguf_seeds
"$root/scripts/fuzz-smoke.sh" build-fuzz 20
