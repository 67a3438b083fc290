// The prefix cache (kernels/kv/prefix_cache.h) through the engine API: publish and hit, the
// partial tail never shared, diverging prompts, LRU eviction under a budget, the pool evicting
// before it runs out, concurrent sequences, and the sliding-window rule. "Cold" references are
// fresh sequences that evaluate the prompt in the same two pieces (cached part, then the rest),
// which take the same code path: their logits must be equal bit for bit.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <thread>

#include "kernels/kv/prefix_cache.h"
#include "tests/kernels/engine_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;

namespace {

constexpr int32_t kBt = 32;  // the engine's block tokens

std::vector<int32_t> some_tokens(size_t n, int vocab, uint32_t seed) {
  std::vector<int32_t> t(n);
  uint32_t x = seed;
  for (auto& v : t) {
    x = x * 1664525u + 1013904223u;
    v = 4 + static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab - 4));
  }
  return t;
}

std::vector<int32_t> concat(std::span<const int32_t> a, std::span<const int32_t> b) {
  std::vector<int32_t> r(a.begin(), a.end());
  r.insert(r.end(), b.begin(), b.end());
  return r;
}

std::vector<float> copy(std::span<const float> s) {
  return {s.begin(), s.end()};
}

// Tiny gemma3 (6 layers, 5 sliding with window 64), F16 or INT8 KV; entry = 6 blocks.
std::shared_ptr<Model> tiny_cached(int64_t cache_bytes, KvType kv = KvType::F16,
                                   const std::string& arch = "gemma3", int64_t pool_tokens = 0) {
  TinySpec s;
  s.arch = arch;
  ModelOptions o;
  o.kv_type = kv;
  o.threads = 2;
  o.context_length = 2048;
  o.rollback_window = 32;
  o.kv_pool_tokens = pool_tokens;
  o.prefix_cache_bytes = cache_bytes;
  return Model::load(write_tiny_model(s, "tiny_prefix_" + arch + ".gguf"), o);
}

// Bytes of one cache entry (one block index, every layer) of a model.
int64_t entry_bytes(const Model& m) {
  const KvStats s = m.kv_stats();
  return s.bytes_capacity / s.blocks_capacity * m.config().n_layers;
}

// Prefills `prompt` through the cache and decodes `steps` greedy tokens; every logits row.
struct Run {
  int32_t cached = 0;
  std::vector<std::vector<float>> rows;
};

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

void decode_greedy(Sequence& s, std::span<const float> last, int steps, Run& r) {
  r.rows.push_back(copy(last));
  for (int i = 0; i < steps; ++i) r.rows.push_back(copy(s.decode(argmax(r.rows.back()))));
}

Run cached_run(Model& m, std::span<const int32_t> prompt, int steps = 4) {
  Run r;
  PrefixUse use;
  auto s = m.new_sequence_with_prefix(prompt, &use);
  REQUIRE(use.prompt_tokens == static_cast<int32_t>(prompt.size()));
  REQUIRE(s->position() == use.cached_tokens);
  r.cached = use.cached_tokens;
  decode_greedy(*s, s->prefill(prompt.subspan(static_cast<size_t>(s->position()))), steps, r);
  return r;
}

// The cold reference: a plain sequence, the prompt in two pieces split at `split`.
Run cold_run(Model& m, std::span<const int32_t> prompt, int32_t split, int steps = 4) {
  Run r;
  auto s = m.new_sequence();
  if (split > 0) s->prefill(prompt.first(static_cast<size_t>(split)));
  decode_greedy(*s, s->prefill(prompt.subspan(static_cast<size_t>(split))), steps, r);
  r.cached = split;
  return r;
}

}  // namespace

