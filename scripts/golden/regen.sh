#!/usr/bin/env bash
# Regenerates the golden data in tests/data/golden/ from llama.cpp, through llama-cpp-python in
# a project-local virtual environment (.venv-bench/, git-ignored; later benchmarks use it too).
#
#   scripts/golden/regen.sh              tokenizer goldens (needs models/, see setup-model.sh)
#   scripts/golden/regen.sh --skip-model only the synthetic vocabularies
#
# The first run builds llama.cpp from source inside `pip install llama-cpp-python`: about 25
# minutes on 2 cores. Later runs reuse the environment and take seconds.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv="$root/.venv-bench"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import llama_cpp, gguf" 2>/dev/null; then
  echo "regen: installing llama-cpp-python and gguf into $venv (builds llama.cpp; slow)"
  "$venv/bin/pip" install --quiet llama-cpp-python gguf
fi

"$venv/bin/python" "$here/make_tokenizer_golden.py" "$@"
