// Decoder model configuration read from GGUF metadata: the hyper-parameters and per-architecture
// switches the forward pass needs (gemma3, llama, qwen2). (EngineError and KvType, which it
// includes, have their own headers: kernels/engine_error.h, kernels/kv_type.h.)
//
// Keys read ("<arch>." prefix): context_length, embedding_length, block_count,
// feed_forward_length, attention.head_count, attention.head_count_kv (default head_count),
// attention.key_length / value_length (default embedding_length / head_count),
// attention.layer_norm_rms_epsilon, rope.freq_base, rope.dimension_count (default key_length),
// rope.scaling.type / rope.scaling.factor (none or linear), attention.sliding_window (gemma3).
// Per-architecture facts that are not in the file (checked against llama.cpp's graphs):
//   gemma3: embeddings scaled by sqrt(d_model) (in fp32: 25.298 for 640, not bf16's 25.25);
//           sliding layers are those with layer % 6 < 5, RoPE base 10000 there and
//           rope.freq_base on the others; q scaled by 1/sqrt(key_length); per-head RMSNorm of q
//           and k; post-attention and post-FFN RMSNorms; GELU (tanh) gated FFN; NEOX RoPE.
//   llama:  SiLU gated FFN, NORM RoPE (adjacent pairs).
//   qwen2:  SiLU gated FFN, NEOX RoPE, q/k/v biases.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/engine_error.h"
#include "kernels/kv_type.h"

namespace vsynth::kernels {

class GgufFile;

enum class Arch { Gemma3, Llama, Qwen2 };
enum class RopeKind { Norm, Neox };           // Norm: adjacent pairs (llama); Neox: two halves
enum class FfnActivation { Silu, GeluTanh };  // gate activation of the gated FFN

// Everything the forward pass needs to know, read from GGUF metadata ("<arch>.*" keys).
struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string arch_name;  // general.architecture as written
  int32_t vocab_size = 0;
  int32_t d_model = 0;  // embedding_length
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim_k = 0;  // attention.key_length (default d_model / n_heads)
  int32_t head_dim_v = 0;  // attention.value_length
  int32_t ffn_dim = 0;     // feed_forward_length
  int32_t trained_context = 0;
  float rms_eps = 1e-6f;
  RopeKind rope_kind = RopeKind::Norm;
  float rope_base = 10000.0f;         // full-attention layers
  float rope_base_sliding = 10000.f;  // sliding-window layers (gemma3: 10000)
  float rope_freq_scale = 1.0f;       // linear RoPE scaling: positions multiplied by this
  int32_t rope_dims = 0;              // leading dims of each head that rotate (all of them here)
  int32_t sliding_window = 0;         // 0 = none; a key is visible iff pos_q - pos_k < window
  std::vector<bool> layer_sliding;    // per layer: true = sliding-window attention
  float attn_scale = 0.0f;            // q scale before softmax (1/sqrt(head_dim_k) unless set)
  float embed_scale = 1.0f;           // gemma3: sqrt(d_model)
  FfnActivation ffn_act = FfnActivation::Silu;
  bool tied_output = false;  // no output.weight: logits use token_embd
  bool qkv_bias = false;     // qwen2
  bool qk_norm = false;      // gemma3: per-head RMSNorm of q and k
  bool post_norms = false;   // gemma3: post_attention_norm and post_ffw_norm
};

// Reads and checks the configuration (EngineError naming the file, the key and what would be
// valid: unknown architecture, a missing key, a head count that does not divide, ...).
ModelConfig read_model_config(const GgufFile& file);

std::string_view to_string(Arch a);

}  // namespace vsynth::kernels
