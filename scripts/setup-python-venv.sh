#!/usr/bin/env bash
# Makes the Python test venv .venv-python (git-ignored) with tests/python/requirements.txt
# (pytest, numpy; pinned). ctest's test_python runs pytest from it against the module in the
# build folder, so the venv must come from the interpreter the module is built for:
# cmake/VsynthPython.cmake picks Debian's /usr/bin/python3, and so does this script (a python3
# on PATH may be pyenv's or conda's). Idempotent: when every pin is installed it only says so.
#
# Environment: PYTHON (default /usr/bin/python3, else python3) makes the venv.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
venv="$root/.venv-python"
req="$root/tests/python/requirements.txt"
default=python3
[ -x /usr/bin/python3 ] && default=/usr/bin/python3
python=${PYTHON:-$default}

want_version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ -x "$venv/bin/python" ]; then
  have_version=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$have_version" != "$want_version" ]; then
    echo "setup-python-venv: $venv is Python $have_version, $python is $want_version: remaking it"
    rm -rf "$venv"
  fi
fi
# shellcheck source=lib/pinned-venv.sh
. "$here/lib/pinned-venv.sh"
pinned_venv setup-python-venv "$venv" "$req" "$python"
