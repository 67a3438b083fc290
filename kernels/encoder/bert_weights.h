// The BertModel tensors of a safetensors file bound to the shapes an EncoderConfig implies
// (internal to kernels/encoder). Linear weights are WeightViews for matmul: F32 views into the
// mapping (copied when the file leaves them misaligned), or Q8_0 rows quantized at load and
// owned here. Biases and LayerNorm parameters are small and copied to floats.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/cpu/matvec.h"
#include "kernels/encoder/bert.h"
#include "kernels/encoder/gemm.h"
#include "kernels/safetensors/reader.h"

namespace vsynth::kernels::encoder_detail {

// y = W x + b; torch's Linear weight [out, in] is WeightView rows = out, cols = in. F32
// weights are also packed into panels for the encoder's own GEMM (gemm.h), which is what the
// forward pass uses for them; Q8_0 weights go through kernels/cpu/matvec.h's matmul.
struct Linear {
  WeightView w;
  Panels packed;            // F32 only: W packed (empty with q8_0, and for query/key/value)
  std::vector<float> bias;  // [rows]
};

struct LayerNormParams {
  std::vector<float> gamma, beta;  // [hidden]
};

struct BertLayer {
  Linear query, key, value, attn_out;  // [hidden, hidden]
  // F32 only: query, key and value stacked [3 hidden, hidden] (packed and bias; no view), so one
  // GEMM makes a token's q | k | v row.
  Linear qkv;
  LayerNormParams attn_ln;
  Linear up;    // intermediate.dense [intermediate, hidden]
  Linear down;  // output.dense [hidden, intermediate]
  LayerNormParams out_ln;
};

struct BertWeights {
  WeightView word;                // [vocab, hidden] F32 (get_rows)
  std::vector<float> position;    // [max_positions * hidden]
  std::vector<float> token_type;  // [hidden]: row 0, the only segment a single input has
  LayerNormParams emb_ln;
  std::vector<BertLayer> layers;
  // Storage the views point into when they are not the mapping's own bytes.
  std::vector<std::unique_ptr<std::byte[]>> owned;
};

// Binds every tensor with SafetensorsFile::require (absent or misshapen: SafetensorsError naming
// it). `q8_0` quantizes the linear weights (needs hidden and intermediate multiples of 32;
// EncoderError otherwise). The views refer to `file`, which must outlive the result.
BertWeights bind_bert_weights(const SafetensorsFile& file, const EncoderConfig& c, bool q8_0);

}  // namespace vsynth::kernels::encoder_detail
