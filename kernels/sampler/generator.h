// The decoding loop: sample, let the hooks judge, commit, decode, until EOG, a stop string, the
// token budget, the context limit or a hook ends it.
//
//   auto seq = model->new_sequence();
//   std::span<const float> logits = seq->prefill(prompt);
//   Generation g = generate(*seq, model->tokenizer(), logits, options, hooks);
//
// The sequence must already hold the prompt and `logits` must be its last row (so n candidates
// can share one prefill: fork the prefilled sequence and pass the same logits to each). On
// return the sequence holds the prompt and the accepted tokens (the last one not yet evaluated:
// ending a generation costs no wasted forward pass).
//
// Text: each accepted token's piece is appended to Generation::text, so the text of the first
// k tokens is text[0, token_ends[k-1]). A stop string cuts the text before its earliest match
// (the token that completed it stays in `tokens`). An EOG token ends the generation without
// being added. Streaming (on_text) never hands out a byte that a stop string may still claim
// or half of a UTF-8 character.
//
// Trimming: when the budget ends the generation (max_new_tokens or context_limit) the hooks are
// asked for the complete prefix (MaskHook::complete_prefix); the shortest answer below the
// generated length wins, the tail is dropped as a rollback would drop it (streamed bytes are
// retracted through on_retract, the sequence is rolled back, hooks get on_rollback) and the
// Generation says so (trimmed, trimmed_by, finish_detail); the finish reason stays. A trim the
// KV cache cannot roll back to (before Sequence::min_rollback_position()) is not made, and
// finish_detail says why.
//
// Speculation (GenerateOptions::speculation): a drafter (kernels/sampler/drafter.h) guesses the
// tokens after the newest accepted one; one prefill_all of [newest, draft...] yields the
// target's logits at every drafted position. The loop then runs exactly as without speculation,
// each step sampling from the row of the position it is at: while the sampled token equals the
// drafted one, the next row is already computed (no forward pass); at the first difference the
// sampled token stands (the target's own), the rest of the draft is rolled back and a new draft
// starts from it. Every token still goes through the hooks, the stop strings and streaming in
// order, and the sampler draws from the same logits with the same random stream, so the output
// is what plain decoding gives: greedy token for token, sampled in distribution (for a
// deterministic draft this is the speculative-sampling rule: the draft token x is kept with
// probability p(x), otherwise the token comes from p without x, renormalised).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/engine.h"
#include "kernels/sampler/drafter.h"
#include "kernels/sampler/mask_hook.h"
#include "kernels/sampler/sampler.h"
#include "kernels/sampler/stop.h"

namespace vsynth::kernels {

enum class FinishReason {
  Length,     // max_new_tokens reached
  Eog,        // the model ended its turn / the text (tokenizer.is_eog)
  Stop,       // a stop string matched
  Context,    // the sequence reached context_limit
  Hook,       // a hook said stop
  HookLimit,  // hooks rejected or rolled back more than max_hook_retries times
  Masked,     // the mask (hooks, bans) left no token to sample
  Cancelled,  // GenerateOptions::cancel was set (checked once per step)
};
const char* to_string(FinishReason r);

struct SpeculationOptions {
  DrafterKind drafter = DrafterKind::None;
  // Tokens drafted per verification at most (the drafter adapts below it); >= 1. Drafts never
  // run past max_new_tokens or GenerateOptions::context_limit; with context_limit 0 a draft
  // near the end of the model's context can make the verification pass throw where plain
  // decoding had a few tokens left, so set it to the context length (generate.llm and
  // `vsynth generate` do).
  int32_t max_draft = 4;
  // When set, used instead of `drafter` (tests, drafters built by the caller); it must serve
  // this generation alone. The loop rewinds it to an empty context first.
  Drafter* custom = nullptr;
  // The draft model of DrafterKind::Model and Self (built once, shared by every generation).
  std::shared_ptr<const DraftModel> draft = nullptr;
  // Consulted before each draft with max_draft: the tokens to draft now at most (0: decode this
  // step plainly). Under continuous batching a verification pass's rows cost as much as other
  // sequences' decode rows, so generate.llm passes Scheduler::suggested_max_draft here: drafts
  // shrink as the batch grows and stop at its draft_off_rows. Called on the generating thread;
  // null: max_draft always. The output does not depend on it (speculation never changes it).
  std::function<int32_t(int32_t max_draft)> draft_limit = nullptr;
  bool enabled() const { return custom != nullptr || drafter != DrafterKind::None; }
};

struct GenerateOptions {
  SamplerParams sampler;
  int32_t max_new_tokens = 256;
  std::vector<std::string> stop;  // stop strings; the text ends before the first match
  bool stop_at_eog = true;        // end on EOG tokens (otherwise they are plain tokens)
  int32_t context_limit = 0;      // stop when the sequence holds this many tokens; 0: none
  int32_t max_hook_retries = 64;  // reject + rollback verdicts allowed per generation
  // Streaming, called on the generating thread with text ready to show.
  std::function<void(std::string_view)> on_text;
  // A hook rolled back below text already streamed: the last `bytes` shown are void.
  std::function<void(std::size_t bytes)> on_retract;
  // Set by another thread (a client went away): the loop ends before its next step, within
  // one forward pass, with FinishReason::Cancelled. Null: never cancelled.
  const std::atomic<bool>* cancel = nullptr;
  SpeculationOptions speculation;
};

struct Generation {
  std::vector<TokenId> tokens;  // accepted tokens, EOG excluded
  std::string text;             // their text, cut before a stop string
  std::vector<std::size_t> token_ends;
  std::vector<float> logprobs;                 // per token, see Sample::logprob
  std::vector<std::vector<TokenLogprob>> top;  // per token when sampler.n_logprobs > 0
  double logprob_sum = 0.0;
  FinishReason finish = FinishReason::Length;
  std::string finish_detail;  // the stop string, the hook's reason, or the trim
  // The budget cut the text and a hook's complete_prefix dropped the unfinished tail: the
  // tokens dropped (0: none) and the hook that asked.
  int32_t trimmed = 0;
  std::string trimmed_by;
  int32_t rejections = 0;  // hook reject verdicts
  int32_t rollbacks = 0;   // hook rollback verdicts
  int32_t steps = 0;       // tokens sampled, rejected and rolled-back ones included
  double decode_ms = 0.0;  // wall time of the loop (forward passes, sampling, hooks)
  // Speculation: tokens drafted, drafted tokens kept, multi-token verification passes, and
  // single-token forward passes (decode calls, plain decoding's only kind).
  int32_t drafted = 0;
  int32_t accepted = 0;
  int32_t verify_steps = 0;
  int32_t decode_steps = 0;
  // Steps decoded without a draft because SpeculationOptions::draft_limit returned 0.
  int32_t undrafted_steps = 0;
  // Non-empty when the drafter failed and the loop went on with plain decoding: its error.
  std::string speculation_fallback;
};

// Throws EngineError from the engine, SamplerError for a bad mask or speculation.max_draft < 1,
// and std::runtime_error when a hook asks for a rollback before Sequence::min_rollback_position()
// or past the current position.
Generation generate(Sequence& seq, const Tokenizer& tokenizer, std::span<const float> logits,
                    const GenerateOptions& options, std::span<MaskHook* const> hooks = {});

}  // namespace vsynth::kernels
