#!/usr/bin/env bash
# Sets everything up on a fresh Debian machine and runs the main job: the default pipeline on
# the shipped example tasks with the default model. Results go to results/main.jsonl (replaced
# on each run), a Chrome trace to results/main.trace.json.
#
#   scripts/run-main.sh                 # setup + build + run
#   PIPELINE=pipelines/x.yaml TASKS=examples/tasks/y.jsonl scripts/run-main.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# Only what the main job needs: no test venvs or golden models, and of the build only the vsynth
# binary and the libraries under it (not the 400-odd test and benchmark targets).
"$root/scripts/setup.sh" --main
VSYNTH_BUILD_TARGETS=vsynth "$root/scripts/build.sh" build -DCMAKE_BUILD_TYPE=RelWithDebInfo

pipeline=${PIPELINE:-pipelines/synthesize.yaml}
tasks=${TASKS:-examples/tasks/main.jsonl}
mkdir -p results
export VSYNTH_MODEL=${VSYNTH_MODEL:-$root/models/gemma-3-270m-q4_k_m.gguf}
echo "== vsynth run $pipeline --input $tasks --output results/main.jsonl"
build/tools/vsynth/vsynth run "$pipeline" --input "$tasks" --output results/main.jsonl \
  --overwrite --trace results/main.trace.json
