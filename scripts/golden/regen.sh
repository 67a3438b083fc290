#!/usr/bin/env bash
# Regenerates the golden data in tests/data/golden/ from llama.cpp, through llama-cpp-python in
# a project-local virtual environment (.venv-bench/, git-ignored; later benchmarks use it too).
#
#   scripts/golden/regen.sh              tokenizer and logits goldens (needs models/, see
#                                        setup-model.sh)
#   scripts/golden/regen.sh --skip-model only the synthetic vocabularies and synthetic models
#   scripts/golden/regen.sh --encoder    only the encoder golden (encoder_minilm.json)
#
# Encoder golden (make_encoder_golden.py): a float64 numpy forward of all-MiniLM-L6-v2 read from
# models/all-MiniLM-L6-v2/model.safetensors (scripts/setup-embedder.sh), token ids from HF
# `tokenizers`; runs in .venv-golden/ (numpy) with tokenizers==0.23.3 added; ~30 s. The full
# regen (not --skip-model) runs it last.
#
# Logits goldens (make_logits_golden.py, into .cache/golden-logits/, not committed; test.sh
# makes them through setup-logits.sh): teacher-forced llama.cpp logits on the default model
# (~5 minutes on 2 cores) and on two tiny synthetic GGUFs the script writes from fixed seeds
# into .cache/golden-models/ (not committed; their sha256 is pinned in synth_models.sha256,
# which a run rewrites when the models change, and gguf/numpy in requirements-models.txt).
#
# WordPiece golden (make_wordpiece_golden.py): HF tokenizers' ids for all-MiniLM-L6-v2's
# tokenizer.json (needs models/all-MiniLM-L6-v2, see setup-embedder.sh), run in .venv-golden/
# with tokenizers pinned in requirements-encoder.txt; skipped with --skip-model.
#
# The first run builds llama.cpp from source inside `pip install llama-cpp-python`: about 25
# minutes on 2 cores. Later runs reuse the environment and take seconds.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv="$root/.venv-bench"

encoder_golden() {
  local gvenv="$root/.venv-golden"
  if ! "$gvenv/bin/python" -c "import tokenizers" 2>/dev/null; then
    "$gvenv/bin/pip" install --quiet tokenizers==0.23.3
  fi
  "$gvenv/bin/python" "$here/make_encoder_golden.py"
}
if [ "${1:-}" = "--encoder" ]; then
  encoder_golden
  exit 0
fi

# shellcheck source=../lib/llama-cpp.sh
source "$here/../lib/llama-cpp.sh"
install_llama_cpp regen "$venv"
# The synthetic models are only reproducible with the pinned gguf and numpy.
"$venv/bin/pip" install --quiet -r "$here/requirements-models.txt"

"$venv/bin/python" "$here/make_tokenizer_golden.py" "$@"
if [ "${1:-}" = "--skip-model" ]; then
  "$venv/bin/python" "$here/make_logits_golden.py" --only synth
else
  "$venv/bin/python" "$here/make_logits_golden.py"
  encoder_golden
fi
if [ "${1:-}" != "--skip-model" ]; then
  golden_venv="$root/.venv-golden"
  if [ ! -x "$golden_venv/bin/python" ]; then
    python3 -m venv "$golden_venv"
  fi
  "$golden_venv/bin/pip" install --quiet -r "$here/requirements-encoder.txt"
  "$golden_venv/bin/python" "$here/make_wordpiece_golden.py"
fi
