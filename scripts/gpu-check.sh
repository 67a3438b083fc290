#!/usr/bin/env bash
# One-shot check of the CUDA backend on a machine with a GPU (issue 6): builds with
# -DVSYNTH_CUDA=ON, runs the GPU-labelled tests, the no-device tests and bench_cuda (plus the
# PyTorch baseline when torch with CUDA is importable), prints a short table last, and writes
# JSON and logs under RESULTS_DIR. No network, no model file (synthetic weights are written on
# the spot). Budget: the whole script stops within VSYNTH_GPU_DEADLINE seconds (default 540, under
# a 10-minute call): each step gets at most its own limit and never more than the time left, and
# a step with under 20 s left is skipped (said so, status 1).
#
#   scripts/gpu-check.sh RESULTS_DIR
# Environment: VSYNTH_GPU_BUILD (build folder, default build-gpu), VSYNTH_CUDA_ARCH (default
# native: only the GPU present, to keep nvcc's time down), VSYNTH_GPU_QUICK=1 (shorter bench).
set -uo pipefail
if [ $# -ne 1 ]; then
  echo "usage: scripts/gpu-check.sh RESULTS_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
build="$root/${VSYNTH_GPU_BUILD:-build-gpu}"
arch=${VSYNTH_CUDA_ARCH:-native}
jobs=$(nproc)
start=$(date +%s)
status=0
deadline=${VSYNTH_GPU_DEADLINE:-540}
step() { echo "== $* ($(($(date +%s) - start)) s)"; }
# limit STEP_MAX: the seconds the next step may take (its own limit or the time left, whichever
# is smaller); prints 0 when under 20 s remain.
limit() {
  local left=$((deadline - ($(date +%s) - start)))
  if [ "$left" -lt 20 ]; then echo 0; elif [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}
skip() { echo "gpu-check: skipped '$1': deadline ${deadline} s reached"; status=1; }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
    echo "nvidia-smi: not available"
  nvcc --version 2>/dev/null | tail -1
} | tee "$out/env.txt"

step "configure + build ($arch)"
t=$(limit 330)
if ! timeout "$t" bash -c '
       cmake -S "$1" -B "$2" -G Ninja -DVSYNTH_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_CUDA_ARCHITECTURES="$3" -DVSYNTH_FUZZ=OFF &&
       cmake --build "$2" -j"$4" --target test_cuda test_cuda_nodevice bench_cuda' \
     _ "$root" "$build" "$arch" "$jobs" >"$out/build.log" 2>&1; then
  tail -30 "$out/build.log"
  echo "gpu-check: build failed (log: $out/build.log)"
  exit 1
fi

step "ctest -L gpu"
t=$(limit 200)
if [ "$t" -gt 0 ]; then
  timeout "$t" ctest --test-dir "$build" -L gpu -R "^test_cuda" --output-on-failure \
    --output-junit "$out/ctest-gpu.xml" >"$out/ctest-gpu.log" 2>&1 || status=1
  tail -5 "$out/ctest-gpu.log"
else
  skip "ctest -L gpu"
fi
step "ctest no-device tests"
t=$(limit 40)
if [ "$t" -gt 0 ]; then
  timeout "$t" ctest --test-dir "$build" -R "^test_cuda_nodevice" --output-on-failure \
    >"$out/ctest-nodevice.log" 2>&1 || status=1
  tail -3 "$out/ctest-nodevice.log"
else
  skip "no-device tests"
fi

step "bench_cuda"
quick=()
[ "${VSYNTH_GPU_QUICK:-0}" = "1" ] && quick=(--quick)
t=$(limit 180)
if [ "$t" -gt 0 ]; then
  timeout "$t" "$build/tests/bench/bench_cuda" --json "$out/bench_cuda.json" \
    --dir "$build/synthetic" "${quick[@]}" >"$out/bench_cuda.log" 2>&1 || status=1
else
  skip "bench_cuda"
fi

step "PyTorch baseline"
t=$(limit 90)
if [ "$t" -eq 0 ]; then
  echo "deadline reached: no PyTorch comparison" | tee "$out/torch.log"
elif python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)" 2>/dev/null; then
  timeout "$t" python3 "$root/scripts/bench/torch_decoder.py" --json "$out/torch.json" \
    >"$out/torch.log" 2>&1 || echo "torch baseline failed (see $out/torch.log)"
else
  echo "torch with CUDA is not importable: no PyTorch comparison" | tee "$out/torch.log"
fi

step "done"
echo
cat "$out/env.txt"
grep -sE "tests passed|tests failed" "$out/ctest-gpu.log" | sed 's/^/gpu tests: /'
grep -sE "^device:" "$out/bench_cuda.log"
[ -f "$out/bench_cuda.log" ] && sed -n '/^model /,$p' "$out/bench_cuda.log"
[ -s "$out/torch.json" ] && grep -E "tok/s" "$out/torch.log"
echo "results: $out (status $status)"
exit $status
