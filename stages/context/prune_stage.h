// context.prune: fills a token budget with the code that matters around the cursor
// (prune.h) and writes the `context` facet (stages/facets/context.h) that generate.llm puts in
// its prompt. Tokens are counted by a TokenCounter (token_counter.h): the estimate, a GGUF
// file's tokenizer, or the tokenizer of a `model` resource (facets::ModelResource). Its
// parameters are documented in prune_contract() (`vsynth stages context.prune`).
//
//   stages:
//     prune: { use: context.prune, with: { budget_tokens: 1024 } }   # the estimate
//     # exact counts with the tokenizer of the model the pipeline generates with:
//   resources:
//     coder: { use: model.gguf, with: { path: models/gemma-3-270m-q4_k_m.gguf } }
//   stages:
//     prune: { use: context.prune, with: { budget_tokens: 1024, model: coder } }
//
// Works on the `context_units` facet when earlier context stages built it (summarize, deps,
// dedup), else builds the cursor file's candidates itself.
#pragma once

#include <memory>
#include <string>

#include "graph/stage.h"
#include "stages/context/prune.h"
#include "stages/context/token_counter.h"
#include "stages/facets/context.h"

namespace vsynth::stages::context {

using facets::ContextFacet;

class PruneStage : public graph::SyncStage {
 public:
  explicit PruneStage(const graph::StageContext& ctx);
  graph::Port process(graph::Item& item) override;

 private:
  PruneOptions options_;
  std::shared_ptr<const TokenCounter> counter_;
  std::string edits_field_;
  graph::Port ok_;
};

graph::Contract prune_contract();

}  // namespace vsynth::stages::context
