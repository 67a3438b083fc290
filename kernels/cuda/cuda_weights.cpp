// CudaModel's weight upload: the tensors bind_weights (kernels/model/weights.cpp) checks and
// views on the host, copied once into the weights arena, and the device views the forward pass
// reads (see cuda_model_impl.h).
#include <cuda_runtime_api.h>

#include <map>
#include <utility>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_model_impl.h"
#include "kernels/gguf/reader.h"
#include "kernels/model/weights.h"

namespace vsynth::kernels::cuda {

namespace {

using HostRange = std::pair<const void*, size_t>;  // host address, bytes
using Placement = std::map<const void*, void*>;    // host address -> its copy on the device

// Every tensor the forward pass reads, in upload order: token_embd, output (unless tied),
// output_norm, then per layer its vectors (those the architecture has) and its seven matrices.
std::vector<HostRange> host_ranges(const ModelConfig& cfg, const ModelWeights& hw) {
  std::vector<HostRange> items;
  const auto mat = [&](const WeightView& w) { items.emplace_back(w.data, w.row_bytes * w.rows); };
  const auto vec = [&](const float* p, int64_t n) {
    if (p != nullptr) items.emplace_back(p, static_cast<size_t>(n) * sizeof(float));
  };
  const int64_t d = cfg.d_model, qn = int64_t{cfg.n_heads} * cfg.head_dim_k;
  const int64_t kn = int64_t{cfg.n_kv_heads} * cfg.head_dim_k;
  const int64_t vn = int64_t{cfg.n_kv_heads} * cfg.head_dim_v;
  mat(hw.token_embd);
  if (!cfg.tied_output) mat(hw.output);
  vec(hw.output_norm, d);
  for (const LayerWeights& L : hw.layers) {
    vec(L.attn_norm, d);
    vec(L.bq, qn);
    vec(L.bk, kn);
    vec(L.bv, vn);
    vec(L.q_norm, cfg.head_dim_k);
    vec(L.k_norm, cfg.head_dim_k);
    vec(L.post_attn_norm, d);
    vec(L.ffn_norm, d);
    vec(L.post_ffn_norm, d);
    for (const WeightView* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) mat(*w);
  }
  return items;
}

DeviceWeight device_matrix(const WeightView& w, const Placement& placed) {
  DeviceWeight dw;
  dw.type = w.type;
  dw.rows = w.rows;
  dw.cols = w.cols;
  dw.row_bytes = w.row_bytes;
  dw.data = placed.at(w.data);
  return dw;
}

const float* device_vector(const float* p, const Placement& placed) {
  return p == nullptr ? nullptr : static_cast<const float*>(placed.at(p));
}

DevLayer device_layer(const LayerWeights& L, const Placement& placed) {
  DevLayer D;
  D.attn_norm = device_vector(L.attn_norm, placed);
  D.bq = device_vector(L.bq, placed);
  D.bk = device_vector(L.bk, placed);
  D.bv = device_vector(L.bv, placed);
  D.q_norm = device_vector(L.q_norm, placed);
  D.k_norm = device_vector(L.k_norm, placed);
  D.post_attn_norm = device_vector(L.post_attn_norm, placed);
  D.ffn_norm = device_vector(L.ffn_norm, placed);
  D.post_ffn_norm = device_vector(L.post_ffn_norm, placed);
  D.wq = device_matrix(L.wq, placed);
  D.wk = device_matrix(L.wk, placed);
  D.wv = device_matrix(L.wv, placed);
  D.wo = device_matrix(L.wo, placed);
  D.w_gate = device_matrix(L.w_gate, placed);
  D.w_up = device_matrix(L.w_up, placed);
  D.w_down = device_matrix(L.w_down, placed);
  return D;
}

}  // namespace

void CudaModel::Impl::upload(const std::filesystem::path& path) {
  const GgufFile file = GgufFile::open(path);
  const ModelWeights hw = bind_weights(file, cfg);
  // Pass 1 sizes the arena, pass 2 copies (the host data stays mapped until the copies finish).
  const std::vector<HostRange> items = host_ranges(cfg, hw);
  size_t total = 0;
  for (const auto& it : items) total += pad256(it.second);
  weights = DeviceArena(total, "weights");
  Placement placed;
  for (const auto& [src, bytes] : items) {
    void* dst = weights.allocate(bytes, "weights");
    VSYNTH_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    placed[src] = dst;
    weight_bytes += bytes;
  }
  // The device views, pointing into the arena.
  token_embd = device_matrix(hw.token_embd, placed);
  output = cfg.tied_output ? token_embd : device_matrix(hw.output, placed);
  output_norm = device_vector(hw.output_norm, placed);
  layers.clear();
  for (const LayerWeights& L : hw.layers) layers.push_back(device_layer(L, placed));
}

}  // namespace vsynth::kernels::cuda
