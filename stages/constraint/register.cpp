#include "stages/constraint/register.h"

#include "stages/constraint/constrain_stage.h"
#include "stages/constraint/forward_hook.h"

namespace vsynth::stages::constraint {

void register_stages(graph::Registry& registry) {
  registry.add_resource(forward_hook_contract(), make_forward_hook_resource);
  registry.add_stage(constrain_contract(), make_constrain_stage);
}

}  // namespace vsynth::stages::constraint
