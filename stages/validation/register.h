#pragma once

#include "graph/registry.h"

namespace vsynth::stages::validation {
// Registers validate.async and the sandbox.bwrap resource kind.
void register_stages(graph::Registry& registry);
}  // namespace vsynth::stages::validation
