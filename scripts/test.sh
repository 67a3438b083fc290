#!/usr/bin/env bash
# Sets everything up on a fresh Debian machine and runs the whole test suite:
#   1. scripts/setup.sh (apt packages, default model, tree-sitter grammars, golden test models),
#      then scripts/golden/setup-logits.sh (llama.cpp's logits, the engine tests' reference)
#   2. a release build (build/, without the benchmarks: they are never run here) and every
#      ctest test but the GPU-labelled ones
#   3. an ASan/UBSan build (build-asan/) and the tests under the sanitizers, but those labelled
#      `slow` (whole-model golden runs, minutes each even unsanitized; they ran in step 2); the
#      test `fuzz_replay` there sends every fuzz target's seed corpus through it once
#   4. only with VSYNTH_TEST_FUZZ=1: a clang build of the libFuzzer targets (build-fuzz/:
#      pipeline YAML, GGUF, task files, safetensors), each run from its seeds for
#      VSYNTH_FUZZ_SECONDS (default 20) per target. A third build of every library: run it
#      before landing a change to a reader, not on every CI run.
# VSYNTH_TEST_QUICK=1 stops after step 2 (for a fast local loop). Tests needing the default model
# fail without it; VSYNTH_ALLOW_MISSING_MODEL=1 reports them as skipped instead.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=$(nproc)

"$root/scripts/setup.sh"
# The engine tests' reference: llama.cpp's logits on the default model and the synthetic golden
# models, written into .cache/golden-logits/ (not committed) with llama-cpp-python from PyPI
# (tests only, so the main job's setup does not build llama.cpp).
"$root/scripts/golden/setup-logits.sh"

echo "== release build"
"$root/scripts/build.sh" build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVSYNTH_BENCH=OFF
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
  echo "VSYNTH_TEST_FUZZ is not 1: the libFuzzer build is left out (fuzz_replay ran the seeds)"
  exit 0
fi

echo "== fuzz targets (clang, libFuzzer)"
# A clang build of every library with the fuzz flags (~11 min on 2 busy cores the first time);
# through ccache when it is installed, so a later run rebuilds only what changed.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -G Ninja -DVSYNTH_FUZZ=ON \
  -DVSYNTH_TESTS=OFF -DVSYNTH_BENCH=OFF -DVSYNTH_CUDA=OFF "${launcher[@]}" >/dev/null
cmake --build "$root/build-fuzz" -j"$jobs" --target vsynth_fuzz_all
"$root/scripts/fuzz-smoke.sh" build-fuzz "${VSYNTH_FUZZ_SECONDS:-20}"
