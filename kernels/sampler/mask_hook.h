// MaskHook: code that runs inside the decoding loop of one sequence (a constraint checker, a
// grammar, a banned-prefix list). The loop (kernels/sampler/generator.h) calls it at every step:
//
//   before_sample(view, mask)        restrict the next token: mask.ban(t), mask.allow_only({...})
//   after_sample(view, token, piece) judge the token the sampler picked, before it is committed:
//       accept()             keep it;
//       reject(why)          ban it at this position and sample again from the same logits;
//       rollback(P, T, why)  drop every generated token from position P on (P <= the current
//                            position), ban token T at position P, and continue from there:
//                            the loop rolls the engine's KV cache back (no re-prefill);
//       stop(why)            end the generation here (finish reason "hook").
//   on_rollback(P)           the loop kept only the first P generated tokens (because of this
//                            hook or another one): drop any incremental state past P.
//   complete_prefix(view)    the token budget ended the generation (finish reason length or
//                            context) in the middle of something: the generated tokens to keep
//                            so that the output ends where it was complete (a grammar hook: the
//                            longest prefix that parses as a whole program, the way an IDE
//                            completion drops a half-written statement), or nullopt for no
//                            opinion. With several opinions the shortest wins; the loop drops
//                            the tail (Generation::trimmed), rolls the sequence back and calls
//                            on_rollback(kept). Never asked after EOG, a stop string or a stop.
//
// Positions count generated tokens: 0 is the first token after the prompt. Bans accumulate at
// a position across retries and are forgotten when the loop rolls back before that position
// (the context changed). Reject and rollback verdicts are bounded per sequence
// (GenerateOptions::max_hook_retries) so a hook cannot loop forever.
//
// One hook object serves one sequence, driven by one thread; it needs no locks.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "kernels/sampler/sampler.h"
#include "kernels/tokenizer/tokenizer.h"

namespace vsynth::kernels {

// The sequence as a hook sees it. Views are valid for the duration of the call.
struct DecodeView {
  std::span<const TokenId> prompt;     // the prompt's tokens (BOS included)
  std::span<const TokenId> generated;  // accepted tokens so far
  // Their text: the tokens' pieces concatenated (control tokens render as nothing). It may end
  // inside a UTF-8 sequence while a character is spelled as byte tokens.
  std::string_view text;
  // token_ends[i]: byte offset in `text` where generated token i ends.
  std::span<const std::size_t> token_ends;
  const Tokenizer* tokenizer = nullptr;
};

struct HookVerdict {
  enum class Kind { Accept, Reject, Rollback, Stop };
  Kind kind = Kind::Accept;
  std::size_t position = 0;  // Rollback: generated tokens kept
  TokenId ban = kNoToken;    // Rollback: banned at `position` (kNoToken: none)
  std::string reason;        // for traces and the finish detail

  static HookVerdict accept() { return {}; }
  static HookVerdict reject(std::string why) { return {Kind::Reject, 0, kNoToken, std::move(why)}; }
  static HookVerdict rollback(std::size_t position, TokenId ban, std::string why) {
    return {Kind::Rollback, position, ban, std::move(why)};
  }
  static HookVerdict stop(std::string why) { return {Kind::Stop, 0, kNoToken, std::move(why)}; }
};

// A hook's answer to complete_prefix: keep the first `keep` generated tokens; `by` names the
// hook for the record (e.g. "grammar").
struct PrefixKeep {
  std::size_t keep = 0;
  std::string by;
};

class MaskHook {
 public:
  virtual ~MaskHook() = default;
  virtual void before_sample(const DecodeView& view, TokenMask& mask) {
    (void)view;
    (void)mask;
  }
  virtual HookVerdict after_sample(const DecodeView& view, TokenId token, std::string_view piece) {
    (void)view;
    (void)token;
    (void)piece;
    return HookVerdict::accept();
  }
  virtual void on_rollback(std::size_t kept) { (void)kept; }
  virtual std::optional<PrefixKeep> complete_prefix(const DecodeView& view) {
    (void)view;
    return std::nullopt;
  }
};

// A hook that ends its sequence at the first sampled token with `why` (finish reason "hook"):
// what a hook resource hands out for a candidate it cannot serve (an unsupported language, a
// hook object that could not be made), so that candidate ends saying why and the run goes on.
class StopHook final : public MaskHook {
 public:
  explicit StopHook(std::string why) : why_(std::move(why)) {}
  HookVerdict after_sample(const DecodeView&, TokenId, std::string_view) override {
    return HookVerdict::stop(why_);
  }

 private:
  std::string why_;
};

}  // namespace vsynth::kernels
