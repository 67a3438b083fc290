// The model's tensors bound to the forward pass: views into the mmap'd GGUF data (nothing is
// copied). bind_weights checks every tensor's presence, shape and element type against the
// config and reports every problem at once.
//
// GGUF shapes are [ne0, ne1] with ne0 the contiguous (input) dimension; a linear layer y = W x
// with x of size in and y of size out is stored as [in, out] and viewed as `out` rows of `in`.
#pragma once

#include <vector>

#include "kernels/cpu/matvec.h"
#include "kernels/model/config.h"

namespace vsynth::kernels {

class GgufFile;

struct LayerWeights {
  const float* attn_norm = nullptr;  // [d_model]
  WeightView wq;                     // n_heads*hd_k rows of d_model
  WeightView wk;                     // n_kv*hd_k rows of d_model
  WeightView wv;                     // n_kv*hd_v rows of d_model
  WeightView wo;                     // d_model rows of n_heads*hd_v
  const float* bq = nullptr;         // qwen2 biases: [n_heads*hd_k], [n_kv*hd_k], [n_kv*hd_v]
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* q_norm = nullptr;  // gemma3: [hd_k], shared by every head
  const float* k_norm = nullptr;
  const float* post_attn_norm = nullptr;  // gemma3: [d_model]
  const float* ffn_norm = nullptr;        // [d_model]
  WeightView w_gate;                      // ffn rows of d_model
  WeightView w_up;                        // ffn rows of d_model
  WeightView w_down;                      // d_model rows of ffn
  const float* post_ffn_norm = nullptr;   // gemma3: [d_model]
};

struct ModelWeights {
  WeightView token_embd;  // vocab rows of d_model
  WeightView output;      // vocab rows of d_model (= token_embd when tied)
  const float* output_norm = nullptr;
  std::vector<LayerWeights> layers;
  size_t total_bytes = 0;  // bytes of every bound tensor (token_embd once when tied)
};

// Binds every tensor the config needs. Throws EngineError listing every missing tensor, every
// shape mismatch ("blk.3.attn_k.weight: expected [640, 256], found [640, 512]") and every
// unsupported element type, with the file name.
ModelWeights bind_weights(const GgufFile& file, const ModelConfig& config);

}  // namespace vsynth::kernels
