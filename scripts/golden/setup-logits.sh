#!/usr/bin/env bash
# Writes the forward-pass golden data the engine tests compare against
# (tests/kernels/engine_golden_test.cpp) into .cache/golden-logits/ (git-ignored):
# llama.cpp's teacher-forced logits on the default model and on the two synthetic golden models
# (make_logits_golden.py; the file layout is in its docstring). Run by scripts/test.sh after
# scripts/setup.sh has put the default model (setup-model.sh) and the synthetic models
# (setup-models.sh) in place.
#
# The reference is llama.cpp itself, from PyPI (llama-cpp-python, pinned below, with gguf and
# numpy from requirements-models.txt) in .venv-bench/ (git-ignored; the benchmarks use it too).
# The first install builds llama.cpp from source: ~25 minutes on 2 cores, then pip's wheel cache
# makes later environments quick; generating the logits takes ~5 minutes on 2 cores.
#
# Idempotent: when the three files are there and .cache/golden-logits/STAMP matches what made
# them (this script, make_logits_golden.py, the pins, the models' sha256) it only says so.
#
# Environment: PYTHON (default python3) is the interpreter the virtual environment is made from.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

dest="$root/.cache/golden-logits"
venv="$root/.venv-bench"
model="$root/models/gemma-3-270m-q4_k_m.gguf"
requirements="$here/requirements-models.txt"
# shellcheck source=../lib/llama-cpp.sh
source "$root/scripts/lib/llama-cpp.sh"
llama_pin=$llama_cpp_pin
python=${PYTHON:-python3}

die() {
  echo "setup-golden-logits: error: $*" >&2
  exit 1
}

[ -f "$model" ] || die "$model is missing (scripts/setup-model.sh installs it)"
for m in model_llama_synth.gguf model_qwen2_synth.gguf; do
  [ -f "$root/.cache/golden-models/$m" ] || die "$root/.cache/golden-models/$m is missing \
(scripts/golden/setup-models.sh writes it)"
done

stamp=$(cat "$here/setup-logits.sh" "$here/make_logits_golden.py" "$requirements" \
  "$here/synth_models.sha256" | sha256sum | cut -d' ' -f1)
stamp="$stamp $llama_pin $(llama_cpp_wheel_dir) $(sha256sum "$model" | cut -d' ' -f1)"
complete() {
  [ -f "$dest/STAMP" ] && [ "$(cat "$dest/STAMP")" = "$stamp" ] || return 1
  local f
  for f in logits_gemma3.bin logits_llama_synth.bin logits_qwen2_synth.bin; do
    [ -s "$dest/$f" ] || return 1
  done
}
if complete; then
  echo "setup-golden-logits: $dest present"
  exit 0
fi

command -v "$python" >/dev/null || die "no '$python' found; install python3 and python3-venv \
(scripts/setup.sh --apt-only does) or set PYTHON"
PYTHON=$python install_llama_cpp setup-golden-logits "$venv" ||
  die "could not build or install $llama_pin into $venv (network? a C++ compiler and cmake?)"
# The synthetic models are only reproducible with the pinned gguf and numpy.
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" ||
  die "pip could not install $requirements into $venv"

echo "setup-golden-logits: writing llama.cpp's logits into $dest (~5 min)"
rm -f "$dest/STAMP"
"$venv/bin/python" "$here/make_logits_golden.py" || die "make_logits_golden.py failed"
echo "$stamp" >"$dest/STAMP"
echo "setup-golden-logits: $dest written"
