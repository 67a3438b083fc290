#!/usr/bin/env bash
# Creates .venv-plots/ (git-ignored) with the pinned plotting requirements
# (scripts/bench/requirements-plots.txt) for the benchmarks' plot scripts, e.g.
#
#   scripts/bench/setup-plots.sh
#   .venv-plots/bin/python scripts/bench/plot_completion.py bench_completion.json
#
# Benchmarks are not part of setup: scripts/setup.sh does not run this. Environment: PYTHON
# (default python3) makes the environment.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv="$root/.venv-plots"
python=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements-plots.txt"
"$venv/bin/python" -c "import matplotlib; print('setup-plots: matplotlib', matplotlib.__version__, 'in $venv')"
