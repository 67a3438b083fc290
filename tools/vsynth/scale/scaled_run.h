// `vsynth run` as one rank of an MPI job (mpirun -np N vsynth run ...): every rank reads the
// input and runs the tasks whose key hashes to it into its own part, the ranks agree that all
// of them started before any runs, progress and summaries reach rank 0, and rank 0 merges the
// parts into the output.
#pragma once

#include "graph/registry.h"
#include "tools/vsynth/commands.h"
#include "tools/vsynth/scale/launch.h"

namespace vsynth::cli {

// The job's exit code, the same on every rank. In a build without MPI: a clear error.
int run_scaled(graph::Registry& registry, const RunArgs& args, const Launch& launch);

}  // namespace vsynth::cli
