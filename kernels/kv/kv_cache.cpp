#include "kernels/kv/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

#include "kernels/cpu/cpu_path_internal.h"

namespace vsynth::kernels {

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kSlabBytes = 1 << 20;  // blocks are carved from ~1 MiB slabs

size_t round_up(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

void free_slab(std::byte* p) {
  ::operator delete (p, std::align_val_t{kAlign});
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// KvPool

KvPool::KvPool(const KvGeometry& g, int64_t capacity_blocks) : g_(g), capacity_(capacity_blocks) {
  if (g.n_kv_heads <= 0 || g.head_dim_k <= 0 || g.head_dim_v <= 0 || g.block_tokens <= 0 ||
      g.n_layers <= 0) {
    throw EngineError(
        "KV pool: invalid geometry (heads, head dims, block tokens and layers must "
        "be positive)");
  }
  if (capacity_blocks <= 0 || capacity_blocks > (int64_t{1} << 30)) {
    throw EngineError("KV pool: capacity of " + std::to_string(capacity_blocks) +
                      " blocks is outside [1, 2^30]");
  }
  const size_t H = static_cast<size_t>(g.n_kv_heads);
  const size_t bt = static_cast<size_t>(g.block_tokens);
  const size_t dk = static_cast<size_t>(g.head_dim_k);
  const size_t dv = static_cast<size_t>(g.head_dim_v);
  size_t off = 0;
  if (g.type == KvType::F16) {
    k_head_bytes_ = bt * dk * 2;
    v_head_bytes_ = bt * dv * 2;
  } else {
    ks_off_ = off;
    off = round_up(off + H * dk * sizeof(float), kAlign);
    vs_off_ = off;
    off = round_up(off + H * bt * sizeof(float), kAlign);
    k_head_bytes_ = bt * dk;
    v_head_bytes_ = bt * dv;
  }
  k_off_ = off;
  off = round_up(off + H * k_head_bytes_, kAlign);
  v_off_ = off;
  off = round_up(off + H * v_head_bytes_, kAlign);
  block_bytes_ = off;
  slab_blocks_ = static_cast<int32_t>(std::max<size_t>(1, kSlabBytes / block_bytes_));
  const int64_t n_slabs = (capacity_ + slab_blocks_ - 1) / slab_blocks_;
  slabs_.resize(static_cast<size_t>(n_slabs));
  refs_.assign(static_cast<size_t>(capacity_), 0);
}

KvPool::~KvPool() {
  for (auto& s : slabs_) {
    if (s) free_slab(s.release());
  }
}

int32_t KvPool::allocate() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      int32_t id = -1;
      if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
      } else if (next_fresh_ < capacity_) {
        id = next_fresh_++;
        auto& slab = slabs_[static_cast<size_t>(id / slab_blocks_)];
        if (!slab) {
          const int64_t first = static_cast<int64_t>(id / slab_blocks_) * slab_blocks_;
          const size_t n = static_cast<size_t>(std::min<int64_t>(slab_blocks_, capacity_ - first));
          slab.reset(
              static_cast<std::byte*>(::operator new (n* block_bytes_, std::align_val_t{kAlign})));
        }
      }
      if (id >= 0) {
        refs_[static_cast<size_t>(id)] = 1;
        ++used_;
        return id;
      }
    }
    // Outside the lock: the reclaimer releases blocks back into this pool.
    if (!reclaim_ || !reclaim_()) break;
  }
  throw EngineError("KV pool exhausted: all " + std::to_string(capacity_) + " blocks of " +
                    std::to_string(g_.block_tokens) + " tokens (" +
                    std::to_string(capacity_ * static_cast<int64_t>(block_bytes_) >> 20) +
                    " MiB) are in use by live sequences" +
                    (reclaim_ ? ", after evicting every unreferenced cached prefix block" : "") +
                    " (raise ModelOptions::kv_pool_tokens, or release sequences)");
}

void KvPool::retain(int32_t id) {
  std::lock_guard lock(mu_);
  ++refs_[static_cast<size_t>(id)];
}

