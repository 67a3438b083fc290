#!/usr/bin/env bash
# ctest's test_python: pytest on tests/python with the module of this build first on sys.path.
#   run_pytest.sh SOURCE_DIR MODULE_DIR VSYNTH_BIN [pytest args...]
set -euo pipefail
src=$1 module_dir=$2 bin=$3
shift 3
python="$src/.venv-python/bin/python"
if [ ! -x "$python" ] || ! "$python" -c 'import pytest' 2>/dev/null; then
  echo "test_python: no $src/.venv-python with pytest; run scripts/setup-python-venv.sh" \
    "(scripts/setup.sh does)" >&2
  [ "${VSYNTH_ALLOW_MISSING_MODEL:-0}" = 1 ] && exit 77
  exit 1
fi
export PYTHONPATH="$module_dir${PYTHONPATH:+:$PYTHONPATH}" VSYNTH_BIN="$bin" VSYNTH_SOURCE_DIR="$src"
exec "$python" -m pytest -q -p no:cacheprovider "$src/tests/python" "$@"
