// CudaModel's memory plan: the KV pool and the activation arena, both sized once at load for the
// largest step so that a step never allocates (see cuda_model_impl.h). Every buffer of the
// forward pass, the step inputs, the GEMM's slabs and the pinned staging are carved here.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_model_impl.h"

namespace vsynth::kernels::cuda {

int CudaModel::Impl::splits_for(int m) const {
  // Enough (row, head, split) blocks to cover every SM about twice.
  const int units = m * cfg.n_heads;
  const int want = (2 * std::max(1, info.sm_count) + units - 1) / units;
  return std::clamp(want, 1, decode_splits);
}

void CudaModel::Impl::plan_kv() {
  max_blocks = (opt.context_length + kBlockTokens - 1) / kBlockTokens;
  const int64_t capacity = (opt.kv_pool_tokens + kBlockTokens - 1) / kBlockTokens;
  if (capacity > INT32_MAX) throw CudaError("kv_pool_tokens is too large for the CUDA backend");
  kv = DeviceArena(static_cast<size_t>(capacity) * layout.block_bytes, "kv");
  pool = kv.allocate(static_cast<size_t>(capacity) * layout.block_bytes, "kv");
  blocks = std::make_unique<BlockPool>(static_cast<int32_t>(capacity));
}

// The arena's capacity: each buffer plan_activations carves, in the same order, padded as the
// arena pads it plus 256 bytes of slack each. max_cols: the widest input of a linear layer
// (elements); attn: attention split scratch (bytes); slab: GEMM weight slab (fp16 elements).
size_t CudaModel::Impl::activation_bytes(int64_t max_cols, size_t attn, int64_t slab) const {
  const int64_t d = cfg.d_model, F = cfg.ffn_dim, V = cfg.vocab_size;
  const int64_t qn = int64_t{cfg.n_heads} * cfg.head_dim_k;
  const int64_t kn = int64_t{cfg.n_kv_heads} * cfg.head_dim_k;
  const int64_t an = int64_t{cfg.n_heads} * cfg.head_dim_v;
  const size_t R = static_cast<size_t>(max_rows), f = sizeof(float);
  const size_t buffers[] = {
      R * d * f,                                // x
      R * d * f,                                // h
      R * d * f,                                // o
      R * qn * f,                               // q
      R * kn * f,                               // k
      R * kn * f,                               // v
      R * an * f,                               // att
      R * F * f,                                // g
      R * F * f,                                // u
      static_cast<size_t>(kLogitRows) * V * f,  // logits
      q8_bytes(max_cols, kGemvMaxRows),         // quantized GEMV input
      attn,
      // step inputs (token, position, row table, sampled token) and block tables
      4 * R * sizeof(int32_t) + static_cast<size_t>(copt.max_batch) * max_blocks * 4,
      static_cast<size_t>((V + 31) / 32) * 4,  // token mask bitmap
      static_cast<size_t>(slab) * 2,           // Gemm: fp16 weight slab
      R * max_cols * 2,                        // Gemm: fp16 activations
      size_t{32} << 20};                       // Gemm: cuBLAS workspace and slack
  size_t total = 0;
  for (size_t b : buffers) total += pad256(b) + 256;
  return total;
}

// Attention split scratch (bytes) for the step size that needs the most, 1..max_rows rows.
size_t CudaModel::Impl::max_attention_scratch() const {
  size_t attn = 0;
  for (int m = 1; m <= max_rows; ++m) {
    attn = std::max(attn, attention_scratch_bytes(m, cfg.n_heads, cfg.head_dim_v, splits_for(m)));
  }
  return attn;
}

// The GEMM's fp16 weight slab (elements): the largest weight (uploaded), at most kMaxSlabElems
// unless one row of max_cols is wider.
int64_t CudaModel::Impl::gemm_slab_elems(int64_t max_cols) const {
  int64_t largest = 0;
  for (const DevLayer& L : layers) {
    for (const DeviceWeight* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      largest = std::max(largest, w->rows * w->cols);
    }
  }
  largest = std::max(largest, output.rows * output.cols);
  return std::min(largest, std::max(kMaxSlabElems, max_cols));
}

void CudaModel::Impl::plan_activations() {
  // Sizes: the largest step's rows, the attention splits, the GEMM's slab.
  const int64_t d = cfg.d_model, F = cfg.ffn_dim, V = cfg.vocab_size;
  const int64_t qn = int64_t{cfg.n_heads} * cfg.head_dim_k;
  const int64_t kn = int64_t{cfg.n_kv_heads} * cfg.head_dim_k;
  const int64_t an = int64_t{cfg.n_heads} * cfg.head_dim_v;
  const int64_t max_cols = std::max({d, F, an});
  max_rows = std::max(kMaxChunk, copt.max_batch);
  decode_splits = std::clamp((opt.context_length + 255) / 256, 1, 32);
  const size_t attn = max_attention_scratch();
  const int64_t slab = gemm_slab_elems(max_cols);

  // Device buffers, carved in activation_bytes' order.
  const size_t R = static_cast<size_t>(max_rows);
  act = DeviceArena(activation_bytes(max_cols, attn, slab), "activations");
  x = act.allocate_n<float>(R * d, "activations");
  h = act.allocate_n<float>(R * d, "activations");
  o = act.allocate_n<float>(R * d, "activations");
  q = act.allocate_n<float>(R * qn, "activations");
  k = act.allocate_n<float>(R * kn, "activations");
  v = act.allocate_n<float>(R * kn, "activations");
  att = act.allocate_n<float>(R * an, "activations");
  g = act.allocate_n<float>(R * F, "activations");
  u = act.allocate_n<float>(R * F, "activations");
  logits = act.allocate_n<float>(static_cast<size_t>(kLogitRows) * V, "logits");
  q8 = act.allocate(q8_bytes(max_cols, kGemvMaxRows), "activations");
  attn_scratch = attn > 0 ? act.allocate(attn, "attention splits") : nullptr;
  d_tok = act.allocate_n<int32_t>(R, "step inputs");
  d_pos = act.allocate_n<int32_t>(R, "step inputs");
  d_row_table = act.allocate_n<int32_t>(R, "step inputs");
  d_token_out = act.allocate_n<int32_t>(R, "step inputs");
  d_tables =
      act.allocate_n<int32_t>(static_cast<size_t>(copt.max_batch) * max_blocks, "block tables");
  d_banned = act.allocate_n<uint32_t>(static_cast<size_t>((V + 31) / 32), "token mask");
  gemm = std::make_unique<Gemm>(act, slab, static_cast<int64_t>(R) * max_cols);

  // Pinned staging (layout in cuda_model_impl.h) and the fixed row -> table map.
  pin = PinnedBuffer((3 * R + static_cast<size_t>(copt.max_batch) * max_blocks) * sizeof(int32_t));
  h_tok = pin.as<int32_t>();
  h_pos = h_tok + R;
  h_token_out = h_pos + R;
  h_tables = h_token_out + R;
  // Row i of a batch reads table i.
  std::vector<int32_t> iota(R);
  std::iota(iota.begin(), iota.end(), 0);
  VSYNTH_CUDA_CHECK(
      cudaMemcpy(d_row_table, iota.data(), R * sizeof(int32_t), cudaMemcpyHostToDevice));
  banned_host.assign(static_cast<size_t>((V + 31) / 32), 0u);
}

}  // namespace vsynth::kernels::cuda
