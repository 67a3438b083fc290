#pragma once

#include "graph/registry.h"

namespace vsynth::stages::io {
// Registers io.jsonl_source and io.jsonl_sink.
void register_stages(graph::Registry& registry);
}  // namespace vsynth::stages::io
