// Every capability's stages and resources, registered explicitly.
#pragma once

#include "graph/registry.h"

namespace vsynth::stages {
void register_all(graph::Registry& registry);
}  // namespace vsynth::stages
