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
};
const char* to_string(DrafterKind k);
// "none" / "ngram"; nullopt for anything else.
std::optional<DrafterKind> parse_drafter_kind(std::string_view name);
// A new drafter of that kind; nullptr for None.
std::unique_ptr<Drafter> make_drafter(DrafterKind kind);

// Prompt lookup / n-gram drafting: find the most recent earlier occurrence of the context's
// last n tokens (n = 3, then 2, then 1) and propose what followed it there. Code repeats itself
// (identifiers, call patterns, boilerplate), so the continuation of an earlier match is often
// right; prose rarely matches at n >= 2 and then costs nothing.
//
// Cost: an index of n-gram -> newest end position with a chain to the previous occurrence
// (hash chains, as in LZ77), updated incrementally as tokens are appended (O(1) per token and
// n) and unwound on rewind (O(removed tokens)); a proposal is a few hash lookups plus the copy.
//
// Adaptation, from the loop's observe() calls: each n keeps its own draft length (doubled
// after a fully accepted draft, cut to accepted + 1 after a partial one) and an exponentially
// weighted acceptance rate; an n whose rate falls under kMinRate stops drafting except for one
// probe in every kProbeEvery matches, so a context where matches mislead pays almost nothing.
class NgramDrafter : public Drafter {
 public:
  static constexpr int kMaxN = 3;             // longest n-gram matched
  static constexpr double kMinRate = 0.2;     // accepted / drafted below which an n pauses
  static constexpr int kProbeEvery = 8;       // matches of a paused n between two probes
  static constexpr double kRateWeight = 0.3;  // weight of the newest draft in the rate

  std::span<const TokenId> propose(std::span<const TokenId> context, int32_t max_tokens) override;
  void observe(int32_t drafted, int32_t accepted) override;
  void rewind(std::size_t length) override;

  // The n of the last non-empty proposal (0: none yet), for tests and traces.
  int last_n() const { return last_n_; }

 private:
  struct Level {
    std::unordered_map<uint64_t, int32_t> newest;  // n-gram key -> newest end position
    std::vector<int32_t> prev;  // [end position] the previous end of the same key, -1: none
    int32_t length = 0;         // adapted draft length; 0: not set yet (max_tokens)
    double rate = 0.5;          // recent accepted / drafted
    int32_t skipped = 0;        // matches not drafted while paused
  };
  uint64_t key(std::size_t end, int n) const;  // the n tokens before `end` in tokens_
  void index_end(std::size_t end);             // n-grams ending at `end` (tokens_[end] exists)
  int32_t find(std::size_t end, int n) const;  // newest earlier end matching, -1: none

  std::vector<TokenId> tokens_;  // the context indexed so far
  Level levels_[kMaxN + 1];      // [n], 1..kMaxN
  std::vector<TokenId> draft_;
  int last_n_ = 0;
  int pending_n_ = 0;  // the n of the proposal awaiting observe(), 0: none
};

}  // namespace vsynth::kernels
