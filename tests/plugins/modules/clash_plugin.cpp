// A plugin that registers a new kind and then one vsynth has built in (core.select): refused
// whole, so `test.fresh` must not appear either.
#include <memory>

#include "graph/plugin.h"
#include "graph/stage.h"

namespace {

using namespace vsynth;

class Pass : public graph::SyncStage {
 public:
  graph::Port process(graph::Item&) override { return 0; }
};

graph::Contract contract(const char* kind) {
  graph::Contract c;
  c.kind = kind;
  c.summary = "passes items on";
  c.ports = {{"ok", "always", false}};
  return c;
}

void register_clash(graph::Registry& registry) {
  for (const char* kind : {"test.fresh", "core.select"}) {
    registry.add_stage(contract(kind),
                       [](const graph::StageContext&) { return std::make_unique<Pass>(); });
  }
}

}  // namespace

VSYNTH_PLUGIN(register_clash);
