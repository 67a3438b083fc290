#pragma once

#include "graph/registry.h"

namespace vsynth::stages::context {
// Registers context.summarize, context.deps, context.dedup and context.prune.
void register_stages(graph::Registry& registry);
}  // namespace vsynth::stages::context
