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

# shellcheck source=lib/pinned-venv.sh
. "$here/lib/pinned-venv.sh"
pinned_venv setup-test-venv "$venv" "$req" "$python"
