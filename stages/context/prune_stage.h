// context.prune: fills a token budget with the code that matters around the cursor
// (prune.h) and writes the `context` facet (context_facet.h) a generation stage puts in its
// prompt.
//
//   stages:
//     prune: { use: context.prune, with: { budget_tokens: 1024 } }   # the estimate
//     # exact counts with the tokenizer of the model the pipeline generates with:
//   resources:
//     coder: { use: model.gguf, with: { path: models/gemma-3-270m-q4_k_m.gguf } }
//   stages:
//     prune: { use: context.prune, with: { budget_tokens: 1024, model: coder } }
//     # or with a GGUF file's tokenizer alone (no model loaded):
//     prune: { use: context.prune, with: { tokenizer: gguf, gguf_path: models/m.gguf } }
//
// `tokenizer` defaults to auto: the named model's tokenizer when `model` is given, else the
// estimate (token_counter.h). Naming a model with `tokenizer: estimate` or `gguf` is an error.
//
// Task fields: /edits (edits_field), the edit history, oldest first (edits.h):
//   [{"path": "a.py", "start_line": 10, "end_line": 12}]
// Works on the `candidates` facet when earlier context stages built it (summarize, deps,
// dedup), else builds the cursor file's candidates itself.
//
// Requires: `anchor`. Provides: `context`. Ports: `ok`.
#pragma once

#include <memory>
#include <string>

#include "graph/stage.h"
#include "stages/context/prune.h"
#include "stages/context/token_counter.h"

namespace vsynth::stages::context {

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