TEST_CASE("prefix cache: a published prompt is a hit and matches a cold prefill", "[engine]") {
  for (const std::string arch : {"gemma3", "llama", "qwen2"}) {
    for (KvType kv : {KvType::F16, KvType::Int8}) {
      INFO(arch << (kv == KvType::F16 ? " f16" : " int8"));
      auto m = tiny_cached(int64_t{1} << 20, kv, arch);
      const auto prompt = some_tokens(200, 64, 11);
      const Run first = cached_run(*m, prompt);
      CHECK(first.cached == 0);  // nothing published yet
      const Run second = cached_run(*m, prompt);
      CHECK(second.cached == 192);  // 6 of the 6.25 blocks
      const Run cold = cold_run(*m, prompt, 192);
      CHECK(second.rows == cold.rows);
      const PrefixStats st = m->kv_stats().prefix;
      CHECK(st.lookups == 2);
      CHECK(st.hits == 1);
      CHECK(st.lookup_tokens == 400);
      CHECK(st.cached_tokens == 192);
      CHECK(st.hit_rate() == Approx(0.5));
      CHECK(st.bytes == 6 * entry_bytes(*m));  // each full block once, every layer
    }
  }
}

TEST_CASE("prefix cache: the synthetic golden models reuse a prefix exactly", "[engine]") {
  for (const std::string arch : {"llama", "qwen2"}) {
    INFO(arch);
    const auto path = std::filesystem::path(VSYNTH_SOURCE_DIR) / ".cache/golden-models" /
                      ("model_" + arch + "_synth.gguf");
    REQUIRE(std::filesystem::exists(path));
    ModelOptions o;
    o.threads = 2;
    o.context_length = 1024;
    o.prefix_cache_bytes = int64_t{64} << 20;
    auto m = Model::load(path, o);
    const auto prompt = some_tokens(300, static_cast<int>(m->config().vocab_size), 5);
    cached_run(*m, prompt, 0);
    const Run warm = cached_run(*m, prompt);
    CHECK(warm.cached == 288);
    CHECK(warm.rows == cold_run(*m, prompt, 288).rows);
  }
}

TEST_CASE("prefix cache: the partial last block is never shared", "[engine]") {
  auto m = tiny_cached(int64_t{1} << 20, KvType::Int8);
  const auto prompt = some_tokens(100, 64, 12);  // 3 full blocks + 4 tokens
  cached_run(*m, prompt, 0);
  CHECK(m->kv_stats().prefix.bytes == 3 * entry_bytes(*m));
  const auto longer = concat(prompt, some_tokens(40, 64, 13));
  const Run r = cached_run(*m, longer);
  CHECK(r.cached == 96);  // not 100: the 4-token tail was never published
  CHECK(r.rows == cold_run(*m, longer, 96).rows);
  // A prompt of exactly one block keeps its last token to evaluate: nothing to reuse.
  const Run one = cached_run(*m, std::span(prompt).first(32));
  CHECK(one.cached == 0);
  CHECK(cached_run(*m, std::span(prompt).first(33)).cached == 32);
}

TEST_CASE("prefix cache: a diverging prompt reuses only the common full blocks", "[engine]") {
  auto m = tiny_cached(int64_t{1} << 20);
  const auto a = some_tokens(200, 64, 14);
  cached_run(*m, a, 0);
  auto b = concat(std::span(a).first(150), some_tokens(60, 64, 15));  // differs from token 150
  const Run r = cached_run(*m, b);
  CHECK(r.cached == 128);  // blocks 0..3; block 4 holds tokens 128..159, 150.. differ
  CHECK(r.rows == cold_run(*m, b, 128).rows);
  // A different first token shares nothing, even with the same tokens after it.
  auto c = a;
  c[0] = c[0] == 5 ? 6 : 5;
  CHECK(cached_run(*m, c).cached == 0);
}

