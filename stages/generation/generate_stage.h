// generate.llm: asks a model for code. Assembles the prompt from the item (prompt.h), prefills
// it once, samples `n_candidates` continuations from forks of that sequence (each with its own
// seed and any decoding hooks), and records them in the `candidates` facet.
//
//   resources:
//     coder: { use: model.gguf }
//   stages:
//     generate: { use: generate.llm, with: { model: coder, max_new_tokens: 256,
//                                             temperature: 0.2, n_candidates: 1 } }
//
// Asynchronous: submit() queues the item for the stage's own worker thread(s), which drive the
// engine; graph threads never wait on a forward pass. With `workers: N`, N items decode at once
// (each on its own sequence; they share the model's compute threads).
//
// Prefix KV cache: when the model resource has `kv_pool_mb`, the prompt goes through
// Model::new_sequence_with_prefix, so only what follows its longest cached start is prefilled
// (a retry's prompt shares everything before its feedback, prompt.h); the record's `kv_pool`
// says how much was reused, or why it fell back to a plain prefill. `warmup: true` only
// prefills (publishing the prompt's blocks) and generates nothing.
//
// Retries (Item::attempt() > 1, after a back edge) sample hotter (temperature_for) and the
// prompt carries the latest feedback messages. Seeds derive from (seed, task id, attempt,
// candidate), so a run is reproducible whatever order items arrive in. Parameters: see
// generate_contract() (`vsynth stages generate.llm`).
//
// Per task: a record's optional /decode object (task_decode.h; its fields and limits in
// stages/facets/decode_fields.h: max_new_tokens, temperature, top_p, stop, seed, warmup,
// n_indent, single_line, max_predict_ms) is laid over these settings. Where a suggestion ends
// by its lines (n_indent, single_line, max_predict_ms, block_stop): line_stops.h. When the task has
// an observer (graph/observer.h, a served request), candidate 0's text is streamed to it and its
// cancellation ends every candidate within one step (finish "cancelled"; later candidates are
// not started).
//
// Provides: `candidates` (CandidatesFacet). Reads, when present: `anchor` (the cursor),
// `context` (its text, see prompt.h). Ports: `ok`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/item_workers.h"
#include "graph/stage.h"
#include "kernels/sampler/generator.h"
#include "stages/facets/candidates.h"
#include "stages/facets/hook.h"
#include "stages/generation/line_stops.h"
#include "stages/generation/model_resource.h"
#include "stages/generation/prompt.h"

namespace vsynth::stages::generation {

// The facet generate.llm provides and the hook interface it drives, shared with the
// capabilities that read or implement them (stages/facets).
using facets::Candidate;
using facets::CandidatesFacet;
using facets::DecodingHook;
using facets::HookContext;

struct GenerateSettings {
  kernels::GenerateOptions decode;           // sampler params, max_new_tokens, stop strings
  std::vector<std::string> completion_stop;  // added to decode.stop in complete mode
  PromptSettings prompt;
  int n_candidates = 1;
  double retry_temperature_step = 0.3;
  double max_temperature = 1.2;
  bool record_prompt = false;
  bool warmup = false;      // prefill the prompt (into the model's prefix cache) and stop
  LineStops lines;          // n_indent, single_line, max_predict_ms (line_stops.h)
  bool block_stop = false;  // no n_indent given: the cursor line's indentation (complete mode)
  GgufFimIds gguf_fim;      // the model file's FIM token ids (prompt.h)
};

class GenerateStage : public graph::AsyncStage {
 public:
  GenerateStage(std::shared_ptr<ModelResource> model,
                std::vector<std::shared_ptr<DecodingHook>> hooks, GenerateSettings settings,
                int workers, graph::Port ok);

  void submit(graph::ItemPtr item, graph::Completion done) override;

  // The work for one item, on the calling thread (what the workers run). Throws on failure.
  void generate(graph::Item& item);

  // A sequence holding the prompt evaluated: through the model's prefix cache when it has one
  // (recording the reuse in `facet`), falling back to a plain prefill when the cache fails.
  // Returns the last token's logits.
  std::vector<float> prefill(const std::vector<kernels::TokenId>& prompt,
                             std::unique_ptr<kernels::Sequence>& seq, CandidatesFacet& facet);

  // The temperature used on a given attempt (1-based).
  double temperature_for(int attempt) const;
  // The same from a given attempt-1 temperature (a task's /decode/temperature).
  double temperature_for(int attempt, double base) const;

 private:
  std::shared_ptr<ModelResource> model_;
  std::vector<std::shared_ptr<DecodingHook>> hooks_;
  GenerateSettings settings_;
  graph::Port ok_;
  graph::ItemWorkers workers_;  // last: stops before the members its work uses
};

std::unique_ptr<GenerateStage> make_generate_stage(const graph::StageContext& ctx);
graph::Contract generate_contract();

// The seed of one candidate: mixes the stage's seed, the task id, the attempt and the index.
uint64_t candidate_seed(uint64_t seed, std::string_view task_id, int attempt, int candidate);

}  // namespace vsynth::stages::generation
