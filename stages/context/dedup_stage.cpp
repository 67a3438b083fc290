#include "stages/context/dedup_stage.h"

#include "stages/context/context_units.h"
#include "stages/facets/task_file.h"

namespace vsynth::stages::context {

DedupStage::DedupStage(const graph::StageContext& ctx)
    : options_{ctx.params.number("threshold"),
               static_cast<uint32_t>(ctx.params.integer("shingle_size")),
               static_cast<uint32_t>(ctx.params.integer("min_tokens"))},
      ok_(ctx.port("ok")) {}

graph::Port DedupStage::process(graph::Item& item) {
  if (facets::anonymous_buffer(item)) return ok_;  // no anchor, no units: nothing to do
  // Built by a stage before this one (the contract requires them): dedup only marks.
  remove_duplicates(item.get<ContextUnitsFacet>(), options_);
  return ok_;
}

graph::Contract dedup_contract() {
  graph::Contract c;
  c.kind = "context.dedup";
  c.summary =
      "Removes near-duplicate candidate units (Jaccard of AST-normalised token shingles, "
      "call receivers stripped)";
  c.concurrency = graph::Concurrency::unlimited();
  c.requires_facets = {"context_units"};
  c.provides_facets = {"context_units"};
  c.ports = {{"ok", "duplicates marked removed", false}};
  c.params = {
      graph::P::number("threshold", 0.85, 0.01, 1.0,
                       "Jaccard similarity of shingle sets at or above which two units are "
                       "duplicates"),
      graph::P::integer("shingle_size", 4, 1, 32, "tokens per shingle"),
      graph::P::integer("min_tokens", 12, 1, 100000,
                        "units with fewer normalised tokens are never called duplicates"),
  };
  return c;
}

}  // namespace vsynth::stages::context