void KvPool::release(int32_t id) {
  std::lock_guard lock(mu_);
  if (--refs_[static_cast<size_t>(id)] == 0) {
    free_.push_back(id);
    --used_;
  }
}

int32_t KvPool::refcount(int32_t id) const {
  std::lock_guard lock(mu_);
  return refs_[static_cast<size_t>(id)];
}

int64_t KvPool::blocks_used() const {
  std::lock_guard lock(mu_);
  return used_;
}

std::byte* KvPool::data(int32_t id) const {
  const auto& slab = slabs_[static_cast<size_t>(id / slab_blocks_)];
  return slab.get() + static_cast<size_t>(id % slab_blocks_) * block_bytes_;
}

uint16_t* KvPool::k_f16(int32_t id, int32_t h) const {
  return reinterpret_cast<uint16_t*>(data(id) + k_off_ + static_cast<size_t>(h) * k_head_bytes_);
}
uint16_t* KvPool::v_f16(int32_t id, int32_t h) const {
  return reinterpret_cast<uint16_t*>(data(id) + v_off_ + static_cast<size_t>(h) * v_head_bytes_);
}
int8_t* KvPool::k_i8(int32_t id, int32_t h) const {
  return reinterpret_cast<int8_t*>(data(id) + k_off_ + static_cast<size_t>(h) * k_head_bytes_);
}
int8_t* KvPool::v_i8(int32_t id, int32_t h) const {
  return reinterpret_cast<int8_t*>(data(id) + v_off_ + static_cast<size_t>(h) * v_head_bytes_);
}
float* KvPool::k_scale(int32_t id, int32_t h) const {
  return reinterpret_cast<float*>(data(id) + ks_off_) + static_cast<size_t>(h) * g_.head_dim_k;
}
float* KvPool::v_scale(int32_t id, int32_t h) const {
  return reinterpret_cast<float*>(data(id) + vs_off_) + static_cast<size_t>(h) * g_.block_tokens;
}

// ---------------------------------------------------------------------------------------------
// KvSequence

KvSequence::KvSequence(std::shared_ptr<KvPool> pool, std::vector<int32_t> window,
                       int32_t keep_extra)
    : pool_(std::move(pool)), keep_extra_(std::max(0, keep_extra)) {
  const KvGeometry& g = pool_->geometry();
  if (static_cast<int32_t>(window.size()) != g.n_layers) {
    throw EngineError("KV sequence: one window per layer expected");
  }
  layers_.resize(window.size());
  for (size_t l = 0; l < window.size(); ++l) {
    layers_[l].window = window[l];
    if (g.type == KvType::Int8) {
      layers_[l].k_open.assign(static_cast<size_t>(g.n_kv_heads) * g.block_tokens * g.head_dim_k,
                               0.0f);
    }
  }
}

KvSequence::~KvSequence() {
  for (auto& L : layers_) {
    for (int32_t id : L.blocks) {
      if (id >= 0) pool_->release(id);
    }
  }
}

std::unique_ptr<KvSequence> KvSequence::fork() const {
  std::vector<int32_t> w;
  for (const auto& L : layers_) w.push_back(L.window);
  auto s = std::make_unique<KvSequence>(pool_, std::move(w), keep_extra_);
  s->size_ = size_;
  for (size_t l = 0; l < layers_.size(); ++l) {
    s->layers_[l] = layers_[l];
    for (int32_t id : layers_[l].blocks) {
      if (id >= 0) pool_->retain(id);
    }
  }
  return s;
}

void KvSequence::adopt(std::vector<std::vector<int32_t>> blocks, int32_t n_tokens) {
  const int32_t bt = pool_->geometry().block_tokens;
  if (size_ != 0 || blocks.size() != layers_.size() || n_tokens % bt != 0) {
    throw EngineError(
        "KV sequence: adopt needs an empty sequence, one block list per layer and "
        "a whole number of blocks");
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].blocks = std::move(blocks[l]);
    layers_[l].sealed = n_tokens / bt;
  }
  size_ = n_tokens;
  trim_sliding();
}

