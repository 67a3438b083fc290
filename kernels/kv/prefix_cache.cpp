#include "kernels/kv/prefix_cache.h"

#include <algorithm>
#include <limits>

#include "base/mix.h"

namespace vsynth::kernels {

PrefixCache::PrefixCache(std::shared_ptr<KvPool> pool, int64_t budget_bytes,
                         std::vector<int32_t> window, int32_t keep_extra, uint64_t identity)
    : pool_(std::move(pool)),
      budget_(budget_bytes),
      window_(std::move(window)),
      keep_extra_(std::max(0, keep_extra)) {
  const KvGeometry& g = pool_->geometry();
  if (static_cast<int32_t>(window_.size()) != g.n_layers) {
    throw EngineError("prefix cache: one window per layer expected");
  }
  if (budget_ <= 0) throw EngineError("prefix cache: the byte budget must be positive");
  uint64_t r = base::splitmix64(identity);
  for (int64_t v : {int64_t{g.n_layers}, int64_t{g.n_kv_heads}, int64_t{g.head_dim_k},
                    int64_t{g.head_dim_v}, int64_t{g.block_tokens}, static_cast<int64_t>(g.type)}) {
    r = base::splitmix64(r ^ static_cast<uint64_t>(v));
  }
  root_ = r;
  counters_.budget_bytes = budget_;
}

PrefixCache::~PrefixCache() {
  for (auto& [key, e] : entries_) {
    for (int32_t id : e.ids) {
      if (id >= 0) pool_->release(id);
    }
  }
}

uint64_t PrefixCache::chain(uint64_t parent, std::span<const TokenId> block) {
  uint64_t h = base::splitmix64(parent);
  for (TokenId t : block) h = base::splitmix64(h ^ static_cast<uint32_t>(t));
  return h;
}

int64_t PrefixCache::entry_bytes(const Entry& e) const {
  const auto held = std::count_if(e.ids.begin(), e.ids.end(), [](int32_t id) { return id >= 0; });
  return static_cast<int64_t>(held) * static_cast<int64_t>(pool_->block_bytes());
}

bool PrefixCache::evictable_locked(const Entry& e) const {
  if (e.children > 0) return false;  // leaves first: a chain is evicted from its tail
  for (int32_t id : e.ids) {
    // Only the cache's own reference left. A block can gain references only through fork (of a
    // sequence that already holds it) or lookup (under mu_), so this stays true while mu_ is held.
    if (id >= 0 && pool_->refcount(id) > 1) return false;
  }
  return true;
}

bool PrefixCache::evict_one_locked() {
  auto victim = entries_.end();
  uint64_t oldest = std::numeric_limits<uint64_t>::max();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.tick < oldest && evictable_locked(it->second)) {
      oldest = it->second.tick;
      victim = it;
    }
  }
  if (victim == entries_.end()) return false;
  const Entry& e = victim->second;
  if (auto p = entries_.find(e.parent); p != entries_.end()) --p->second.children;
  bytes_ -= entry_bytes(e);
  for (int32_t id : e.ids) {
    if (id >= 0) pool_->release(id);
  }
  entries_.erase(victim);
  ++counters_.evictions;
  return true;
}

bool PrefixCache::reclaim() {
  std::lock_guard lock(mu_);
  return evict_one_locked();
}

bool PrefixCache::publish(uint64_t key, uint64_t parent, std::span<const TokenId> tokens,
                          std::span<const int32_t> ids) {
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    const Entry& e = it->second;
    const bool same = e.parent == parent &&
                      std::equal(tokens.begin(), tokens.end(), e.tokens.begin(), e.tokens.end());
    if (same) it->second.tick = ++clock_;
    return same;  // a different chain under the same key: leave it, cache nothing below
  }
  Entry e;
  e.parent = parent;
  e.tokens.assign(tokens.begin(), tokens.end());
  e.ids.assign(ids.begin(), ids.end());
  const int64_t need = entry_bytes(e);
  if (need > budget_) return false;
  // Phase 1: make room under the budget, oldest unreferenced leaves first.
  while (bytes_ + need > budget_) {
    if (!evict_one_locked()) return false;
  }
  // Phase 2: the parent must still be cached (it could have been the leaf just evicted).
  auto p = entries_.end();
  if (parent != root_) {
    p = entries_.find(parent);
    if (p == entries_.end()) return false;
  }
  for (int32_t id : e.ids) {
    if (id >= 0) pool_->retain(id);
  }
  if (p != entries_.end()) ++p->second.children;
  e.tick = ++clock_;
  bytes_ += need;
  entries_.emplace(key, std::move(e));
  return true;
}

