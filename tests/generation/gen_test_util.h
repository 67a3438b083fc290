// Test helpers for generation: a small SPM vocabulary, a scripted fake Sequence (the decoding
// loop's semantics without a real model), and a tiny random llama GGUF written with the GGUF
// writer (the stage end to end through the real engine).
#pragma once

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/engine.h"
#include "kernels/gguf/writer.h"
#include "kernels/sampler/mask_hook.h"
#include "kernels/tokenizer/tokenizer.h"

namespace vsynth::gentest {

using kernels::TokenId;

// 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then `pieces` (normal), then `control`.
inline kernels::Vocab spm_vocab(const std::vector<std::string>& pieces,
                                const std::vector<std::string>& control = {}) {
  kernels::Vocab v;
  v.model = "llama";
  auto add = [&](std::string t, float s, kernels::TokenType ty) {
    v.tokens.push_back(std::move(t));
    v.scores.push_back(s);
    v.types.push_back(ty);
  };
  add("<unk>", 0, kernels::TokenType::Unknown);
  add("<s>", 0, kernels::TokenType::Control);
  add("</s>", 0, kernels::TokenType::Control);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add(buf, 0, kernels::TokenType::Byte);
  }
  float score = -1.0f;
  for (const auto& p : pieces) add(p, score -= 0.01f, kernels::TokenType::Normal);
  for (const auto& c : control) add(c, 0, kernels::TokenType::Control);
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  v.add_space_prefix = false;
  return v;
}

inline TokenId byte_token(unsigned char b) {
  return 3 + b;
}

// A decoding hook that allows only the listed tokens at every step (TokenMask::allow_only).
class AllowOnly : public kernels::MaskHook {
 public:
  explicit AllowOnly(std::vector<TokenId> allowed) : allowed_(std::move(allowed)) {}
  void before_sample(const kernels::DecodeView&, kernels::TokenMask& mask) override {
    mask.allow_only(allowed_);
  }

 private:
  std::vector<TokenId> allowed_;
};

// A pretend decoder: after token t the next-token logits put 10 on prefer(position, t), 5 on
// the id after it (mod vocab), 0 elsewhere, so greedy decoding follows `prefer` and a ban of
// the favourite falls to the runner-up. Counts every call.
class FakeSequence : public kernels::Sequence {
 public:
  using Prefer = std::function<TokenId(int32_t position, TokenId last)>;
  FakeSequence(std::size_t vocab, Prefer prefer) : vocab_(vocab), prefer_(std::move(prefer)) {}

  std::span<const float> prefill(std::span<const TokenId> tokens) override {
    for (TokenId t : tokens) push(t);
    return logits_;
  }
  std::span<const float> prefill_all(std::span<const TokenId> tokens) override {
    ++prefill_alls;
    rows_.clear();
    for (TokenId t : tokens) {
      push(t);
      rows_.insert(rows_.end(), logits_.begin(), logits_.end());
    }
    return rows_;
  }
  std::span<const float> decode(TokenId token) override {
    ++decodes;
    push(token);
    return logits_;
  }
  int32_t position() const override { return static_cast<int32_t>(tokens_.size()); }
  std::span<const TokenId> tokens() const override { return tokens_; }
  std::span<const float> last_logits() const override { return logits_; }
  void rollback(int32_t pos) override {
    rollbacks.push_back(pos);
    tokens_.resize(static_cast<std::size_t>(pos));
    logits_.clear();
  }
  int32_t min_rollback_position() const override { return min_rollback; }
  std::unique_ptr<kernels::Sequence> fork() const override {
    return std::make_unique<FakeSequence>(*this);
  }
  int64_t kv_bytes() const override { return 0; }
  const kernels::Model& model() const override {
    throw std::logic_error("FakeSequence has no model");
  }

  int decodes = 0;
  int prefill_alls = 0;
  std::vector<int32_t> rollbacks;
  int32_t min_rollback = 0;