int32_t KvSequence::block_id(int32_t layer, int32_t index) const {
  const Layer& L = layers_[static_cast<size_t>(layer)];
  return index < static_cast<int32_t>(L.blocks.size()) ? L.blocks[static_cast<size_t>(index)] : -1;
}

int32_t KvSequence::writable_block(Layer& L, int32_t index) {
  if (static_cast<int32_t>(L.blocks.size()) <= index) {
    L.blocks.resize(static_cast<size_t>(index) + 1, -1);
  }
  int32_t& id = L.blocks[static_cast<size_t>(index)];
  if (id < 0) {
    id = pool_->allocate();
  } else if (pool_->refcount(id) > 1) {
    const int32_t copy = pool_->allocate();
    std::memcpy(pool_->data(copy), pool_->data(id), pool_->block_bytes());
    pool_->release(id);
    id = copy;
  }
  return id;
}

void KvSequence::seal(Layer& L, int32_t id) {
  const KvGeometry& g = pool_->geometry();
  const int32_t bt = g.block_tokens, dk = g.head_dim_k;
  for (int32_t h = 0; h < g.n_kv_heads; ++h) {
    const float* src = L.k_open.data() + static_cast<size_t>(h) * bt * dk;
    float* scale = pool_->k_scale(id, h);
    int8_t* dst = pool_->k_i8(id, h);
    for (int32_t c = 0; c < dk; ++c) {
      float amax = 0.0f;
      for (int32_t t = 0; t < bt; ++t) amax = std::max(amax, std::fabs(src[t * dk + c]));
      scale[c] = amax / 127.0f;
    }
    for (int32_t t = 0; t < bt; ++t) {
      for (int32_t c = 0; c < dk; ++c) {
        const float s = scale[c];
        const float q = s > 0.0f ? std::nearbyint(src[t * dk + c] / s) : 0.0f;
        dst[t * dk + c] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
      }
    }
  }
}

void KvSequence::unseal(Layer& L, int32_t id, int32_t fill) {
  const KvGeometry& g = pool_->geometry();
  const int32_t bt = g.block_tokens, dk = g.head_dim_k;
  for (int32_t h = 0; h < g.n_kv_heads; ++h) {
    float* dst = L.k_open.data() + static_cast<size_t>(h) * bt * dk;
    const float* scale = pool_->k_scale(id, h);
    const int8_t* src = pool_->k_i8(id, h);
    for (int32_t t = 0; t < fill; ++t) {
      for (int32_t c = 0; c < dk; ++c) dst[t * dk + c] = src[t * dk + c] * scale[c];
    }
  }
}

void KvSequence::write(int32_t layer, int32_t m, const float* k, const float* v) {
  const KvGeometry& g = pool_->geometry();
  Layer& L = layers_[static_cast<size_t>(layer)];
  const int32_t bt = g.block_tokens, H = g.n_kv_heads, dk = g.head_dim_k, dv = g.head_dim_v;
  const auto& kt = detail::active_kernels();
  int32_t cur_index = -1, id = -1;
  for (int32_t i = 0; i < m; ++i) {
    const int32_t p = size_ + i;
    const int32_t index = p / bt, slot = p % bt;
    if (index != cur_index) {
      id = writable_block(L, index);
      cur_index = index;
    }
    const float* kr = k + static_cast<size_t>(i) * H * dk;
    const float* vr = v + static_cast<size_t>(i) * H * dv;
    for (int32_t h = 0; h < H; ++h) {
      if (g.type == KvType::F16) {
        kt.f32_to_f16(kr + h * dk, pool_->k_f16(id, h) + static_cast<size_t>(slot) * dk, dk);
        kt.f32_to_f16(vr + h * dv, pool_->v_f16(id, h) + static_cast<size_t>(slot) * dv, dv);
      } else {
        std::memcpy(L.k_open.data() + (static_cast<size_t>(h) * bt + slot) * dk, kr + h * dk,
                    sizeof(float) * static_cast<size_t>(dk));
        const float* x = vr + h * dv;
        float amax = 0.0f;
        for (int32_t c = 0; c < dv; ++c) amax = std::max(amax, std::fabs(x[c]));
        const float s = amax / 127.0f;
        pool_->v_scale(id, h)[slot] = s;
        const float inv = s > 0.0f ? 1.0f / s : 0.0f;
        int8_t* dst = pool_->v_i8(id, h) + static_cast<size_t>(slot) * dv;
        for (int32_t c = 0; c < dv; ++c) {
          dst[c] = static_cast<int8_t>(std::clamp(std::nearbyint(x[c] * inv), -127.0f, 127.0f));
        }
      }
    }
    if (g.type == KvType::Int8 && slot == bt - 1) {
      seal(L, id);
      L.sealed = index + 1;
    }
  }
}

