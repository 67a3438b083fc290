#include "stages/generation/register.h"

#include "stages/generation/generate_stage.h"
#include "stages/generation/model_resource.h"

namespace vsynth::stages::generation {

void register_stages(graph::Registry& registry) {
  registry.add_resource(model_contract(), [](const graph::ResourceContext& ctx) {
    return load_model(model_settings(ctx.params));
  });
  registry.add_stage(generate_contract(),
                     [](const graph::StageContext& ctx) { return make_generate_stage(ctx); });
}

}  // namespace vsynth::stages::generation
