// The `candidates` facet: what generate.llm produced for an item on its latest attempt, read
// by constrain.z3 (proves each candidate's `code`) and validate.async (runs it). Every text is
// a view into the item's arena (written once, never copied again).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "graph/item.h"

namespace vsynth::stages::facets {

struct Candidate {
  std::string_view text;        // the model's output (cut before a stop string, EOG dropped)
  std::string_view completion;  // the part to insert: `text` (complete) or its code block
  std::string_view code;        // the whole program a validator runs (generation/answer_program.h)
  int32_t tokens = 0;           // generated tokens (rejected / rolled-back ones excluded)
  std::string finish;  // length | eog | stop | context | hook | hook_limit | masked | cancelled
  std::string finish_detail;  // the stop string or the hook's reason
  double logprob_sum = 0.0;   // sum of log p(token) under the model (nats)
  double decode_ms = 0.0;
  double tokens_per_s = 0.0;
  uint64_t seed = 0;
  double temperature = 0.0;
  int32_t rejections = 0;  // hook verdicts
  int32_t rollbacks = 0;
  // The budget cut an unfinished text and a hook (trimmed_by) dropped its last `trimmed` tokens
  // (kernels::MaskHook::complete_prefix); 0: not trimmed.
  int32_t trimmed = 0;
  std::string trimmed_by;
  // Speculative decoding (kernels/sampler/generator.h): the drafter ("" when off), tokens
  // drafted, drafted tokens kept, verification passes; why it fell back to plain decoding.
  std::string drafter;
  int32_t drafted = 0;
  int32_t accepted = 0;
  int32_t verify_steps = 0;
  std::string speculation_fallback;
};

class CandidatesFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "candidates";

  std::vector<Candidate> candidates;
  std::string_view prompt;  // as the model saw it (special tokens spelled out)
  std::string mode;         // complete | instruct
  std::string format;       // prefix | fim | gemma | chatml | llama3 | llama2
  int32_t prompt_tokens = 0;
  double prefill_ms = 0.0;
  int attempt = 1;
  bool record_prompt = false;  // include `prompt` in to_json
  // Prefix KV cache (model.gguf `kv_pool_mb`): whether the prompt went through it, how many of
  // its tokens came from cached blocks, and why it fell back to a plain prefill (empty: it did
  // not). These depend on what was evaluated before (other tasks, earlier attempts).
  bool kv_pool = false;
  int32_t cached_tokens = 0;
  std::string kv_pool_fallback;
  // How the code after the cursor reached the prompt: fim (the model's fill-in-the-middle
  // tokens), above (no FIM tokens: the rest of the enclosing unit shown above the code),
  // dropped (not used), none (no code after the cursor). Empty: not a completion.
  std::string suffix;
  int32_t n_indent = 0;      // the n_indent stop in force (0: none)
  int32_t packed_files = 0;  // task files packed with the FIM file separator
  bool warmup = false;       // the prompt was only prefilled (generate.llm `warmup`): no candidates

  // The most likely candidate (highest mean logprob per token), or nullptr when empty.
  const Candidate* best() const;

  // {mode, format, attempt, prompt_tokens, prefill_ms, [suffix], [n_indent], [packed_files],
  // [warmed_tokens], [kv_pool: {cached_tokens, prompt_tokens, hit, [fallback]}], [prompt],
  // candidates: [{code, text, completion (when it differs from text), tokens, finish,
  // finish_detail, logprob_sum, decode_ms, tokens_per_s, seed, temperature, rejections, rollbacks,
  // trimmed: {by, tokens} when trimmed, speculation: {drafter, drafted, accepted, verify_steps,
  // fallback} when a drafter ran}]}
  nlohmann::json to_json() const override;
};

}  // namespace vsynth::stages::facets
