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
if [ ! -x "$venv/bin/python" ]; then
  echo "setup-python-venv: making $venv from $python ($want_version)"
  "$python" -m venv "$venv"
fi
missing=0
while read -r line; do
  case "$line" in ''|\#*) continue ;; esac
  name=${line%%==*}
  want=${line#*==}
  have=$("$venv/bin/python" -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p' || true)
  [ "$have" = "$want" ] || missing=1
done < "$req"
if [ "$missing" = 1 ]; then
  echo "setup-python-venv: installing $(grep -v '^#' "$req" | tr '\n' ' ')"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
else
  echo "setup-python-venv: $venv has every pin of tests/python/requirements.txt"
fi
