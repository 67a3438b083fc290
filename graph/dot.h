// Graphviz DOT of a validated pipeline: stages as boxes (kind and concurrency), edges labelled
// with their port, back edges dashed with their max_attempts, `out` as the sink.
#pragma once

#include <string>

#include "graph/validate.h"

namespace vsynth::graph {
std::string to_dot(const ValidatedPipeline& p);
}  // namespace vsynth::graph
