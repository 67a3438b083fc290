#include "stages/python/register.h"

#if VSYNTH_HAVE_PYTHON
#include "stages/python/python_hook.h"
#endif

namespace vsynth::stages::python {

void register_stages([[maybe_unused]] graph::Registry& registry) {
#if VSYNTH_HAVE_PYTHON
  registry.add_resource(python_hook_contract(), make_python_hook_resource);
#endif
}

}  // namespace vsynth::stages::python