 private:
  void push(TokenId t) {
    tokens_.push_back(t);
    logits_.assign(vocab_, 0.0f);
    const TokenId p = prefer_(static_cast<int32_t>(tokens_.size()), t);
    logits_[static_cast<std::size_t>(p)] = 10.0f;
    logits_[static_cast<std::size_t>(p + 1) % vocab_] = 5.0f;
  }
  std::size_t vocab_;
  Prefer prefer_;
  std::vector<TokenId> tokens_;
  std::vector<float> logits_;
  std::vector<float> rows_;  // prefill_all's rows
};

// A tiny llama-architecture GGUF with random F32 weights and `vocab` as its tokenizer:
// d_model 32, 2 layers, 4 heads of 8 (2 KV heads), FFN 64. Deterministic for a seed.
// `chat_template`: written as tokenizer.chat_template when non-empty (a chat-tuned model).
// The vocabulary's tokenizer.ggml.* keys (SentencePiece-style, BOS added, no space prefix).
inline void add_vocab(kernels::GgufWriter& w, const kernels::Vocab& vocab) {
  w.add("tokenizer.ggml.model", vocab.model);
  w.add_array("tokenizer.ggml.tokens", vocab.tokens);
  w.add_array("tokenizer.ggml.scores", vocab.scores);
  std::vector<int32_t> types;
  for (auto t : vocab.types) types.push_back(static_cast<int32_t>(t));
  w.add_array("tokenizer.ggml.token_type", types);
  w.add("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(vocab.bos));
  w.add("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(vocab.eos));
  w.add("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(vocab.unk));
  w.add("tokenizer.ggml.add_bos_token", true);
  w.add("tokenizer.ggml.add_space_prefix", false);
}

inline void write_tiny_model(const std::filesystem::path& path, const kernels::Vocab& vocab,
                             uint32_t seed = 1, int32_t context = 2048,
                             const std::string& chat_template = {}) {
  using kernels::GgufWriter;
  const uint64_t d = 32, ffn = 64, n_layers = 2, heads = 4, kv_heads = 2, hd = 8;
  const uint64_t n_vocab = vocab.tokens.size();
  GgufWriter w;
  w.add("general.architecture", "llama");
  w.add("llama.embedding_length", static_cast<uint32_t>(d));
  w.add("llama.block_count", static_cast<uint32_t>(n_layers));
  w.add("llama.feed_forward_length", static_cast<uint32_t>(ffn));
  w.add("llama.attention.head_count", static_cast<uint32_t>(heads));
  w.add("llama.attention.head_count_kv", static_cast<uint32_t>(kv_heads));
  w.add("llama.context_length", static_cast<uint32_t>(context));
  w.add("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.add("llama.rope.freq_base", 10000.0f);
  add_vocab(w, vocab);
  if (!chat_template.empty()) w.add("tokenizer.chat_template", chat_template);

  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto tensor = [&](const std::string& name, std::vector<uint64_t> ne, float scale,
                    float offset = 0.0f) {
    uint64_t n = 1;
    for (uint64_t e : ne) n *= e;
    std::vector<float> v(n);
    for (float& x : v) x = offset + scale * normal(rng);
    w.add_tensor(name, kernels::DType::F32, ne,
                 std::as_bytes(std::span<const float>(v.data(), v.size())));
  };
  tensor("token_embd.weight", {d, n_vocab}, 1.0f);
  tensor("output_norm.weight", {d}, 0.0f, 1.0f);
  tensor("output.weight", {d, n_vocab}, 1.0f);
  for (uint64_t l = 0; l < n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const float s = 1.0f / std::sqrt(static_cast<float>(d));
    tensor(p + "attn_norm.weight", {d}, 0.0f, 1.0f);
    tensor(p + "attn_q.weight", {d, heads * hd}, s);
    tensor(p + "attn_k.weight", {d, kv_heads * hd}, s);
    tensor(p + "attn_v.weight", {d, kv_heads * hd}, s);
    tensor(p + "attn_output.weight", {heads * hd, d}, s);
    tensor(p + "ffn_norm.weight", {d}, 0.0f, 1.0f);
    tensor(p + "ffn_gate.weight", {d, ffn}, s);
    tensor(p + "ffn_up.weight", {d, ffn}, s);
    tensor(p + "ffn_down.weight", {ffn, d}, 1.0f / std::sqrt(static_cast<float>(ffn)));
  }
  w.write(path);
}

}  // namespace vsynth::gentest
