// A working plugin for tests/plugins: stage `test.tag` (adds a `tag` facet holding its
// `label`) and resource `test.counter` (interface `counter`). Built twice: as
// test_plugin_good, and as test_plugin_twin, another file registering the same kinds.
#include <memory>
#include <string>

#include "graph/plugin.h"
#include "graph/stage.h"

namespace {

using namespace vsynth;

struct Tag : graph::Facet {
  static constexpr std::string_view kName = "tag";
  std::string label;
  nlohmann::json to_json() const override { return label; }
};

class TagStage : public graph::SyncStage {
 public:
  explicit TagStage(const graph::StageContext& ctx) : label_(ctx.params.string("label")) {}
  graph::Port process(graph::Item& item) override {
    item.emplace<Tag>().label = label_;
    return 0;
  }

 private:
  std::string label_;
};

struct Counter : graph::Resource {};

void register_tag(graph::Registry& registry) {
  graph::Contract c;
  c.kind = "test.tag";
  c.summary = "Adds a `tag` facet (a test plugin's stage)";
  c.provides_facets = {"tag"};
  c.ports = {{"ok", "always", false}};
  c.params = {graph::P::string("label", "plugged", "the facet's text")};
  registry.add_stage(
      c, [](const graph::StageContext& ctx) { return std::make_unique<TagStage>(ctx); });
  registry.add_resource({"test.counter", "counter", "A test plugin's resource", {}},
                        [](const graph::ResourceContext&) { return std::make_shared<Counter>(); });
}

}  // namespace

VSYNTH_PLUGIN(register_tag);
