// Paged KV cache: a pool of fixed-size blocks shared by every sequence of a model, and the
// per-sequence block tables that map positions to blocks.
//
// One block holds `block_tokens` consecutive positions of ONE layer, every kv head:
//   F16:  K f16 [H][bt][dk], V f16 [H][bt][dv]
//   Int8: K scales f32 [H][dk] (per channel, set when the block fills), V scales f32 [H][bt]
//         (per token), K i8 [H][bt][dk], V i8 [H][bt][dv]
// (H = kv heads, bt = block_tokens, dk/dv = head dims). Head-major so attention streams one
// head's keys contiguously.
//
// Int8 keys need the whole block to choose per-channel scales, so the block a sequence is still
// filling (its "open" block) keeps its keys in an fp32 staging area owned by the sequence; they
// are quantized into the block when its last slot is written. Values are quantized per token at
// once. Rolling back into a sealed block decodes its keys back into staging.
//
// Sharing: fork() copies the block tables and bumps each block's reference count; a write to a
// block referenced more than once copies it first (copy-on-write), so forks share their common
// prefix and diverge in private blocks. Sliding-window layers release blocks whose positions
// fell out of their window (plus a rollback margin).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "kernels/engine_error.h"
#include "kernels/kv_type.h"

namespace vsynth::kernels {

struct KvGeometry {
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  KvType type = KvType::F16;
  int32_t block_tokens = 32;
};

class KvPool {
 public:
  // capacity_blocks blocks at most; memory is allocated lazily, in slabs, as blocks are first
  // used (and kept for reuse).
  KvPool(const KvGeometry& g, int64_t capacity_blocks);
  ~KvPool();
  KvPool(const KvPool&) = delete;
  KvPool& operator=(const KvPool&) = delete;

  const KvGeometry& geometry() const { return g_; }
  size_t block_bytes() const { return block_bytes_; }
  int64_t capacity_blocks() const { return capacity_; }

  // A free block with reference count 1. When none is free, asks the reclaimer (the prefix
  // cache: it evicts an unreferenced cached block) until one is; EngineError when every block is
  // in use by live sequences.
  int32_t allocate();
  // Called without the pool's lock held; returns false when it could free nothing. Set once,
  // before sequences use the pool; cleared (empty function) by its owner's destructor.
  void set_reclaimer(std::function<bool()> reclaim) { reclaim_ = std::move(reclaim); }
  void retain(int32_t id);
  void release(int32_t id);  // frees the block when the count reaches 0
  int32_t refcount(int32_t id) const;

  std::byte* data(int32_t id) const;
  int64_t blocks_used() const;

  // Typed views of a block (h = kv head).
  uint16_t* k_f16(int32_t id, int32_t h) const;
  uint16_t* v_f16(int32_t id, int32_t h) const;
  int8_t* k_i8(int32_t id, int32_t h) const;
  int8_t* v_i8(int32_t id, int32_t h) const;
  float* k_scale(int32_t id, int32_t h) const;  // [dk]
  float* v_scale(int32_t id, int32_t h) const;  // [bt]

 private:
  KvGeometry g_;
  int64_t capacity_;
  size_t block_bytes_ = 0;
  int32_t slab_blocks_ = 0;
  // Offsets inside a block (bytes).
  size_t k_off_ = 0, v_off_ = 0, ks_off_ = 0, vs_off_ = 0;
  size_t k_head_bytes_ = 0, v_head_bytes_ = 0;

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<std::byte[]>> slabs_;  // sized up front; filled on demand
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;  // stack of free ids that have memory
  int32_t next_fresh_ = 0;     // ids >= this have never been used
  int64_t used_ = 0;
  std::function<bool()> reclaim_;
};

// What attention reads for one layer of one sequence: keys/values at positions [0, n_keys)
// (sliding layers: only the positions still held are valid).
struct KvLayerView {
  const KvPool* pool = nullptr;
  const int32_t* blocks = nullptr;  // block id per block index (-1 = released)
  int32_t n_blocks = 0;
  int32_t n_keys = 0;
  // Int8 only: fp32 keys [H][bt][dk] of the open block (index n_keys / bt) when n_keys % bt.
  const float* k_open = nullptr;
};

class KvSequence {
 public:
  // window[l] > 0 for sliding layers (keys visible iff q - k < window); keep_extra more
  // positions are held so that short rollbacks always work.
  KvSequence(std::shared_ptr<KvPool> pool, std::vector<int32_t> window, int32_t keep_extra);
  ~KvSequence();
  KvSequence(const KvSequence&) = delete;
  KvSequence& operator=(const KvSequence&) = delete;

  // A sequence sharing every block with this one (reference counts bumped).
  std::unique_ptr<KvSequence> fork() const;

  int32_t size() const { return size_; }
  const KvPool& pool() const { return *pool_; }

  // Starts an empty sequence from n_tokens cached positions (a whole number of blocks):
  // blocks[l] are layer l's block ids for indices [0, n_tokens / block_tokens), already
  // retained for this sequence (-1 where a sliding layer does not need one). The blocks are
  // full (int8: sealed), so they are only read, never written (copy-on-write protects them).
  void adopt(std::vector<std::vector<int32_t>> blocks, int32_t n_tokens);
  // Layer l's block at block index `index`, -1 when released or absent.
  int32_t block_id(int32_t layer, int32_t index) const;

  // Stores keys k[m][H][dk] and values v[m][H][dv] of layer l at positions [size(), size()+m).
  // Every layer is written for the same positions; commit(size()+m) then makes them part of
  // the sequence. Blocks are allocated (EngineError when the pool is exhausted) or copied when
  // shared.
  void write(int32_t layer, int32_t m, const float* k, const float* v);
  void commit(int32_t new_size);

  // Attention's view of layer l with n_keys positions (size() <= n_keys <= size() + written).
  KvLayerView view(int32_t layer, int32_t n_keys) const;

  // Drops positions >= pos. EngineError unless min_rollback() <= pos <= size().
  void rollback(int32_t pos);
  int32_t min_rollback() const;

  // Bytes of the blocks this sequence references plus its int8 staging.
  int64_t bytes() const;

 private:
  struct Layer {
    std::vector<int32_t> blocks;  // -1 = released (sliding) or not yet allocated
    std::vector<float> k_open;    // int8: [H][bt][dk]
    int32_t sealed = 0;           // int8: blocks [0, sealed) hold quantized keys
    int32_t window = 0;
  };
  int32_t writable_block(Layer& L, int32_t index);
  void seal(Layer& L, int32_t id);
  void unseal(Layer& L, int32_t id, int32_t fill);
  void trim_sliding();

  std::shared_ptr<KvPool> pool_;
  std::vector<Layer> layers_;
  int32_t keep_extra_ = 0;
  int32_t size_ = 0;
};

}  // namespace vsynth::kernels
