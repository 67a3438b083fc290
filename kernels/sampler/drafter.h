// Drafters for speculative decoding: cheap guesses of the next few tokens, which the decoding
// loop (kernels/sampler/generator.h) verifies in one multi-token forward pass of the target
// model. A guess is never trusted: the loop keeps a drafted token only where the target's own
// sampler picks it, so a drafter decides the speed, never the output.
//
//   NgramDrafter d;
//   std::span<const TokenId> draft = d.propose(context, 4);  // context: prompt + accepted
//   ... verify, accept the first k ...
//   d.observe(draft.size(), k);                             // adapts the next draft's length
//   d.rewind(kept_length);                                  // the context was cut back
//
// One drafter serves one generation at a time, on one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/tokenizer/vocab.h"

namespace vsynth::kernels {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to `max_tokens` tokens guessed to follow `context` (the prompt and every accepted token,
  // the newest last); empty when there is no good guess. `context` must extend the context of
  // the previous call (after any rewind) by appending; the returned view stays valid until the
  // next call on this drafter.
  virtual std::span<const TokenId> propose(std::span<const TokenId> context,
                                           int32_t max_tokens) = 0;
  // The loop kept the first `accepted` of the `drafted` tokens of the last proposal.
  virtual void observe(int32_t drafted, int32_t accepted) = 0;
  // The context was cut back to its first `length` tokens (a hook's rollback); 0 forgets it all
  // (a new generation).
  virtual void rewind(std::size_t length) = 0;
};

enum class DrafterKind {
  None,   // plain decoding
  Ngram,  // prompt lookup (NgramDrafter)
  Model,  // a smaller model with the same vocabulary (ModelDrafter,
          // kernels/sampler/model_drafter.h)
  Self,   // the target's self-draft: its first layers and frequent tokens (ModelDrafter too)
};
const char* to_string(DrafterKind k);
// "none" / "ngram" / "model" / "self"; nullopt for anything else.
std::optional<DrafterKind> parse_drafter_kind(std::string_view name);

struct DraftModel;  // kernels/sampler/model_drafter.h
// A new drafter of that kind; nullptr for None. Model and Self draft with `draft` (built once,
// shared by every generation: DraftModel::separate / DraftModel::self); std::invalid_argument
// when they get none.
std::unique_ptr<Drafter> make_drafter(DrafterKind kind,
                                      std::shared_ptr<const DraftModel> draft = nullptr);

// Prompt lookup / n-gram drafting: find the most recent earlier occurrence of the context's
// last n tokens (n = 3, then 2, then 1) and propose what followed it there. Code repeats itself
// (identifiers, call patterns, boilerplate), so the continuation of an earlier match is often
// right; prose rarely matches at n >= 2 and then costs nothing.
//
// Cost: an index of n-gram -> newest end position with a chain to the previous occurrence
// (hash chains, as in LZ77), updated incrementally as tokens are appended (O(1) per token and
// n) and unwound on rewind (O(removed tokens)); a proposal is a few hash lookups plus the copy.
//
// Adaptation, from the loop's observe() calls: each n keeps an estimate of the chance that a
// drafted token is kept (hits over trials, a geometric model: a draft of d with a kept makes
// a + 1 trials, or d when all were kept; older drafts weigh less by kDecay per draft). A draft
// of d tokens then yields sum_{i<=d} rate^i tokens for kVerifyCost[d] decodes' time; the drafter
// proposes the d <= max_tokens with the best ratio, and nothing when even that is below 1 (plain
// decoding is cheaper) except one 1-token probe per kProbeEvery matches, to notice when the
// text starts repeating.
class NgramDrafter : public Drafter {
 public:
  static constexpr int kMaxN = 3;        // longest n-gram matched
  static constexpr double kDecay = 0.8;  // weight of the previous estimate per observed draft
  static constexpr int kProbeEvery = 8;  // matches of a paused n between two probes
  // Time of one verification pass of k = 1 + draft tokens, in decode steps (the cost curve in
  // docs/performance.md, 2026-12-03: Gemma 3 270M Q4_K_M, 2 threads, contexts 512 and 4096,
  // after the multi-column K-quant kernels and the grouped Q8_0 rows, best of 9 rounds, k = 2 kept at
  // the median's 1.25 so a 20% keep rate still drafts nothing); an extra token costs about a
  // quarter of a decode (it was ~0.45 with the earlier kernels). Past the table each
  // token adds kVerifyCostStep.
  static constexpr double kVerifyCost[] = {1.0, 1.25, 1.45, 1.65, 1.9, 2.25, 2.6, 2.85};
  static constexpr double kVerifyCostStep = 0.3;

  // `prior_rate`: the keep rate assumed before any draft was observed (weighs as two tokens).
  explicit NgramDrafter(double prior_rate = 0.5) {
    for (Level& lv : levels_) lv.hits = 2.0 * prior_rate;
    prior_rate_ = prior_rate;
  }

  // Verification cost of k tokens (k >= 1) in decode steps.
  static double verify_cost(int k);
  // The draft length in [1, max_tokens] with the most expected tokens per decode-step of cost
  // at keep rate `rate`, and that ratio in `*gain`.
  static int best_length(double rate, int max_tokens, double* gain);

  std::span<const TokenId> propose(std::span<const TokenId> context, int32_t max_tokens) override;
  void observe(int32_t drafted, int32_t accepted) override;
  void rewind(std::size_t length) override;

  // The n of the last non-empty proposal (0: none yet), for tests and traces.
  int last_n() const { return last_n_; }
  // The current keep-rate estimate of n-grams of length n (1..kMaxN).
  double rate(int n) const { return levels_[n].hits / levels_[n].trials; }

 private:
  struct Level {
    std::unordered_map<uint64_t, int32_t> newest;  // n-gram key -> newest end position
    std::vector<int32_t> prev;        // [end position] the previous end of the same key, -1: none
    double hits = 1.0, trials = 2.0;  // decayed counts, from the prior
    int32_t skipped = 0;              // matches not drafted while paused
  };
  uint64_t key(std::size_t end, int n) const;  // the n tokens before `end` in tokens_
  void index_end(std::size_t end);             // n-grams ending at `end` (tokens_[end] exists)
  int32_t find(std::size_t end, int n) const;  // newest earlier end matching, -1: none

  std::vector<TokenId> tokens_;  // the context indexed so far
  Level levels_[kMaxN + 1];      // [n], 1..kMaxN
  std::vector<TokenId> draft_;
  int last_n_ = 0;
  int pending_n_ = 0;  // the n of the proposal awaiting observe(), 0: none
  double prior_rate_ = 0.5;
};

}  // namespace vsynth::kernels
