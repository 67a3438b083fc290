#include "stages/retrieval/register.h"

#include "stages/retrieval/index_resource.h"
#include "stages/retrieval/search_stage.h"

namespace vsynth::stages::retrieval {

void register_stages(graph::Registry& registry) {
  registry.add_resource(index_contract(), [](const graph::ResourceContext& ctx) {
    return std::make_shared<IndexResource>(index_settings(ctx.name, ctx.params));
  });
  registry.add_stage(search_contract(), [](const graph::StageContext& ctx) {
    return std::make_unique<SearchStage>(ctx);
  });
}

}  // namespace vsynth::stages::retrieval