TEST_CASE("prefix cache: eviction under a tiny budget is LRU, leaves first", "[engine]") {
  auto probe = tiny_cached(int64_t{1} << 20);
  const int64_t entry = entry_bytes(*probe);
  auto m = tiny_cached(5 * entry);  // room for 5 entries
  const auto A = some_tokens(97, 64, 21), C = some_tokens(33, 64, 22);
  const auto D = some_tokens(65, 64, 23);
  cached_run(*m, A, 0);  // A0 A1 A2
  cached_run(*m, C, 0);  // C0: 4 entries
  CHECK(m->kv_stats().prefix.bytes == 4 * entry);
  CHECK(cached_run(*m, A, 0).cached == 96);  // touches A: C0 is now the oldest leaf
  cached_run(*m, D, 0);                      // D0 D1: one entry must go
  PrefixStats st = m->kv_stats().prefix;
  CHECK(st.evictions == 1);
  CHECK(st.bytes == 5 * entry);
  CHECK(cached_run(*m, C, 0).cached == 0);  // C0 was the one
  // Republishing C0 evicts the oldest leaf again: A2 (A's chain loses its tail, not its root),
  // not D1, which was used after it.
  CHECK(m->kv_stats().prefix.evictions == 2);
  CHECK(cached_run(*m, D, 0).cached == 64);
  CHECK(cached_run(*m, A, 0).cached == 64);
}

TEST_CASE("prefix cache: a full budget never throws, and the pool evicts before it fails",
          "[engine]") {
  auto probe = tiny_cached(int64_t{1} << 20);
  const int64_t entry = entry_bytes(*probe);
  SECTION("blocks held by live sequences are not evicted, new ones are not cached") {
    auto m = tiny_cached(4 * entry);
    const auto A = some_tokens(129, 64, 31);  // 4 blocks: the whole budget
    PrefixUse use;
    auto live = m->new_sequence_with_prefix(A, &use);
    live->prefill(A);
    const auto B = some_tokens(129, 64, 32);
    CHECK_NOTHROW(cached_run(*m, B, 0));
    CHECK(m->kv_stats().prefix.evictions == 0);
    CHECK(cached_run(*m, B, 0).cached == 0);  // nothing of B fit
    CHECK(cached_run(*m, A, 0).cached == 128);
  }
  SECTION("a sequence needing the cache's blocks gets them; past the total it fails clearly") {
    // Sequences alone may hold 128 tokens per layer (4 blocks x 6 layers); the cache 5 entries.
    auto m = tiny_cached(5 * entry, KvType::F16, "llama", /*pool_tokens=*/128);
    for (uint32_t seed = 40; seed < 45; ++seed) cached_run(*m, some_tokens(33, 64, seed), 0);
    CHECK(m->kv_stats().prefix.bytes == 5 * entry);
    const auto big = some_tokens(170, 64, 50);  // 6 blocks x 6 layers > the 24 free ones
    const Run r = cached_run(*m, big);
    CHECK(m->kv_stats().prefix.evictions > 0);
    CHECK(r.rows == cold_run(*m, big, 0).rows);
    auto s = m->new_sequence();
    CHECK_THROWS_WITH(s->prefill(some_tokens(400, 64, 51)),
                      Catch::Contains("KV pool exhausted") &&
                          Catch::Contains("after evicting every unreferenced cached prefix block"));
  }
}

TEST_CASE("prefix cache: a budget below one request's need is a clear error", "[engine]") {
  auto probe = tiny_cached(int64_t{1} << 20);
  const int64_t entry = entry_bytes(*probe);
  auto m = tiny_cached(2 * entry);
  const auto prompt = some_tokens(200, 64, 61);  // 6 blocks
  PrefixUse use;
  CHECK_THROWS_WITH(m->new_sequence_with_prefix(prompt, &use),
                    Catch::Contains("a prompt of 200 tokens needs " + std::to_string(6 * entry)) &&
                        Catch::Contains("over its budget of " + std::to_string(2 * entry)));
  CHECK_THROWS_WITH(tiny_cached(entry - 1), Catch::Contains("below one cached block of every "
                                                            "layer"));
  CHECK_THROWS_AS(tiny_cached(-1), EngineError);
  // Off: new_sequence_with_prefix is new_sequence.
  auto off = tiny_cached(0);
  auto s = off->new_sequence_with_prefix(prompt, &use);
  CHECK(s->position() == 0);
  CHECK(use.cached_tokens == 0);
  CHECK(off->kv_stats().prefix.lookups == 0);
}

