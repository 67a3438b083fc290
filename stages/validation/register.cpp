#include "stages/validation/register.h"

#include "stages/validation/sandbox_pool.h"
#include "stages/validation/validate_stage.h"

namespace vsynth::stages::validation {

void register_stages(graph::Registry& registry) {
  registry.add_resource(sandbox_contract(), make_sandbox_pool);
  registry.add_stage(validate_contract(), make_validate_stage);
}

}  // namespace vsynth::stages::validation
