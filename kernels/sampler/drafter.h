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

// Prompt lookup / n-gram drafting: find earlier occurrences of the context's last n tokens
// (n = 3, then 2, then 1), pick the one whose match extends furthest back (up to kMaxMatch
// tokens; the newest on ties) and propose what followed it there. Code repeats itself
// (identifiers, call patterns, boilerplate), so the continuation of an earlier match is often
// right, and more often the longer the match; prose rarely matches at n >= 2 and then costs
// nothing.
//
// Cost: an index of n-gram -> newest end position with a chain to the previous occurrence
// (hash chains, as in LZ77), updated incrementally as tokens are appended (O(1) per token and
// n) and unwound on rewind (O(removed tokens)); a lookup walks at most kMaxCandidates
// occurrences, each compared backwards over at most kMaxMatch tokens.
//
// Adaptation: a keep-rate estimate per match-length class (1, 2, 3, 4-5, 6-8, 9-15, 16+
// tokens), learnt from the context itself: every token appended (the prompt's and each accepted
// one) is a trial for the class of the match that would have predicted it, a hit when that
// match's continuation is the token (decayed counts, older trials weigh kDecay per trial; a
// class's estimate starts from the class below it, as two trials' worth, so a match longer than
// any seen so far is trusted as much as the shorter ones, not reset to the prior). So a
// repetitive prompt drafts long from the first step, a text that stops repeating stops drafting
// within a few tokens, and the estimate keeps learning while no draft is made (no probes). A
// draft of d tokens at rate a yields sum_{i<=d} a^i tokens for kVerifyCost[d] decodes' time; the
// drafter proposes the d <= max_tokens with the best ratio, and nothing when even that is below
// 1 (plain decoding is cheaper). observe() adds nothing: the accepted tokens come back as
// context and the first rejected one is replaced by the target's own token, which is the trial.
class NgramDrafter : public Drafter {
 public:
  static constexpr int kMaxN = 3;            // longest n-gram looked up
  static constexpr int kMaxCandidates = 32;  // occurrences compared per lookup
  static constexpr int kMaxMatch = 64;       // tokens compared backwards per occurrence
  static constexpr int kClasses = 7;         // match-length classes (match_class)
  static constexpr double kDecay = 0.9;      // weight of the previous estimate per trial
  // Time of one verification pass of k = 1 + draft tokens, in decode steps (the cost curve in
  // docs/performance.md, 2026-12-03: Gemma 3 270M Q4_K_M, 2 threads, contexts 512 and 4096,
  // after the multi-column K-quant kernels and the grouped Q8_0 rows, best of 9 rounds, k = 2 kept
  // at the median's 1.25 so a 20% keep rate still drafts nothing); an extra token costs about a
  // quarter of a decode (it was ~0.45 with the earlier kernels). Past the table each
  // token adds kVerifyCostStep.
  static constexpr double kVerifyCost[] = {1.0, 1.25, 1.45, 1.65, 1.9, 2.25, 2.6, 2.85};
  static constexpr double kVerifyCostStep = 0.3;

  // `prior_rate`: the keep rate assumed before any trial (weighs as two trials).
  explicit NgramDrafter(double prior_rate = 0.5);

  // Verification cost of k tokens (k >= 1) in decode steps.
  static double verify_cost(int k);
  // The draft length in [1, max_tokens] with the most expected tokens per decode-step of cost
  // at keep rate `rate`, and that ratio in `*gain`.
  static int best_length(double rate, int max_tokens, double* gain);
  // The class of a match of `length` tokens (1..kMaxMatch): 0..kClasses-1.
  static int match_class(int length);

  std::span<const TokenId> propose(std::span<const TokenId> context, int32_t max_tokens) override;
  void observe(int32_t drafted, int32_t accepted) override;
  void rewind(std::size_t length) override;

  // The match length behind the last non-empty proposal (0: none yet), for tests and traces.
  int last_match() const { return last_match_; }
  // The current keep-rate estimate of matches of `length` tokens.
  double rate(int length) const { return class_rate(match_class(length)); }

 private:
  struct Chains {
    std::unordered_map<uint64_t, int32_t> newest;  // n-gram key -> newest end position
    std::vector<int32_t> prev;  // [end position] the previous end of the same key, -1: none
  };
  struct Level {
    double hits = 0.0, trials = 0.0;  // decayed counts of this class's trials
  };
  struct Match {
    int32_t end = -1;  // the earlier occurrence's end: its continuation starts there
    int length = 0;    // tokens matched backwards
  };
  uint64_t key(std::size_t end, int n) const;  // the n tokens before `end` in tokens_
  void index_end(std::size_t end);             // n-grams ending at `end` (tokens_[end] exists)
  Match find(std::size_t end) const;           // best earlier match of the tokens before `end`
  void calibrate(TokenId next);                // a trial: does the match predict `next`?
  double class_rate(int c) const;              // the estimate, smoothed towards class c - 1

  std::vector<TokenId> tokens_;  // the context indexed so far
  Chains chains_[kMaxN + 1];     // [n], 1..kMaxN
  Level levels_[kClasses];
  std::vector<TokenId> draft_;
  int last_match_ = 0;
  double prior_rate_ = 0.5;
};

}  // namespace vsynth::kernels
