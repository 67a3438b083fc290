#!/usr/bin/env bash
# CMake's default generator (Unix Makefiles) configures the project with -DVSYNTH_CUDA=ON: CUDA
# code is C++17 (cmake/VsynthCuda.cmake); without CMAKE_CUDA_STANDARD, libvsynth.so inherited
# CXX_STANDARD 20 as "CUDA20", which Debian 12's CMake 3.25.1 cannot enable for nvcc.
# Configures only (~1 minute), into a scratch folder under the build tree. Exit 77 (skipped)
# without nvcc.
#
#   cuda_configure.sh SOURCE_DIR SCRATCH_DIR
set -euo pipefail
src=$1 scratch=$2
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "SKIPPED: no nvcc on this machine"
  exit 77
fi
rm -rf "$scratch"
trap 'rm -rf "$scratch"' EXIT
if ! env -u CMAKE_GENERATOR cmake -S "$src" -B "$scratch" -DVSYNTH_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DVSYNTH_TESTS=OFF -DVSYNTH_BENCH=OFF >"$scratch.log" 2>&1; then
  cat "$scratch.log"
  echo "FAILED: cmake with the default generator and -DVSYNTH_CUDA=ON did not configure"
  exit 1
fi
grep -q "CUDA backend ON" "$scratch.log" || {
  cat "$scratch.log"
  echo "FAILED: the configure did not enable the CUDA backend"
  exit 1
}
rm -f "$scratch.log"
echo "passed: configured with the default generator and the CUDA backend on"
