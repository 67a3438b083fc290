#pragma once

#include "graph/registry.h"

namespace vsynth::stages::python {
// Registers the hook.python resource kind when this build has Python (VSYNTH_HAVE_PYTHON);
// without it nothing, so a pipeline naming hook.python gets the unknown-kind error.
void register_stages(graph::Registry& registry);
}  // namespace vsynth::stages::python
