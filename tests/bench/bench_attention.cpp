// Decode attention alone, FP16 vs INT8 KV: one query token attending over C cached positions
// of one layer (kernels/kv/attention.h over a KvSequence filled with random keys/values), for
// the default model's attention shape and a larger grouped-query shape, at several contexts.
// This isolates what INT8 KV changes (half the KV bytes, integer scores); bench_engine gives the
// end-to-end decode effect, where the weights dominate on small models.
//
//   ninja -C build-perf bench_attention
//   ./build-perf/tests/bench/bench_attention [--threads 1] [--contexts 512,4096,16384]
//       [--iters 200] [out.json]
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/kv/attention.h"
#include "kernels/kv/kv_cache.h"
#include "tests/bench/bench_json.h"

using namespace vsynth::kernels;
using Clock = std::chrono::steady_clock;

namespace {

struct Shape {
  const char* name;
  int32_t n_heads, n_kv_heads, head_dim;
};

// Median seconds per attention call for one query at position ctx - 1 over ctx keys.
double time_attention(const Shape& s, KvType type, int32_t ctx, int iters) {
  KvGeometry g;
  g.n_layers = 1;
  g.n_kv_heads = s.n_kv_heads;
  g.head_dim_k = g.head_dim_v = s.head_dim;
  g.type = type;
  const int64_t blocks = (ctx + g.block_tokens - 1) / g.block_tokens + 2;
  auto pool = std::make_shared<KvPool>(g, blocks);
  KvSequence seq(pool, {0}, 0);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int32_t chunk = 256;
  const size_t row = static_cast<size_t>(s.n_kv_heads) * s.head_dim;
  std::vector<float> k(chunk * row), v(chunk * row);
  for (int32_t p = 0; p < ctx; p += chunk) {
    const int32_t m = std::min(chunk, ctx - p);
    for (auto& x : k) x = nd(rng);
    for (auto& x : v) x = nd(rng);
    seq.write(0, m, k.data(), v.data());
    seq.commit(p + m);
  }
  std::vector<float> q(static_cast<size_t>(s.n_heads) * s.head_dim), out(q.size());
  for (auto& x : q) x = nd(rng) / 16.0f;
  AttentionShape as{s.n_heads, s.n_kv_heads, s.head_dim, s.head_dim, 0};
  const KvLayerView view = seq.view(0, ctx);
  for (int i = 0; i < 3; ++i) attention(view, as, q.data(), 1, ctx - 1, out.data());
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    attention(view, as, q.data(), 1, ctx - 1, out.data());
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) v.push_back(std::stoi(x));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, iters = 200;
  std::vector<int> contexts = {512, 4096, 16384};
  std::string out_path = "bench_attention.json";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--threads" && has_value) {
      threads = std::stoi(argv[++i]);
    } else if (a == "--contexts" && has_value) {
      contexts = parse_list(argv[++i]);
    } else if (a == "--iters" && has_value) {
      iters = std::stoi(argv[++i]);
    } else if (a.starts_with("-")) {
      std::fprintf(stderr,
                   "usage: bench_attention [--threads N] [--contexts 512,4096,...] [--iters N] "
                   "[out.json]\n");
      return a == "-h" || a == "--help" ? 0 : 2;
    } else {
      out_path = a;
    }
  }
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                         static_cast<size_t>(std::max(1, threads)));
  const Shape shapes[] = {{"gemma3-270m (4 q / 1 kv heads, dim 256)", 4, 1, 256},
                          {"llama-8b-like (32 q / 8 kv heads, dim 128)", 32, 8, 128}};
  std::printf("Decode attention, one layer, one query, %d thread(s), median of %d calls\n\n",
              threads, iters);
  std::printf("| shape | context | KV MB fp16 | fp16 us | int8 us | int8 speedup |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  nlohmann::json j;
  j["threads"] = threads;
  for (const Shape& s : shapes) {
    for (int ctx : contexts) {
      const double f = time_attention(s, KvType::F16, ctx, iters);
      const double i8 = time_attention(s, KvType::Int8, ctx, iters);
      const double mb = 2.0 * ctx * s.n_kv_heads * s.head_dim * 2 / 1e6;
      std::printf("| %s | %d | %.1f | %.1f | %.1f | %.2fx |\n", s.name, ctx, mb, f * 1e6, i8 * 1e6,
                  f / i8);
      j["rows"].push_back({{"shape", s.name},
                           {"context", ctx},
                           {"kv_mb_f16", mb},
                           {"f16_us", f * 1e6},
                           {"int8_us", i8 * 1e6},
                           {"int8_speedup", f / i8}});
    }
  }
  std::printf("\n");
  return vsynth::bench::write_json(out_path, j) ? 0 : 1;
}
