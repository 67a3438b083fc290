// CudaModel's internals (internal to kernels/cuda), shared by the three files that implement it,
// as the CPU engine splits kernels/engine.cpp from kernels/model/weights.cpp:
//
//   cuda_weights.cpp  upload: the host model's tensors copied once into the weights arena, and
//                     the device views of them (token_embd, output, per layer DevLayer)
//   cuda_plan.cpp     planning: the KV pool (arena, blocks, per-sequence table size) and the
//                     activation arena carved into every buffer a step uses, sized at load
//                     for the largest step (max(kMaxChunk, max_batch) rows), so no step allocates
//   cuda_model.cpp    load (the order of the above), the Sequence, and the forward pass
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/ops.h"

namespace vsynth::kernels::cuda {

inline constexpr int kBlockTokens = 32;  // positions per device KV block
inline constexpr int kMaxChunk = 512;    // prefill chunk, as the CPU engine
inline constexpr int kLogitRows = 64;    // logits rows per output projection in prefill_all
inline constexpr int64_t kMaxSlabElems = int64_t{64} << 20;  // fp16 GEMM weight slab (128 MiB)

// Bytes an arena hands out for a request of n (DeviceArena aligns every allocation to 256).
inline size_t pad256(size_t n) {
  return (n + 255) / 256 * 256;
}

// One layer's weights in the weights arena (null vectors: the architecture has none).
struct DevLayer {
  const float *attn_norm = nullptr, *bq = nullptr, *bk = nullptr, *bv = nullptr;
  const float *q_norm = nullptr, *k_norm = nullptr, *post_attn_norm = nullptr;
  const float *ffn_norm = nullptr, *post_ffn_norm = nullptr;
  DeviceWeight wq, wk, wv, wo, w_gate, w_up, w_down;
};

// Host bookkeeping of the device KV blocks: free list and reference counts (forks share blocks).
class BlockPool {
 public:
  explicit BlockPool(int32_t capacity) : refs_(static_cast<size_t>(capacity), 0) {
    free_.resize(static_cast<size_t>(capacity));
    std::iota(free_.rbegin(), free_.rend(), 0);  // hand out low ids first
  }
  int32_t allocate() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) {
      throw EngineError("CUDA KV pool exhausted: all " + std::to_string(refs_.size()) +
                        " blocks of " + std::to_string(kBlockTokens) +
                        " tokens are in use (raise ModelOptions::kv_pool_tokens)");
    }
    const int32_t id = free_.back();
    free_.pop_back();
    refs_[static_cast<size_t>(id)] = 1;
    return id;
  }
  void retain(int32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    ++refs_[static_cast<size_t>(id)];
  }
  void release(int32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    if (--refs_[static_cast<size_t>(id)] == 0) free_.push_back(id);
  }
  int32_t refcount(int32_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    return refs_[static_cast<size_t>(id)];
  }
  int64_t used() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(refs_.size() - free_.size());
  }
  int64_t capacity() const { return static_cast<int64_t>(refs_.size()); }

 private:
  mutable std::mutex mu_;
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;
};

class CudaSequence;  // cuda_model.cpp

struct CudaModel::Impl {
  std::shared_ptr<Model> host;
  ModelConfig cfg;
  ModelOptions opt;
  CudaOptions copt;
  DeviceInfo info;
  int dev = 0;

  std::unique_ptr<Stream> stream;
  DeviceArena weights, kv, act;
  size_t weight_bytes = 0;
  DeviceWeight token_embd, output;
  const float* output_norm = nullptr;
  std::vector<DevLayer> layers;

  KvLayout layout;
  void* pool = nullptr;
  std::unique_ptr<BlockPool> blocks;
  int max_blocks = 0;  // per sequence: context_length / block_tokens, rounded up

  std::unique_ptr<Gemm> gemm;
  int max_rows = 0;  // rows one forward takes: max(kMaxChunk, max_batch)
  float *x = nullptr, *h = nullptr, *o = nullptr, *q = nullptr, *k = nullptr, *v = nullptr;
  float *att = nullptr, *g = nullptr, *u = nullptr, *logits = nullptr;
  void* q8 = nullptr;
  void* attn_scratch = nullptr;
  int decode_splits = 1;
  int32_t *d_tok = nullptr, *d_pos = nullptr, *d_tables = nullptr, *d_row_table = nullptr;
  int32_t* d_token_out = nullptr;
  uint32_t* d_banned = nullptr;
  // Pinned staging: tokens [max_rows], positions [max_rows], the sampled tokens [max_rows],
  // then tables [max_batch][max_blocks].
  PinnedBuffer pin;
  int32_t *h_tok = nullptr, *h_pos = nullptr, *h_tables = nullptr, *h_token_out = nullptr;
  std::vector<uint32_t> banned_host;

  GraphExec decode_graph;
  std::mutex mu;  // one step at a time on the stream and the activation buffers

  // cuda_weights.cpp: every tensor of the file at `path` into `weights`, views into `layers`,
  // token_embd, output, output_norm; weight_bytes counts what was copied.
  void upload(const std::filesystem::path& path);

  // cuda_plan.cpp: the KV arena, pool and block bookkeeping for opt.kv_pool_tokens positions
  // (layout set), then the activation arena and every buffer above (weights uploaded: the GEMM
  // slab is sized from the largest weight).
  void plan_kv();
  void plan_activations();
  // Attention splits for a step of m rows (at most decode_splits).
  int splits_for(int m) const;

  // cuda_model.cpp: the forward pass.
  void linear(std::initializer_list<std::pair<const DeviceWeight*, float*>> outs, const float* in,
              int m, int64_t cols);
  // Enqueues the forward pass of m rows already staged in d_tok / d_pos / d_tables; logits of
  // rows [first, m) go to `logits_out` (host, may be null: none) or stay in `logits` (device)
  // for m - first <= kLogitRows when logits_out is null.
  void forward(int m, const int32_t* row_table, int first, float* logits_out);
  void stage(const CudaSequence& seq, const TokenId* ids, int m, int32_t p0);
  void prepare_blocks(CudaSequence& seq, int32_t p0, int32_t n);
  std::span<const float> eval(CudaSequence& seq, std::span<const TokenId> tokens, bool all);
  void set_banned(const TokenMask* mask);
  void batch_greedy_step(int n);

 private:
  size_t max_attention_scratch() const;
  int64_t gemm_slab_elems(int64_t max_cols) const;
  size_t activation_bytes(int64_t max_cols, size_t attn, int64_t slab) const;
  void stage_inputs(int m, int n_tables);
  void launch_decode_graph();
  void copy_last_logits(CudaSequence& seq);
};

}  // namespace vsynth::kernels::cuda
