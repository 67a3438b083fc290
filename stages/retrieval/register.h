#pragma once

#include "graph/registry.h"

namespace vsynth::stages::retrieval {
// Registers the retrieval capability's stage and resource kinds.
void register_stages(graph::Registry& registry);
}  // namespace vsynth::stages::retrieval