void KvSequence::commit(int32_t new_size) {
  size_ = new_size;
  trim_sliding();
}

void KvSequence::trim_sliding() {
  const int32_t bt = pool_->geometry().block_tokens;
  for (auto& L : layers_) {
    if (L.window <= 0) continue;
    const int32_t keep_from = size_ - L.window - keep_extra_;
    if (keep_from <= 0) continue;
    const int32_t n_free = std::min<int32_t>(keep_from / bt, static_cast<int32_t>(L.blocks.size()));
    for (int32_t b = 0; b < n_free; ++b) {
      int32_t& id = L.blocks[static_cast<size_t>(b)];
      if (id >= 0) {
        pool_->release(id);
        id = -1;
      }
    }
  }
}

KvLayerView KvSequence::view(int32_t layer, int32_t n_keys) const {
  const Layer& L = layers_[static_cast<size_t>(layer)];
  KvLayerView v;
  v.pool = pool_.get();
  v.blocks = L.blocks.data();
  v.n_blocks = static_cast<int32_t>(L.blocks.size());
  v.n_keys = n_keys;
  if (pool_->geometry().type == KvType::Int8) v.k_open = L.k_open.data();
  return v;
}

int32_t KvSequence::min_rollback() const {
  const int32_t bt = pool_->geometry().block_tokens;
  int32_t lo = 0;
  for (const auto& L : layers_) {
    if (L.window <= 0) continue;
    int32_t first = 0;  // first block still held
    while (first < static_cast<int32_t>(L.blocks.size()) &&
           L.blocks[static_cast<size_t>(first)] < 0 && first * bt < size_) {
      ++first;
    }
    if (first > 0) lo = std::max(lo, std::min(size_, first * bt + L.window - 1));
  }
  return lo;
}

void KvSequence::rollback(int32_t pos) {
  if (pos < min_rollback() || pos > size_) {
    throw EngineError("rollback to position " + std::to_string(pos) + " is outside [" +
                      std::to_string(min_rollback()) + ", " + std::to_string(size_) +
                      "] (sliding-window layers no longer hold the keys before that)");
  }
  const int32_t bt = pool_->geometry().block_tokens;
  const int32_t keep_blocks = (pos + bt - 1) / bt;
  for (auto& L : layers_) {
    for (size_t b = static_cast<size_t>(keep_blocks); b < L.blocks.size(); ++b) {
      if (L.blocks[b] >= 0) pool_->release(L.blocks[b]);
    }
    if (L.blocks.size() > static_cast<size_t>(keep_blocks)) L.blocks.resize(keep_blocks);
    // Int8: a sealed block that becomes the open block again (also one sealed by writes that
    // were never committed) gets its keys back into staging.
    if (pool_->geometry().type == KvType::Int8) {
      const int32_t index = pos / bt;
      if (pos % bt != 0 && index < L.sealed) {
        const int32_t id = L.blocks[static_cast<size_t>(index)];
        if (id >= 0) unseal(L, id, pos % bt);
      }
      L.sealed = std::min(L.sealed, index);
    }
  }
  size_ = pos;
}

int64_t KvSequence::bytes() const {
  int64_t n = 0, staging = 0;
  for (const auto& L : layers_) {
    for (int32_t id : L.blocks) n += id >= 0 ? 1 : 0;
    staging += static_cast<int64_t>(L.k_open.size() * sizeof(float));
  }
  return n * static_cast<int64_t>(pool_->block_bytes()) + staging;
}

}  // namespace vsynth::kernels
