#pragma once

#include "graph/registry.h"

namespace vsynth::stages::core {
// Registers core.select.
void register_stages(graph::Registry& registry);
}  // namespace vsynth::stages::core
