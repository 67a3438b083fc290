#include "stages/context/summarize_stage.h"

#include "stages/context/context_units.h"
#include "stages/facets/task_file.h"

namespace vsynth::stages::context {

SummarizeStage::SummarizeStage(const graph::StageContext& ctx)
    : options_{ctx.params.boolean("doc_line")}, ok_(ctx.port("ok")) {}

graph::Port SummarizeStage::process(graph::Item& item) {
  if (facets::anonymous_buffer(item)) return ok_;  // no anchor, no units: nothing to do
  if (item.find<ContextUnitsFacet>()) return ok_;  // a stage before this one built them
  ensure_candidates(item, options_);
  return ok_;
}

graph::Contract summarize_contract() {
  graph::Contract c;
  c.kind = "context.summarize";
  c.summary =
      "Splits the anchored file into units (functions, classes, fields, imports...) with "
      "full, signature and name forms, and ranks them by relation to the cursor";
  c.concurrency = graph::Concurrency::unlimited();  // no shared state
  c.requires_facets = {"anchor"};
  c.provides_facets = {"context_units"};
  c.ports = {{"ok", "candidates built", false}};
  c.params = {graph::P::boolean(
      "doc_line", true, "signature forms carry the first line of the docstring / doc comment")};
  return c;
}

}  // namespace vsynth::stages::context
