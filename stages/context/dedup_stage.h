// context.dedup: removes near-duplicate candidates (dedup.h) before context.prune spends
// budget on them.
//
//   stages:
//     dedup: { use: context.dedup, with: { threshold: 0.85, shingle_size: 4, min_tokens: 12 } }
//
// Requires: `context_units` (the candidates context.summarize or context.deps built: dedup
// never builds them). Provides: `context_units` (duplicates marked removed and listed in the
// facet's JSON). Ports: `ok`.
#pragma once

#include "graph/stage.h"
#include "stages/context/dedup.h"

namespace vsynth::stages::context {

class DedupStage : public graph::SyncStage {
 public:
  explicit DedupStage(const graph::StageContext& ctx);
  graph::Port process(graph::Item& item) override;

 private:
  DedupOptions options_;
  graph::Port ok_;
};

graph::Contract dedup_contract();

}  // namespace vsynth::stages::context
