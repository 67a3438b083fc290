// Draft-model drafting: a smaller model with the target's vocabulary (or the target's own
// self-draft, kernels/model/self_draft.h) greedily decodes the next few tokens on its own
// Sequence. Greedy keeps the draft a deterministic function of the context, so the decoding
// loop's exactness argument (kernels/sampler/generator.h) holds unchanged.
//
//   auto draft = DraftModel::separate(*target, "models/target.gguf", small, "models/small.gguf");
//   ModelDrafter d(draft);                 // one per generation; the DraftModel is shared
//   std::span<const TokenId> guess = d.propose(context, 4);
//
// Keeping the draft sequence in step: propose() keeps the longest prefix its sequence shares
// with the context (minus the last token, whose logits it needs), rolls back to it and prefills
// the rest (usually 1 or 2 tokens: the one the target chose and the bonus token). Where the KV
// cache cannot roll back that far (sliding windows: min_rollback_position) it starts a fresh
// sequence and prefills the whole context.
//
// Adaptation: one keep-rate estimate (decayed hits over geometric trials, as NgramDrafter), and
// a draft of d tokens costs verify_cost(d + 1) target decodes plus d draft forward passes of
// DraftModel::cost target decodes each; the drafter proposes the d <= max_tokens with the best
// expected tokens per cost, nothing when that is below 1 (plain decoding is cheaper), except a
// one-token probe every kProbeEvery proposals so a rate that recovers is noticed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/engine.h"
#include "kernels/model/self_draft.h"
#include "kernels/sampler/drafter.h"

namespace vsynth::kernels {

// A draft model ready to serve many ModelDrafters (one per generation), built once.
struct DraftModel {
  std::shared_ptr<Model> model;
  std::vector<TokenId> logit_tokens;  // [logit index] -> token id; empty: logit i is token i
  // One draft forward pass of one token, in target decode steps: the ratio of the bytes of
  // weights one decode step reads (Model::weight_bytes), which is what bounds a CPU decode.
  double cost = 0.0;
  std::string name;  // for traces and errors

  // A separately loaded draft. Throws EngineError naming both models (name, architecture,
  // vocabulary size) unless both have the same architecture, the same vocabulary size, the
  // same token texts and types (compared as a hash over all of them), and the same BOS / EOS.
  static std::shared_ptr<const DraftModel> separate(const Model& target, std::string target_name,
                                                    std::shared_ptr<Model> draft,
                                                    std::string draft_name);
  // The target's self-draft (make_self_draft's errors).
  static std::shared_ptr<const DraftModel> self(const std::shared_ptr<Model>& target,
                                                const SelfDraftOptions& options);
};

// A hash of every token's text and type, in id order (the vocabulary identity check).
uint64_t vocab_hash(const Tokenizer& tok);

class ModelDrafter : public Drafter {
 public:
  static constexpr double kDecay = 0.8;  // weight of the previous estimate per observed draft
  static constexpr int kProbeEvery = 8;  // skipped proposals between two one-token probes

  explicit ModelDrafter(std::shared_ptr<const DraftModel> draft, double prior_rate = 0.6);

  std::span<const TokenId> propose(std::span<const TokenId> context, int32_t max_tokens) override;
  void observe(int32_t drafted, int32_t accepted) override;
  void rewind(std::size_t length) override;

  // The draft length in [1, max_tokens] with the most expected tokens per target decode of cost
  // at keep rate `rate` and draft cost `cost` per token, and that ratio in `*gain`.
  static int best_length(double rate, double cost, int max_tokens, double* gain);
  double rate() const { return hits_ / trials_; }
  // Draft sequences started from scratch (the first, and each rollback the cache refused).
  int32_t fresh_sequences() const { return fresh_; }

 private:
  // Brings seq_ to hold the context (keeping the prefix it shares, all but the last token at
  // most, since that token's logits are needed) and returns the draft's logits after it.
  std::span<const float> sync(std::span<const TokenId> context);
  TokenId token_of(std::span<const float> logits) const;

  std::shared_ptr<const DraftModel> draft_;
  std::unique_ptr<Sequence> seq_;
  std::vector<TokenId> out_;
  double prior_rate_;
  double hits_ = 0.0, trials_ = 0.0;
  int32_t skipped_ = 0;
  int32_t fresh_ = 0;
  bool pending_ = false;
};

}  // namespace vsynth::kernels
