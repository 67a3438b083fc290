// Causal (optionally sliding-window) multi-head attention over a paged KV cache, in fp32.
//
//   q    [m][n_heads][dk]   queries at positions p0 .. p0+m-1, already RoPE'd and scaled
//   out  [m][n_heads][dv]
// Keys/values come from the cache view (positions [0, kv.n_keys), n_keys >= p0 + m); query
// head h reads kv head h / (n_heads / n_kv_heads) (grouped-query attention). A key at position
// k is visible to the query at q iff k <= q and, with window > 0, q - k < window.
//
// One pass per tile with an online softmax (running max and sum, as in flash attention), so
// no [m][n_keys] score matrix is built. Work is split over kv heads x query tiles and, when
// that gives too few tasks (decode), over key ranges whose partial results are merged.
#pragma once

#include <cstdint>

#include "kernels/kv/kv_cache.h"

namespace vsynth::kernels {

struct AttentionShape {
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  int32_t window = 0;  // 0 = full causal attention
};

void attention(const KvLayerView& kv, const AttentionShape& shape, const float* q, int32_t m,
               int32_t p0, float* out);

}  // namespace vsynth::kernels
