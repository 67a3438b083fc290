// Which stages one item skips: a server request that brings no file cannot be anchored, so the
// stages that read the file (and every stage that needs what only they produce) are skipped
// for that item while the pipeline's other items run them. The list goes into Task::bypass.
#pragma once

#include <string>
#include <vector>

#include "graph/validate.h"

namespace vsynth::graph {

struct BypassPlan {
  std::vector<std::string> stages;  // in pipeline order; empty when `error` is set
  std::string error;                // why the roots cannot be skipped, else empty
};

// The roots, plus every stage that requires a facet which no other stage left to run provides
// (a stage that requires and provides the same facet does not count as its own provider).
// Refused (error) when a root names no stage, or when a stage to skip has a failure port as
// its default port (skipping it would pass as success what the stage may fail).
BypassPlan bypass_closure(const ValidatedPipeline& pipeline, const std::vector<std::string>& roots);

}  // namespace vsynth::graph
