#pragma once

#include "graph/registry.h"

namespace vsynth::stages::ast {
// Registers ast.anchor.
void register_stages(graph::Registry& registry);
}  // namespace vsynth::stages::ast
