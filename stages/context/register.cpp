#include "stages/context/register.h"

#include "stages/context/dedup_stage.h"
#include "stages/context/deps_stage.h"
#include "stages/context/prune_stage.h"
#include "stages/context/summarize_stage.h"

namespace vsynth::stages::context {

void register_stages(graph::Registry& registry) {
  registry.add_stage(summarize_contract(), [](const graph::StageContext& ctx) {
    return std::make_unique<SummarizeStage>(ctx);
  });
  registry.add_stage(deps_contract(), [](const graph::StageContext& ctx) {
    return std::make_unique<DepsStage>(ctx);
  });
  registry.add_stage(dedup_contract(), [](const graph::StageContext& ctx) {
    return std::make_unique<DedupStage>(ctx);
  });
  registry.add_stage(prune_contract(), [](const graph::StageContext& ctx) {
    return std::make_unique<PruneStage>(ctx);
  });
}

}  // namespace vsynth::stages::context
