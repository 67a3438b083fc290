#include "stages/core/register.h"

#include "stages/core/select.h"

namespace vsynth::stages::core {

void register_stages(graph::Registry& registry) {
  registry.add_stage(select_contract(),
                     [](const graph::StageContext& ctx) { return std::make_unique<Select>(ctx); });
}

}  // namespace vsynth::stages::core
