// Automatic prefix caching (vLLM-style) over the paged KV pool: full blocks of evaluated prompts
// are kept, by reference, under a chain hash of every token before them, so a later sequence
// whose prompt starts with the same tokens adopts those blocks instead of recomputing them.
//
// One entry = one block index of one token chain, every layer's block of it:
//   key_i = H(key_{i-1}, tokens of block i)   (key_{-1} = H(KV geometry, model identity))
// A hit also compares the entry's tokens and its parent key, so a 64-bit collision can make a
// lookup shorter, never wrong.
//
// Sliding-window layers only need the keys of the last `window` positions: an entry may lack a
// sliding layer's block (-1) when the publishing sequence had already released it. A prefix of
// P tokens is usable only when every sliding layer holds every block covering
// [P - window - keep_extra, P) (the keep_extra margin keeps the adopting sequence's rollback
// guarantee equal to a cold one's); global layers need every block of [0, P).
//
// Memory: the cache holds at most `budget_bytes` of blocks (each counted once, whether or not a
// live sequence shares it). Entries no sequence references are kept in LRU order and evicted
// leaf first (an entry with cached children is never evicted before them): when publishing
// would pass the budget, and when the KV pool has no free block (the pool calls reclaim()).
// Publishing never throws: what does not fit is simply not cached.
//
// Thread safety: every member is safe to call from any thread (one mutex; it is taken before
// the pool's, never after).
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "kernels/kv/kv_cache.h"
#include "kernels/tokenizer/tokenizer.h"

namespace vsynth::kernels {

struct PrefixCacheStats {
  int64_t lookups = 0;        // new_sequence_with_prefix calls
  int64_t hits = 0;           // lookups that reused at least one block
  int64_t lookup_tokens = 0;  // prompt tokens of those lookups
  int64_t cached_tokens = 0;  // prompt tokens served from the cache
  int64_t evictions = 0;      // entries (one block index, every layer) evicted
  int64_t entries = 0;        // entries held now
  int64_t bytes = 0;          // bytes of the blocks held now
  int64_t budget_bytes = 0;
  double hit_rate() const { return lookups > 0 ? static_cast<double>(hits) / lookups : 0.0; }
};

class PrefixCache {
 public:
  // window[l] > 0 for sliding layers; keep_extra as KvSequence's. `identity` separates models
  // sharing nothing but a geometry (mixed into the root key with the pool's geometry).
  PrefixCache(std::shared_ptr<KvPool> pool, int64_t budget_bytes, std::vector<int32_t> window,
              int32_t keep_extra, uint64_t identity);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  int32_t block_tokens() const { return pool_->geometry().block_tokens; }
  int64_t budget_bytes() const { return budget_; }
  // The root of every chain (the key "before" block 0).
  uint64_t root() const { return root_; }
  // key_i from key_{i-1} and block i's tokens (block_tokens() of them).
  static uint64_t chain(uint64_t parent, std::span<const TokenId> block);

  // Registers block `index` of a chain (key, parent key, its tokens, one id per layer, -1 where
  // the layer no longer holds it), retaining the blocks. No-op when the key is already cached;
  // false when it could not be cached (budget full of referenced blocks, or a key collision),
  // after which later blocks of the same chain are not published either.
  bool publish(uint64_t key, uint64_t parent, std::span<const TokenId> tokens,
               std::span<const int32_t> ids);

  // The longest usable cached prefix of `prompt` in whole blocks, at most max_tokens tokens.
  // blocks[l] are layer l's ids for block indices [0, tokens / block_tokens) (-1 for sliding
  // blocks outside the window), each already retained for the caller; keys the chain keys.
  struct Found {
    int32_t tokens = 0;
    std::vector<std::vector<int32_t>> blocks;
    std::vector<uint64_t> keys;
  };
  Found lookup(std::span<const TokenId> prompt, int32_t max_tokens);

  // Evicts the least recently used unreferenced leaf entry. False when there is none.
  bool reclaim();

  PrefixCacheStats stats() const;

 private:
  struct Entry {
    uint64_t parent = 0;
    std::vector<TokenId> tokens;
    std::vector<int32_t> ids;  // per layer, -1 = not held
    uint64_t tick = 0;         // last publish or hit (LRU)
    int32_t children = 0;      // cached entries whose parent this is
  };
  bool evict_one_locked();
  bool evictable_locked(const Entry& e) const;
  int64_t entry_bytes(const Entry& e) const;

  std::shared_ptr<KvPool> pool_;
  int64_t budget_;
  std::vector<int32_t> window_;
  int32_t keep_extra_;
  uint64_t root_;

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> entries_;
  uint64_t clock_ = 0;
  int64_t bytes_ = 0;
  PrefixCacheStats counters_;
};

}  // namespace vsynth::kernels
