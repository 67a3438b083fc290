#include "stages/ast/register.h"

#include "stages/ast/anchor_stage.h"

namespace vsynth::stages::ast {

void register_stages(graph::Registry& registry) {
  registry.add_stage(anchor_contract(), [](const graph::StageContext& ctx) {
    return std::make_unique<AnchorStage>(ctx);
  });
}

}  // namespace vsynth::stages::ast
