// The CUDA engine against the CPU engine on the same synthetic weights (label gpu): teacher-
// forced logits through prefill_all (GEMM path) and decode (GEMV path, CUDA graph), fork with
// copy-on-write, rollback, INT8 KV, device sampling with a mask, batched decode.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/cuda/cuda_model.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/synthetic_model.h"
#include "tests/kernels/engine_test_util.h"

namespace vsynth::kernels::cuda {

using kernels::test::random_tokens;
using test::have_gpu;

namespace {

struct Agreement {
  size_t rows = 0, top1 = 0;
  double max_rel = 0, sum_rel = 0;
  double rate() const { return rows ? static_cast<double>(top1) / rows : 0; }
  double mean_rel() const { return rows ? sum_rel / rows : 0; }
  // Row by row: top-1 agreement and max |a - b| / max |b|.
  void add(std::span<const float> a, std::span<const float> b) {
    REQUIRE(a.size() == b.size());
    ++rows;
    top1 += kernels::test::argmax(a) == kernels::test::argmax(b) ? 1 : 0;
    double num = 0, den = 1e-30;
    for (size_t i = 0; i < a.size(); ++i) {
      num = std::isfinite(a[i]) ? std::max(num, static_cast<double>(std::fabs(a[i] - b[i])))
                                : INFINITY;
      den = std::max(den, static_cast<double>(std::fabs(b[i])));
    }
    max_rel = std::max(max_rel, num / den);
    sum_rel += num / den;
  }
};

}  // namespace

TEST_CASE("cuda engine: tiny models match the CPU engine (gemma3 llama qwen2, FP16 and INT8)",
          "[gpu]") {
  if (!have_gpu()) return;
  for (const char* arch : {"gemma3", "llama", "qwen2"}) {
    for (KvType kv : {KvType::F16, KvType::Int8}) {
      INFO(arch << " int8 " << (kv == KvType::Int8));
      kernels::test::TinySpec spec;
      spec.arch = arch;
      const auto path =
          kernels::test::write_tiny_model(spec, std::string("cuda_tiny_") + arch + ".gguf");
      ModelOptions opt;
      opt.kv_type = kv;
      opt.context_length = 512;
      auto cpu = Model::load(path, opt);
      auto gpu = CudaModel::load(path, opt);
      const auto toks = random_tokens(150, spec.vocab, 42);  // past the 64-token window
      const size_t V = static_cast<size_t>(spec.vocab);
      auto cs = cpu->new_sequence();
      const auto ref_span = cs->prefill_all(toks);
      const std::vector<float> ref(ref_span.begin(), ref_span.end());
      // prefill_all on the GPU in two chunks (GEMM path).
      auto gs = gpu->new_sequence();
      std::vector<float> got;
      for (size_t at : {size_t{0}, size_t{70}}) {
        const size_t n = at == 0 ? 70 : toks.size() - 70;
        const auto l = gs->prefill_all(std::span(toks).subspan(at, n));
        got.insert(got.end(), l.begin(), l.end());
      }
      Agreement a;
      for (size_t i = 0; i < toks.size(); ++i) {
        a.add(std::span(got).subspan(i * V, V), std::span(ref).subspan(i * V, V));
      }
      CHECK(a.rate() >= 0.99);
      CHECK(a.max_rel < (kv == KvType::Int8 ? 0.1 : 0.03));
      // decode() token by token (GEMV path, one CUDA graph per step).
      auto ds = gpu->new_sequence();
      Agreement b;
      for (size_t i = 0; i < toks.size(); ++i) {
        b.add(ds->decode(toks[i]), std::span(ref).subspan(i * V, V));
      }
      CHECK(b.rate() >= 0.99);
      CHECK(b.max_rel < (kv == KvType::Int8 ? 0.1 : 0.03));
      CHECK(ds->position() == 150);
      CHECK(ds->kv_bytes() == 5 * static_cast<int64_t>(gpu->kv_stats().bytes_capacity /
                                                       gpu->kv_stats().blocks_capacity));
      // Fork mid-block, diverge, check both continuations against CPU forks.
      auto gfork = ds->fork();
      auto cfork = cs->fork();
      const TokenId alt = 9;
      Agreement c;
      c.add(gfork->decode(alt), cfork->decode(alt));
      c.add(ds->decode(toks[0]), cs->decode(toks[0]));
      c.add(gfork->decode(toks[1]), cfork->decode(toks[1]));
      CHECK(c.rate() == 1.0);
      CHECK(c.max_rel < (kv == KvType::Int8 ? 0.1 : 0.03));
      // Rollback and redo gives the same logits as the first time.
      const std::vector<float> before(ds->last_logits().begin(), ds->last_logits().end());
      ds->rollback(100);
      CHECK(ds->position() == 100);
      CHECK(ds->last_logits().empty());
      // Same path as the first time (decode steps, not a GEMM prefill): the same numbers.
      for (size_t i = 100; i < 150; ++i) ds->decode(toks[i]);
      const auto again = ds->decode(toks[0]);
      Agreement r;
      r.add(again, before);
      CHECK(r.max_rel < 1e-5);
      CHECK_THROWS_AS(ds->rollback(1000), EngineError);
      CHECK_THROWS_AS(ds->decode(spec.vocab), EngineError);
    }
  }
}

TEST_CASE("cuda engine: device sampling, masks and batched decode", "[gpu]") {
  if (!have_gpu()) return;
  kernels::test::TinySpec spec;
  const auto path = kernels::test::write_tiny_model(spec, "cuda_tiny_sampling.gguf");
  auto gpu = CudaModel::load(path);
  auto s = gpu->new_sequence();
  CHECK_THROWS_AS(gpu->sample(*s, {}), EngineError);  // no logits yet
  const auto l = s->prefill(random_tokens(20, spec.vocab, 3));
  const TokenId best = kernels::test::argmax(l);
  CHECK(gpu->sample(*s, {}) == best);
  TokenMask mask;
  mask.ban(best);
  CHECK(gpu->sample(*s, {}, &mask) != best);
  mask.clear();
  mask.allow_only({11, 12});
  const TokenId t = gpu->sample(*s, {1.0f, 40, 1.0f, 0.0f, 0.5f}, &mask);
  CHECK((t == 11 || t == 12));
  mask.clear();
  mask.ban(99999);
  CHECK_THROWS_AS(gpu->sample(*s, {}, &mask), SamplerError);
  // Batched greedy decode equals one-by-one decode.
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<Sequence*> ptrs;
  std::vector<TokenId> first;
  for (int i = 0; i < 12; ++i) {
    seqs.push_back(gpu->new_sequence());
    seqs.back()->prefill(random_tokens(5 + 7 * i, spec.vocab, 100 + i));
    ptrs.push_back(seqs.back().get());
    first.push_back(static_cast<TokenId>(4 + i));
  }
  std::vector<std::vector<float>> one;
  for (int i = 0; i < 12; ++i) {
    auto f = seqs[static_cast<size_t>(i)]->fork();
    const auto l1 = f->decode(first[static_cast<size_t>(i)]);
    one.emplace_back(l1.begin(), l1.end());
  }
  // The batch runs GEMMs in fp16 where single decodes run GEMVs: a near-tie may pick the other
  // token, so each pick must be (within rounding) a maximum of the single-decode logits.
  const std::vector<TokenId> picked = gpu->decode_batch_greedy(ptrs, first);
  REQUIRE(picked.size() == 12);
  for (size_t i = 0; i < 12; ++i) {
    const auto [lo, hi] = std::minmax_element(one[i].begin(), one[i].end());
    CHECK(one[i][static_cast<size_t>(picked[i])] >= *hi - 1e-2f * (*hi - *lo));
  }
  CHECK(seqs[0]->position() == 6);
  CHECK_THROWS_AS(gpu->decode_batch_greedy(std::vector<Sequence*>{ptrs[0], ptrs[0]},
                                           std::vector<TokenId>{1, 2}),
                  EngineError);
  CHECK(gpu->memory_report().find("weights") != std::string::npos);
}

TEST_CASE("cuda engine: gemma3-270m shapes, teacher-forced top-1 >= 99% vs the CPU engine",
          "[gpu]") {
  if (!have_gpu()) return;
  const auto path = kernels::test::synthetic_model(
      kernels::test::gemma3_270m_spec(), std::filesystem::path(VSYNTH_BINARY_DIR) / "synthetic");
  const auto toks = random_tokens(600, 262144, 7);  // crosses the 512-token sliding window
  for (KvType kv : {KvType::F16, KvType::Int8}) {
    INFO("int8 " << (kv == KvType::Int8));
    ModelOptions opt;
    opt.kv_type = kv;
    opt.context_length = 1024;
    auto cpu = Model::load(path, opt);
    auto gpu = CudaModel::load(path, opt);
    INFO(gpu->memory_report());
    const size_t V = 262144;
    auto cs = cpu->new_sequence();
    const auto ref_span = cs->prefill_all(toks);
    const std::vector<float> ref(ref_span.begin(), ref_span.end());
    auto gs = gpu->new_sequence();
    const auto got = gs->prefill_all(toks);
    Agreement a;
    for (size_t i = 0; i < toks.size(); ++i) {
      a.add(got.subspan(i * V, V), std::span(ref).subspan(i * V, V));
    }
    auto ds = gpu->new_sequence();
    Agreement b;
    for (size_t i = 0; i < 200; ++i) b.add(ds->decode(toks[i]), std::span(ref).subspan(i * V, V));
    WARN("prefill top-1 " << a.rate() << " mean rel " << a.mean_rel() << " max rel " << a.max_rel
                          << "; decode top-1 " << b.rate() << " mean rel " << b.mean_rel());
    // INT8 caches differ in scale granularity (per token here, per channel on the CPU).
    const double want = kv == KvType::F16 ? 0.99 : 0.97;
    CHECK(a.rate() >= want);
    CHECK(b.rate() >= want);
    CHECK(a.mean_rel() < 0.05);
    CHECK(b.mean_rel() < 0.05);
  }
}

}  // namespace vsynth::kernels::cuda
