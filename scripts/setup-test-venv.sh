#!/usr/bin/env bash
# Makes the test venv .venv-test (git-ignored) with the Python packages the serve tests drive
# `vsynth serve` with (tests/serve/requirements.txt: the official openai client, pinned).
# Idempotent: when every pin is already installed the script only says so.
#
# Environment: PYTHON (default python3) is the interpreter the venv is made from.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
venv="$root/.venv-test"
req="$root/tests/serve/requirements.txt"
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
  echo "setup-test-venv: making $venv"
  "$python" -m venv "$venv"
fi
# Every `name==version` line of the requirements, already installed?
missing=0
while read -r line; do
  case "$line" in ''|\#*) continue ;; esac
  name=${line%%==*}
  want=${line#*==}
  have=$("$venv/bin/python" -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p' || true)
  [ "$have" = "$want" ] || missing=1
done < "$req"
if [ "$missing" = 1 ]; then
  echo "setup-test-venv: installing $(grep -v '^#' "$req" | tr '\n' ' ')"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
else
  echo "setup-test-venv: $venv has every pin of tests/serve/requirements.txt"
fi