PrefixCache::Found PrefixCache::lookup(std::span<const TokenId> prompt, int32_t max_tokens) {
  const int32_t bt = block_tokens();
  const int32_t n_layers = static_cast<int32_t>(window_.size());
  const int32_t limit = std::min<int32_t>(max_tokens, static_cast<int32_t>(prompt.size())) / bt;
  std::lock_guard lock(mu_);

  // Phase 1: the longest chain of verified entries (tokens and parent compared, every global
  // layer's block present).
  std::vector<Entry*> path;
  std::vector<uint64_t> keys;
  uint64_t key = root_;
  for (int32_t i = 0; i < limit; ++i) {
    const auto block = prompt.subspan(static_cast<size_t>(i) * bt, static_cast<size_t>(bt));
    const uint64_t k = chain(key, block);
    auto it = entries_.find(k);
    if (it == entries_.end()) break;
    Entry& e = it->second;
    if (e.parent != key || !std::equal(block.begin(), block.end(), e.tokens.begin())) break;
    bool globals = true;
    for (int32_t l = 0; l < n_layers; ++l) {
      if (window_[static_cast<size_t>(l)] <= 0 && e.ids[static_cast<size_t>(l)] < 0)
        globals = false;
    }
    if (!globals) break;
    path.push_back(&e);
    keys.push_back(k);
    key = k;
  }

  // Phase 2: the longest P = n_blocks * bt whose sliding layers hold [P - window - keep, P).
  const auto first_needed = [&](int32_t l, int32_t n_blocks) {
    const int32_t w = window_[static_cast<size_t>(l)];
    return w <= 0 ? 0 : std::max(0, n_blocks * bt - w - keep_extra_) / bt;
  };
  int32_t n_blocks = static_cast<int32_t>(path.size());
  for (; n_blocks > 0; --n_blocks) {
    bool ok = true;
    for (int32_t l = 0; l < n_layers && ok; ++l) {
      if (window_[static_cast<size_t>(l)] <= 0) continue;
      for (int32_t b = first_needed(l, n_blocks); b < n_blocks && ok; ++b) {
        ok = path[static_cast<size_t>(b)]->ids[static_cast<size_t>(l)] >= 0;
      }
    }
    if (ok) break;
  }

  // Phase 3: hand the blocks over (retained) and refresh their LRU ticks, root first.
  Found f;
  f.tokens = n_blocks * bt;
  f.blocks.assign(static_cast<size_t>(n_layers), std::vector<int32_t>(n_blocks, -1));
  f.keys.assign(keys.begin(), keys.begin() + n_blocks);
  for (int32_t l = 0; l < n_layers; ++l) {
    for (int32_t b = first_needed(l, n_blocks); b < n_blocks; ++b) {
      const int32_t id = path[static_cast<size_t>(b)]->ids[static_cast<size_t>(l)];
      pool_->retain(id);
      f.blocks[static_cast<size_t>(l)][static_cast<size_t>(b)] = id;
    }
  }
  for (int32_t b = 0; b < n_blocks; ++b) path[static_cast<size_t>(b)]->tick = ++clock_;
  ++counters_.lookups;
  counters_.lookup_tokens += static_cast<int64_t>(prompt.size());
  counters_.cached_tokens += f.tokens;
  if (f.tokens > 0) ++counters_.hits;
  return f;
}

PrefixCacheStats PrefixCache::stats() const {
  std::lock_guard lock(mu_);
  PrefixCacheStats s = counters_;
  s.entries = static_cast<int64_t>(entries_.size());
  s.bytes = bytes_;
  return s;
}

}  // namespace vsynth::kernels
