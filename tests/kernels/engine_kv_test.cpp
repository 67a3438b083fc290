// Engine behaviour on tiny random models written with our GgufWriter: config and tensor errors,
// fork / copy-on-write, rollback, sliding-window block release, KV accounting, INT8 KV, bad
// input. Exact-equality checks compare two evaluations that take the same code path.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <numeric>

#include "tests/kernels/engine_test_util.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;

namespace {

std::vector<int32_t> some_tokens(size_t n, int vocab, uint32_t seed = 3) {
  std::vector<int32_t> t(n);
  uint32_t x = seed;
  for (auto& v : t) {
    x = x * 1664525u + 1013904223u;
    v = 4 + static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab - 4));
  }
  return t;
}

std::vector<float> copy(std::span<const float> s) {
  return {s.begin(), s.end()};
}

std::shared_ptr<Model> tiny(const TinySpec& spec, KvType kv = KvType::F16, int64_t pool = 0) {
  ModelOptions o;
  o.kv_type = kv;
  o.threads = 2;
  o.context_length = 2048;
  o.kv_pool_tokens = pool;
  return Model::load(write_tiny_model(spec, "tiny_" + spec.arch + ".gguf"), o);
}

std::string load_error(const TinySpec& spec) {
  try {
    tiny(spec);
  } catch (const EngineError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("engine: config of each architecture", "[engine]") {
  for (const std::string arch : {"gemma3", "llama", "qwen2"}) {
    TinySpec s;
    s.arch = arch;
    auto m = tiny(s);
    const ModelConfig& c = m->config();
    INFO(arch);
    CHECK(c.d_model == 64);
    CHECK(c.n_layers == 6);
    CHECK(c.n_heads == 2);
    CHECK(c.n_kv_heads == 1);
    CHECK(c.head_dim_k == 32);
    CHECK(c.vocab_size == 64);
    CHECK(c.tied_output == (arch != "llama"));
    CHECK(c.qkv_bias == (arch == "qwen2"));
    CHECK(c.qk_norm == (arch == "gemma3"));
    CHECK(c.rope_kind == (arch == "llama" ? RopeKind::Norm : RopeKind::Neox));
    CHECK(c.ffn_act == (arch == "gemma3" ? FfnActivation::GeluTanh : FfnActivation::Silu));
    if (arch == "gemma3") {
      CHECK(c.embed_scale == Approx(8.0f));
      CHECK(c.sliding_window == 64);
      CHECK(c.rope_base_sliding == 10000.0f);
      CHECK(c.rope_base == 1e6f);
      for (int l = 0; l < 6; ++l) CHECK(c.layer_sliding[static_cast<size_t>(l)] == (l % 6 < 5));
    } else {
      CHECK(c.embed_scale == 1.0f);
      CHECK(c.sliding_window == 0);
    }
    CHECK(c.attn_scale == Approx(1.0f / std::sqrt(32.0f)));
  }
}

TEST_CASE("engine: unknown architecture and bad tensors are reported at once", "[engine]") {
  TinySpec s;
  s.arch = "mamba";
  CHECK_THAT(load_error(s), Catch::Contains("architecture 'mamba' is not supported") &&
                                Catch::Contains("gemma3, llama, qwen2"));

  TinySpec t;
  t.skip = {"blk.1.attn_k.weight", "output_norm.weight"};
  t.reshape = {{"blk.3.ffn_up.weight", {64, 100}}};
  const std::string e = load_error(t);
  CHECK_THAT(e, Catch::Contains("3 tensor problem(s)"));
  CHECK_THAT(e, Catch::Contains("blk.1.attn_k.weight: missing (expected [64, 32])"));
  CHECK_THAT(e, Catch::Contains("output_norm.weight: missing (expected [64])"));
  CHECK_THAT(e, Catch::Contains("blk.3.ffn_up.weight: expected [64, 128], found [64, 100]"));
}

TEST_CASE("engine: prefill, prefill_all and decode agree", "[engine]") {
  auto m = tiny({});
  const auto toks = some_tokens(40, 64);
  auto a = m->new_sequence();
  const auto all = copy(a->prefill_all(toks));
  REQUIRE(all.size() == 40 * 64);
  CHECK(a->position() == 40);
  auto b = m->new_sequence();
  const auto last = copy(b->prefill(toks));
  for (size_t i = 0; i < 64; ++i) CHECK(last[i] == all[39 * 64 + i]);
  auto c = m->new_sequence();
  std::vector<float> dec;
  for (int32_t t : toks) dec = copy(c->decode(t));
  for (size_t i = 0; i < 64; ++i) CHECK(dec[i] == Approx(all[39 * 64 + i]).margin(2e-3));
  CHECK(std::equal(c->tokens().begin(), c->tokens().end(), toks.begin()));
}

TEST_CASE("engine: fork shares blocks and copies the partial block on write", "[engine]") {
  for (KvType kv : {KvType::F16, KvType::Int8}) {
    auto m = tiny({}, kv);
    const auto toks = some_tokens(70, 64);  // 2 full blocks of 32 and a partial one
    auto a = m->new_sequence();
    a->prefill(toks);
    const int64_t used = m->kv_stats().blocks_used;
    CHECK(used == 6 * 3);  // window 64 + rollback margin 256: nothing released yet
    auto b = a->fork();
    CHECK(m->kv_stats().blocks_used == used);  // shared
    CHECK(b->position() == 70);
    const auto la = copy(a->decode(9));
    CHECK(m->kv_stats().blocks_used == used + 6);  // a copied its partial block, per layer
    const auto lb = copy(b->decode(9));
    CHECK(m->kv_stats().blocks_used == used + 6);  // b now owns the original alone
    CHECK(la == lb);
    // Diverge: different tokens give different logits; a's history is untouched by b.
    const auto la2 = copy(a->decode(11));
    b->decode(12);
    auto c = m->new_sequence();
    c->prefill(toks);
    c->decode(9);
    CHECK(copy(c->decode(11)) == la2);
    b.reset();
    c.reset();
    CHECK(m->kv_stats().blocks_used == 6 * 3);
    CHECK(m->kv_stats().bytes_used ==
          m->kv_stats().blocks_used *
              static_cast<int64_t>(m->kv_stats().bytes_capacity / m->kv_stats().blocks_capacity));
  }
}

TEST_CASE("engine: rollback restores the state before the tokens", "[engine]") {
  auto m = tiny({});
  const auto toks = some_tokens(50, 64);
  auto s = m->new_sequence();
  s->prefill(toks);
  std::vector<std::vector<float>> first;
  for (int i = 0; i < 20; ++i) first.push_back(copy(s->decode(5 + i)));  // crosses 64
  CHECK(s->position() == 70);
  s->rollback(50);
  CHECK(s->position() == 50);
  CHECK(s->tokens().size() == 50);
  CHECK(s->last_logits().empty());
  for (int i = 0; i < 20; ++i) CHECK(copy(s->decode(5 + i)) == first[static_cast<size_t>(i)]);
  CHECK_THROWS_AS(s->rollback(71), EngineError);
  s->rollback(0);
  CHECK(s->position() == 0);
  CHECK(m->kv_stats().blocks_used == 0);
}

TEST_CASE("engine: INT8 KV rollback into a sealed block stays close", "[engine]") {
  auto m = tiny({}, KvType::Int8);
  const auto toks = some_tokens(60, 64);
  auto s = m->new_sequence();
  s->prefill(toks);
  std::vector<std::vector<float>> first;
  for (int i = 0; i < 10; ++i) first.push_back(copy(s->decode(5 + i)));  // seals block 1 at 64
  s->rollback(60);  // block 1 is open again: its keys come back from int8
  for (int i = 0; i < 10; ++i) {
    const auto again = copy(s->decode(5 + i));
    float maxdiff = 0;
    for (size_t j = 0; j < again.size(); ++j) {
      maxdiff = std::max(maxdiff, std::fabs(again[j] - first[static_cast<size_t>(i)][j]));
    }
    CHECK(maxdiff < 0.05f);
    CHECK(argmax(again) == argmax(first[static_cast<size_t>(i)]));
  }
}

TEST_CASE("engine: sliding layers release blocks outside window + rollback margin", "[engine]") {
  ModelOptions o;
  o.threads = 2;
  o.context_length = 2048;
  o.rollback_window = 32;
  auto m = Model::load(write_tiny_model({}, "tiny_gemma3.gguf"), o);
  auto s = m->new_sequence();
  const auto toks = some_tokens(1000, 64);
  s->prefill(toks);
  // Global layer: ceil(1000 / 32) = 32 blocks. Each of 5 sliding layers keeps positions
  // >= 1000 - 64 - 32 = 904 (block-aligned down to 896): blocks 28..31 = 4.
  CHECK(m->kv_stats().blocks_used == 32 + 5 * 4);
  CHECK(s->kv_bytes() >= m->kv_stats().bytes_used);
  const int32_t lo = s->min_rollback_position();
  CHECK(lo == 896 + 64 - 1);
  CHECK(lo <= 1000 - 32);
  CHECK_THROWS_AS(s->rollback(lo - 1), EngineError);
  // Rolled back and replayed, the logits match a fresh evaluation through the same chunks.
  const auto ref = copy(s->decode(7));
  s->rollback(lo);
  std::vector<int32_t> replay(toks.begin() + lo, toks.end());
  s->prefill(replay);
  CHECK(copy(s->decode(7)) == ref);
}

TEST_CASE("engine: long sequences stay consistent across prefill chunks and windows", "[engine]") {
  auto m = tiny({});
  const auto toks = some_tokens(600, 64);  // > the 512-token prefill chunk
  auto a = m->new_sequence();
  const auto all = copy(a->prefill_all(toks));
  auto b = m->new_sequence();
  for (size_t i = 0; i < toks.size(); i += 100) {
    const auto part = copy(b->prefill_all(std::span(toks).subspan(i, 100)));
    for (size_t j = 0; j < part.size(); ++j) {
      REQUIRE(part[j] == Approx(all[i * 64 + j]).margin(2e-3));
    }
  }
}

TEST_CASE("engine: bad input is rejected and leaves the sequence usable", "[engine]") {
  auto m = tiny({}, KvType::F16, /*pool=*/160);
  auto s = m->new_sequence();
  CHECK_THROWS_AS(s->prefill(std::vector<int32_t>{}), EngineError);
  CHECK_THROWS_WITH(s->decode(64), Catch::Contains("outside the vocabulary [0, 64)"));
  CHECK_THROWS_WITH(s->decode(-1), Catch::Contains("token id -1"));
  s->prefill(some_tokens(100, 64));
  // A pool of 160 tokens (5 blocks) per layer: the fork copies its partial block and then needs
  // a sixth block, which does not exist.
  auto f = s->fork();
  CHECK_THROWS_WITH(f->prefill(some_tokens(40, 64, 9)), Catch::Contains("KV pool exhausted"));
  CHECK(f->position() == 100);
  const auto again = copy(f->decode(5));
  f.reset();
  CHECK(copy(s->decode(5)) == again);
  ModelOptions o;
  o.context_length = 16;
  auto small = Model::load(write_tiny_model({}, "tiny_gemma3.gguf"), o);
  auto q = small->new_sequence();
  CHECK_THROWS_WITH(q->prefill(some_tokens(17, 64)), Catch::Contains("past the context length 16"));
  CHECK(q->position() == 0);
}

#include "kernels/cpu/vec_kernels.h"

TEST_CASE("engine: vector kernels of the active CPU path match the portable ones", "[engine]") {
  const vec::Kernels& a = vec::vec_kernels();
  const vec::Kernels& s = vec::vec_kernels_scalar();
  uint32_t x = 99;
  const auto rnd = [&] {
    x = x * 1664525u + 1013904223u;
    return static_cast<float>(x >> 8) / static_cast<float>(1u << 23) - 1.0f;
  };
  const int R = 6, T = 13, d = 256;
  std::vector<float> Q(R * d), K(T * d), P(R * T), scale(d), vscale(T), q1(R * d), q2(R * d);
  std::vector<int8_t> K8(T * d);
  for (auto& v : Q) v = rnd();
  for (auto& v : K) v = rnd();
  for (auto& v : P) v = std::fabs(rnd());
  for (auto& v : scale) v = 0.01f + std::fabs(rnd());
  for (auto& v : vscale) v = 0.01f + std::fabs(rnd());
  for (auto& v : K8) v = static_cast<int8_t>(rnd() * 127.0f);
  std::vector<float> S1(R * T), S2(R * T);
  a.scores(Q.data(), R, d, K.data(), T, d, d, S1.data(), T);
  s.scores(Q.data(), R, d, K.data(), T, d, d, S2.data(), T);
  for (int i = 0; i < R * T; ++i)
    CHECK(S1[static_cast<size_t>(i)] == Approx(S2[static_cast<size_t>(i)]).margin(1e-4));
  a.scores_i8(Q.data(), R, d, K8.data(), T, d, scale.data(), d, q1.data(), S1.data(), T);
  s.scores_i8(Q.data(), R, d, K8.data(), T, d, scale.data(), d, q2.data(), S2.data(), T);
  for (int i = 0; i < R * T; ++i)
    CHECK(S1[static_cast<size_t>(i)] == Approx(S2[static_cast<size_t>(i)]).margin(1e-2));
  std::vector<float> A1(R * d, 0.5f), A2(R * d, 0.5f), ps(T);
  a.accumulate(A1.data(), R, d, P.data(), T, K.data(), T, d, d);
  s.accumulate(A2.data(), R, d, P.data(), T, K.data(), T, d, d);
  for (int i = 0; i < R * d; ++i)
    CHECK(A1[static_cast<size_t>(i)] == Approx(A2[static_cast<size_t>(i)]).margin(1e-4));
  a.accumulate_i8(A1.data(), R, d, P.data(), T, K8.data(), T, d, vscale.data(), d, ps.data());
  s.accumulate_i8(A2.data(), R, d, P.data(), T, K8.data(), T, d, vscale.data(), d, ps.data());
  for (int i = 0; i < R * d; ++i)
    CHECK(A1[static_cast<size_t>(i)] ==
          Approx(A2[static_cast<size_t>(i)]).epsilon(1e-4).margin(1e-2));
  std::vector<float> e1(T * 3), e2(T * 3);
  std::vector<float> xs(T * 3);
  for (auto& v : xs) v = 20.0f * rnd();
  xs[5] = -std::numeric_limits<float>::infinity();
  const float sum1 = a.exp_sum(xs.data(), 3.0f, e1.data(), T * 3);
  const float sum2 = s.exp_sum(xs.data(), 3.0f, e2.data(), T * 3);
  CHECK(sum1 == Approx(sum2).epsilon(1e-5));
  CHECK(e1[5] == 0.0f);
  for (int i = 0; i < T * 3; ++i)
    CHECK(e1[static_cast<size_t>(i)] == Approx(e2[static_cast<size_t>(i)]).epsilon(1e-5));
  std::vector<float> g1(xs), g2(xs), u(xs.size(), 1.5f);
  a.gelu_mul(g1.data(), u.data(), static_cast<int>(g1.size()));
  s.gelu_mul(g2.data(), u.data(), static_cast<int>(g2.size()));
  CHECK(g1 == g2);  // both read the same fp16 table
}