TEST_CASE("prefix cache: sequences on two threads publish and look up the same prefix",
          "[engine]") {
  auto m = tiny_cached(int64_t{4} << 20);
  const auto common = some_tokens(160, 64, 71);
  std::vector<std::vector<int32_t>> prompts;
  for (uint32_t i = 0; i < 8; ++i) prompts.push_back(concat(common, some_tokens(40, 64, 80 + i)));
  std::vector<Run> got(prompts.size());
  {
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        for (size_t i = t; i < prompts.size(); i += 2) got[i] = cached_run(*m, prompts[i]);
      });
    }
    for (auto& th : threads) th.join();
  }
  int hits = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    INFO("prompt " << i << " reused " << got[i].cached);
    CHECK(got[i].cached % kBt == 0);
    CHECK(got[i].cached <= 160);
    hits += got[i].cached > 0;
    CHECK(got[i].rows == cold_run(*m, prompts[i], got[i].cached).rows);
  }
  CHECK(hits >= 6);  // at most the first prompt of each thread finds nothing
}

TEST_CASE("prefix cache: sliding layers are reused only where they still hold the window",
          "[engine]") {
  // Window 64 + rollback margin 32: a prefix of P tokens needs every sliding layer's blocks of
  // [P - 96, P).
  auto m = tiny_cached(int64_t{4} << 20);
  const auto t = some_tokens(301, 64, 91);
  SECTION("a long prompt prefilled at once keeps every block: reused past the window") {
    auto s = m->new_sequence();
    s->prefill(t);  // one chunk: published before its sliding blocks are released
    auto b = concat(std::span(t).first(250), some_tokens(30, 64, 92));
    const Run r = cached_run(*m, b);
    CHECK(r.cached == 224);
    CHECK(r.rows == cold_run(*m, b, 224).rows);
  }
  SECTION("blocks a sliding layer released before publishing make shorter prefixes unusable") {
    auto s = m->new_sequence();
    s->prefill(std::span(t).first(1));
    for (size_t i = 1; i < 300; ++i) s->decode(t[i]);  // decode does not publish
    s->prefill(std::span(t).subspan(300, 1));  // publishes blocks 0..8 as each layer holds them
    // Sliding layers released blocks 0..5 while decoding (positions < 300 - 96 = 204).
    const auto diverging = concat(std::span(t).first(200), some_tokens(50, 64, 93));
    CHECK(cached_run(*m, diverging).cached == 0);  // blocks 0..5 match, sliding ones are gone
    CHECK(m->kv_stats().prefix.hits == 0);
    const auto full = concat(t, some_tokens(20, 64, 94));
    const Run r = cached_run(*m, full);
    CHECK(r.cached == 288);  // [288 - 96, 288) = blocks 6..8, still held when published
    // The cached blocks were computed by decode steps, the cold ones by one prefill chunk:
    // different kernels, so the engine's chunking tolerance applies.
    const Run cold = cold_run(*m, full, 288);
    REQUIRE(r.rows.size() == cold.rows.size());
    for (size_t i = 0; i < r.rows.size(); ++i) {
      for (size_t j = 0; j < r.rows[i].size(); ++j) {
        REQUIRE(r.rows[i][j] == Approx(cold.rows[i][j]).margin(2e-3));
      }
    }
  }
}

TEST_CASE("prefix cache: gemma3 reuses a prefix longer than its 512-token window",
          "[engine][model][slow]") {
  if (!vsynth::test::have_default_model()) return;
  ModelOptions o;
  o.threads = 2;
  o.context_length = 2048;
  o.prefix_cache_bytes = int64_t{64} << 20;
  auto m = Model::load(vsynth::test::default_model(), o);
  REQUIRE(m->config().sliding_window == 512);
  // ~1,000 tokens of real code: this engine's own source.
  std::ifstream in(std::filesystem::path(VSYNTH_SOURCE_DIR) / "kernels/engine.cpp");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  std::vector<int32_t> all = m->tokenizer().encode(text);
  REQUIRE(all.size() > 1100);
  const std::vector<int32_t> a(all.begin(), all.begin() + 1000);
  cached_run(*m, a, 0);
  // Shares a's first 900 tokens (past window 512 + rollback margin 256), then differs.
  auto b = concat(std::span(a).first(900), std::span(all).subspan(1000, 60));
  const Run r = cached_run(*m, b, 2);
  CHECK(r.cached == 896);
  CHECK(r.rows == cold_run(*m, b, 896, 2).rows);
  const PrefixStats st = m->kv_stats().prefix;
  CHECK(st.hits == 1);
  CHECK(st.cached_tokens == 896);
}

