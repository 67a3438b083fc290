// Token counting for context budgets: one interface, two implementations.
//
//   EstimateCounter   tokenizer-agnostic and fast (~1 GB/s): a per-line estimate calibrated on
//                     source code against the default model's SentencePiece vocabulary (Gemma 3;
//                     see docs/performance.md, "Code context"). Additive over lines, so the
//                     cost of a prompt is the sum of its pieces' costs.
//   TokenizerCounter  the engine's own tokenizer (kernels/tokenizer), loaded from a GGUF file's
//                     tokenizer.ggml.* metadata; exact for that model. Built from a path
//                     (`tokenizer: gguf` in context.prune), or from the tokenizer of the
//                     model a `model` resource loaded (context.prune's `model`).
//
// Counts never include BOS/EOS: a context is a piece of a prompt, not a whole one.
// Implementations are immutable and safe to call from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace vsynth::kernels {
class Tokenizer;
}

namespace vsynth::stages::context {

class TokenCounter {
 public:
  virtual ~TokenCounter() = default;
  virtual uint32_t count(std::string_view text) const = 0;
  // "estimate", "gguf:<path>" or "model:<path>": what the results file reports.
  virtual std::string describe() const = 0;
};

class EstimateCounter final : public TokenCounter {
 public:
  uint32_t count(std::string_view text) const override;
  std::string describe() const override { return "estimate"; }
};

class TokenizerCounter final : public TokenCounter {
 public:
  TokenizerCounter(std::shared_ptr<const kernels::Tokenizer> tokenizer, std::string source);
  uint32_t count(std::string_view text) const override;
  std::string describe() const override { return source_; }
  const kernels::Tokenizer& tokenizer() const { return *tokenizer_; }

  // The tokenizer of the GGUF file at `path` (only its metadata is read). Loaded once per
  // path per process and shared. Throws ContextError naming the path when the file cannot be
  // opened or holds no usable vocabulary.
  static std::shared_ptr<const TokenizerCounter> from_gguf(const std::string& path);

 private:
  std::shared_ptr<const kernels::Tokenizer> tokenizer_;
  std::string source_;
};

// The shared estimate counter.
std::shared_ptr<const TokenCounter> estimate_counter();

}  // namespace vsynth::stages::context
