// context.summarize: the cursor file's units with their three forms (full, signature, name),
// signatures per language (summarize.h), and the in-file reasons (context_units.h): the
// `context_units` facet the other context stages work on. Optional in a pipeline: the first
// context stage builds the candidates with default options when no summarize ran.
//
//   stages:
//     summarize: { use: context.summarize, with: { doc_line: true } }
//
// Requires: `anchor` (ast.anchor). Provides: `context_units`. Ports: `ok`.
#pragma once

#include "graph/stage.h"
#include "stages/context/unit_extract.h"

namespace vsynth::stages::context {

class SummarizeStage : public graph::SyncStage {
 public:
  explicit SummarizeStage(const graph::StageContext& ctx);
  graph::Port process(graph::Item& item) override;

 private:
  ExtractOptions options_;
  graph::Port ok_;
};

graph::Contract summarize_contract();

}  // namespace vsynth::stages::context
