#pragma once

#include "graph/registry.h"

namespace vsynth::stages::generation {
// Registers the model.gguf resource and the generate.llm stage.
void register_stages(graph::Registry& registry);
}  // namespace vsynth::stages::generation
