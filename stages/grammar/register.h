#pragma once

#include "graph/registry.h"

namespace vsynth::stages::grammar {

void register_stages(graph::Registry& registry);

}  // namespace vsynth::stages::grammar