TEST_CASE("prefix cache: a key collision shortens a reuse, never serves other tokens' blocks",
          "[engine]") {
  KvGeometry g;
  g.n_layers = 2;
  g.n_kv_heads = 1;
  g.head_dim_k = g.head_dim_v = 8;
  g.block_tokens = kBt;
  auto pool = std::make_shared<KvPool>(g, 64);
  PrefixCache cache(pool, int64_t{1} << 20, {0, 0}, 0, /*identity=*/42);
  const auto a = some_tokens(100, 64, 101), b = some_tokens(100, 64, 102);
  const auto block = [](const std::vector<int32_t>& t, int i) {
    return std::span(t).subspan(static_cast<size_t>(i) * kBt, kBt);
  };
  const int32_t ids[2] = {pool->allocate(), pool->allocate()};
  // Block 0 of `b` stored under the key of `a`'s block 0, as a 64-bit collision would.
  const uint64_t ka = PrefixCache::chain(cache.root(), block(a, 0));
  REQUIRE(cache.publish(ka, cache.root(), block(b, 0), ids));
  const PrefixCache::Found f = cache.lookup(a, 99);
  CHECK(f.tokens == 0);  // the tokens differ: not a hit
  // `a` itself cannot be published under the taken key (the engine then stops publishing that
  // sequence's chain). Even a block cached below the colliding entry is never reached: the
  // walk stops at the entry whose tokens differ.
  CHECK_FALSE(cache.publish(ka, cache.root(), block(a, 0), ids));
  REQUIRE(cache.publish(PrefixCache::chain(ka, block(a, 1)), ka, block(a, 1), ids));
  CHECK(cache.lookup(a, 99).tokens == 0);
  // A parent that is not cached is refused.
  const uint64_t kb = PrefixCache::chain(cache.root(), block(b, 0));
  CHECK_FALSE(
      cache.publish(PrefixCache::chain(kb, block(b, 1)), /*parent=*/12345, block(b, 1), ids));
  CHECK(cache.stats().entries == 2);
  CHECK(pool->refcount(ids[0]) == 3);  // ours + the two entries'
  pool->release(ids[0]);
  pool->release(ids[1]);
}

TEST_CASE(
    "prefix cache: a sequence rolling back into adopted blocks never changes the cached "
    "ones",
    "[engine]") {
  for (KvType kv : {KvType::F16, KvType::Int8}) {
    INFO((kv == KvType::F16 ? "f16" : "int8"));
    auto m = tiny_cached(int64_t{1} << 20, kv);
    const auto prompt = some_tokens(200, 64, 111);
    cached_run(*m, prompt, 0);
    const Run before = cached_run(*m, prompt);
    REQUIRE(before.cached == 192);
    {
      PrefixUse use;
      auto s = m->new_sequence_with_prefix(prompt, &use);
      REQUIRE(use.cached_tokens == 192);
      // The adopted window allows as much rollback as a cold sequence at 192 would: to 159.
      CHECK(s->min_rollback_position() == 3 * 32 + 64 - 1);
      s->rollback(170);                      // inside adopted block 5 (int8: unsealed)
      s->prefill(some_tokens(80, 64, 112));  // writes over positions 170..249
      CHECK(s->position() == 250);
    }
    // The cached blocks are as they were: the same prompt gives the same logits again.
    const Run after = cached_run(*m, prompt);
    CHECK(after.cached == 192);
    CHECK(after.rows == before.rows);
  }
}
