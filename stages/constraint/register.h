#pragma once

#include "graph/registry.h"

namespace vsynth::stages::constraint {
// Registers constrain.z3 and the hook.z3_forward resource kind.
void register_stages(graph::Registry& registry);
}  // namespace vsynth::stages::constraint
