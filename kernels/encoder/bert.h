// A BERT-family sentence encoder (all-MiniLM-L6-v2 and its kin: BertModel weights in
// safetensors + config.json) computing one L2-normalised embedding per input, as
// sentence-transformers does with mean pooling + Normalize:
//   x = word_emb[ids] + pos_emb[0..n) + type_emb[0]                      [n, hidden]
//   x = LayerNorm(x) (with bias, eps = layer_norm_eps)
//   per layer: x = LN(x + Wo . MHA(Wq x, Wk x, Wv x))   (non-causal, over the input's own tokens)
//              x = LN(x + W2 . GELU(W1 x))               (GELU: the erf form)
//   e = mean over the input's real tokens of x; e /= |e|
// Batched: the inputs of a call are packed back to back (no padding rows) and go through each
// linear layer as one matrix product over all their tokens (F32: the encoder's packed-panel GEMM,
// kernels/encoder/gemm.h, each output one FMA chain in a fixed order; Q8_0: kernels/cpu/
// matvec.h's matmul); attention runs per input over its own tokens only, so an input's
// embedding does not depend on what else is in the batch, its order or the thread count (bit
// for bit; tests/kernels/encoder_test.cpp).
//
//   auto enc = BertEncoder::load("models/all-MiniLM-L6-v2", {.threads = 2});
//   std::vector<float> e = enc->embed(batch_of_token_ids);   // batch.size() x enc->dim()
//
// Threading: immutable after load; embed() may be called from many threads at once (each call
// uses its own scratch); compute runs in the encoder's own oneTBB arena of `threads` threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace vsynth::kernels {

class EncoderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EncoderOptions {
  int threads = 0;  // oneTBB arena size; 0 = the machine's default concurrency
  // Linear-layer weights quantized to Q8_0 at load (embeddings and LayerNorms stay F32).
  bool q8_0 = false;
};

struct EncoderConfig {
  int32_t vocab_size = 0, hidden = 0, layers = 0, heads = 0, intermediate = 0;
  int32_t max_positions = 0, type_vocab = 0;
  float layer_norm_eps = 1e-12f;
};

class BertEncoder {
 public:
  // `dir` holds config.json and model.safetensors (a sentence-transformers folder). Throws
  // EncoderError naming the file and what is wrong (missing file, a config value missing or
  // out of range, architecture not BertModel, hidden_act not gelu, a pooling other than mean
  // in 1_Pooling/config.json when present, a weight that is NaN or infinite) or
  // SafetensorsError (a malformed file, a tensor absent or misshapen).
  static std::shared_ptr<BertEncoder> load(const std::filesystem::path& dir,
                                           const EncoderOptions& options = {});
  virtual ~BertEncoder();

  virtual const EncoderConfig& config() const = 0;
  int32_t dim() const { return config().hidden; }
  // A hex digest identifying the weights and options (what index caches are keyed by).
  virtual const std::string& fingerprint() const = 0;

  // Embeddings of `batch` (each a token id list as WordPiece::encode makes it, 1..max_positions
  // ids, every id < vocab_size; EncoderError naming the input index otherwise): batch.size()
  // rows of dim() floats, row-major, each of unit length.
  virtual std::vector<float> embed(std::span<const std::vector<int32_t>> batch) const = 0;

 protected:
  BertEncoder() = default;
};

}  // namespace vsynth::kernels
