// Prefill compute roofline: this core's peak for the exact instruction mix of each dot kernel,
// in registers (no memory operands), one thread, and every prefill matmul of the default model
// (Gemma 3 270M Q4_K_M) as a fraction of the peak of the path it runs on.
//
//   bench_roofline [out.json] [--tokens 512,1155] [--seconds S]
//
// Peaks (GOPS; one multiply-add = 2 ops, as the matmul's 2 * rows * k * tokens):
//   avx2 int8:  vpmaddubsw + vpmaddwd + vpaddd per 32 u8 x s8 products (what every integer dot
//               of the avx2 table issues per 32 weights per token)
//   vnni int8:  vpdpbusd per 32 products (the avx512vnni table's integer dots), only when the
//               CPU has AVX512-VNNI
//   fma f32:    vfmadd231ps per 8 products (the float-weight dots)
// Each loop runs 12 independent accumulator chains, so only throughput counts. The matmul rows
// time matmul() on random weights of the model's (type, shape) pairs (model_mats(), read off the
// GGUF's tensor table) at each token count, best call in thread CPU time (the
// machine is shared: time other processes held the core is left out), and divide by the peak of
// the instruction mix that path's kernel for the type uses.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <tbb/task_arena.h>
#include <nlohmann/json.hpp>

#include "kernels/cpu/cpu_path.h"
#include "kernels/cpu/matvec.h"
#include "kernels/quant/quantize.h"

using namespace vsynth::kernels;

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// ---- In-register peaks: each iteration issues 12 independent copies of one mix ----

constexpr long kIters = 20'000'000;  // ~0.1-0.3 s per loop at 3 GHz

#define VS_R12(X) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

// ymm0, ymm1 inputs; ymm2 the madd multiplier; ymm3 scratch per chain would serialise, so each
// chain N uses ymmN as accumulator and, for the two-step mix, computes into a temporary that
// the vpaddd consumes right away (register renaming makes the chains independent).
__attribute__((target("avx2,fma"), noinline)) double peak_avx2_int8() {
  const double c0 = thread_cpu_seconds();
  for (long i = 0; i < kIters; ++i) {
#define VS_MADD(N)                                \
  asm volatile(                                   \
      "vpmaddubsw %%ymm0, %%ymm1, %%ymm3\n\t"     \
      "vpmaddwd %%ymm2, %%ymm3, %%ymm3\n\t"       \
      "vpaddd %%ymm3, %%ymm" #N ", %%ymm" #N "\n" \
      :                                           \
      :                                           \
      : "xmm3", "xmm" #N);
    VS_R12(VS_MADD)
#undef VS_MADD
  }
  const double s = thread_cpu_seconds() - c0;
  return 12.0 * 32 * 2 * static_cast<double>(kIters) / s / 1e9;
}

__attribute__((target("avx2,fma,avx512f,avx512vl,avx512vnni"), noinline)) double peak_vnni_int8() {
  const double c0 = thread_cpu_seconds();
  for (long i = 0; i < kIters; ++i) {
#define VS_DP(N) asm volatile("vpdpbusd %%ymm0, %%ymm1, %%ymm" #N "\n" : : : "xmm" #N);
    VS_R12(VS_DP)
#undef VS_DP
  }
  const double s = thread_cpu_seconds() - c0;
  return 12.0 * 32 * 2 * static_cast<double>(kIters) / s / 1e9;
}

__attribute__((target("avx2,fma"), noinline)) double peak_fma_f32() {
  const double c0 = thread_cpu_seconds();
  for (long i = 0; i < kIters; ++i) {
#define VS_FMA(N) asm volatile("vfmadd231ps %%ymm0, %%ymm1, %%ymm" #N "\n" : : : "xmm" #N);
    VS_R12(VS_FMA)
#undef VS_FMA
  }
  const double s = thread_cpu_seconds() - c0;
  return 12.0 * 8 * 2 * static_cast<double>(kIters) / s / 1e9;
}

// Best of `reps` runs (another process may take the core during one).
template <typename F>
double best_of(F f, int reps) {
  double best = 0;
  for (int r = 0; r < reps; ++r) best = std::max(best, f());
  return best;
}

// ---- Matmuls of the default model ----

struct Mat {
  DType type;
  int64_t k, rows;
  std::string tensor;
};

// Gemma 3 270M Q4_K_M's per-layer linear weights (from the GGUF's tensor table: 18 layers;
// attn_v and ffn_down alternate between two types across layers, counted separately).
std::vector<Mat> model_mats() {
  return {{DType::Q5_0, 640, 1024, "attn_q"},          {DType::Q5_0, 640, 256, "attn_k"},
          {DType::Q5_0, 640, 256, "attn_v (q5_0)"},    {DType::Q8_0, 640, 256, "attn_v (q8_0)"},
          {DType::Q4_K, 1024, 640, "attn_output"},     {DType::Q5_0, 640, 2048, "ffn_gate/up"},
          {DType::Q4_K, 2048, 640, "ffn_down (q4_K)"}, {DType::Q6_K, 2048, 640, "ffn_down (q6_K)"}};
}

// Best matmul call in thread CPU seconds over >= min_seconds (at least 3 calls), 1 thread.
double time_matmul(const WeightView& w, const float* X, int64_t n, float* Y, double min_seconds) {
  tbb::task_arena arena(1);
  double best = 1e30;
  arena.execute([&] {
    matmul(w, X, n, Y);
    const double start = thread_cpu_seconds();
    int calls = 0;
    while (thread_cpu_seconds() - start < min_seconds || calls < 3) {
      const double c0 = thread_cpu_seconds();
      matmul(w, X, n, Y);
      best = std::min(best, thread_cpu_seconds() - c0);
      ++calls;
    }
  });
  return best;
}

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> v;
  size_t i = 0;
  while (i < s.size()) {
    const size_t j = s.find(',', i);
    v.push_back(std::atoll(s.substr(i, j - i).c_str()));
    if (j == std::string::npos) break;
    i = j + 1;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "bench_roofline.json";
  std::vector<int64_t> token_counts = {512, 1155};
  double min_seconds = 0.3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tokens" && i + 1 < argc) {
      token_counts = parse_list(argv[++i]);
    } else if (a == "--seconds" && i + 1 < argc) {
      min_seconds = std::atof(argv[++i]);
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: %s [out.json] [--tokens 512,1155] [--seconds S]\n", argv[0]);
      return 0;
    } else {
      out_path = a;
    }
  }
  if (!cpu_path_available(CpuPath::Avx2)) {
    std::printf("bench_roofline: this CPU or build has no AVX2 path; nothing to measure\n");
    return 0;
  }
  const bool vnni = cpu_path_available(CpuPath::Avx512Vnni);

  // Phase 1: peaks.
  const double avx2_int8 = best_of(peak_avx2_int8, 5);
  const double vnni_int8 = vnni ? best_of(peak_vnni_int8, 5) : 0.0;
  const double fma_f32 = best_of(peak_fma_f32, 5);
  std::printf("in-register peak, 1 thread (GOPS, 1 multiply-add = 2 ops)\n");
  std::printf("  avx2 int8 (vpmaddubsw + vpmaddwd + vpaddd): %7.1f\n", avx2_int8);
  if (vnni) {
    std::printf("  vnni int8 (vpdpbusd):                       %7.1f\n", vnni_int8);
  } else {
    std::printf("  vnni int8 (vpdpbusd):                       n/a (no AVX512-VNNI on this CPU)\n");
  }
  std::printf("  fma f32   (vfmadd231ps):                    %7.1f\n\n", fma_f32);

  // Phase 2: matmuls as a fraction of the peak of their path's mix.
  std::vector<CpuPath> paths{CpuPath::Avx2};
  if (vnni) paths.push_back(CpuPath::Avx512Vnni);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  nlohmann::json j;
  j["peaks_gops"] = {{"avx2_int8", avx2_int8}, {"vnni_int8", vnni_int8}, {"fma_f32", fma_f32}};
  j["matmul"] = nlohmann::json::array();
  std::printf("%-6s %-10s %-16s %-10s %6s %9s %8s %9s\n", "type", "k x rows", "tensor", "path",
              "tokens", "ms/call", "GOPS", "roofline");
  for (const Mat& m : model_mats()) {
    const size_t row_bytes = row_size(m.type, m.k);
    std::vector<uint8_t> wdata(row_bytes * static_cast<size_t>(m.rows));
    std::vector<float> src(static_cast<size_t>(m.k));
    for (int64_t r = 0; r < m.rows; ++r) {
      for (float& v : src) v = normal(rng);
      quantize_row(m.type, src.data(), m.k, wdata.data() + static_cast<size_t>(r) * row_bytes);
    }
    const WeightView w = make_weight_view(m.type, m.rows, m.k, wdata.data());
    for (int64_t n : token_counts) {
      std::vector<float> X(static_cast<size_t>(n * m.k)), Y(static_cast<size_t>(n * m.rows));
      for (float& v : X) v = normal(rng);
      for (CpuPath path : paths) {
        set_cpu_path(path);
        // Every quantized prefill dot (q4_0/q5_0/q8_0 and the K-quants) uses vpdpbusd on the
        // vnni table and maddubs + madd on the avx2 one.
        const double peak = path == CpuPath::Avx512Vnni ? vnni_int8 : avx2_int8;
        const double sec = time_matmul(w, X.data(), n, Y.data(), min_seconds);
        const double gops = 2.0 * static_cast<double>(n * m.rows * m.k) / sec / 1e9;
        std::printf("%-6s %4lldx%-5lld %-16s %-10s %6lld %9.3f %8.1f %8.0f%%\n",
                    std::string(dtype_info(m.type)->name).c_str(), static_cast<long long>(m.k),
                    static_cast<long long>(m.rows), m.tensor.c_str(),
                    std::string(to_string(path)).c_str(), static_cast<long long>(n), sec * 1e3,
                    gops, 100.0 * gops / peak);
        std::fflush(stdout);
        j["matmul"].push_back({{"type", std::string(dtype_info(m.type)->name)},
                               {"k", m.k},
                               {"rows", m.rows},
                               {"tensor", m.tensor},
                               {"path", std::string(to_string(path))},
                               {"tokens", n},
                               {"cpu_ms_per_call", sec * 1e3},
                               {"gops", gops},
                               {"roofline", gops / peak}});
      }
    }
  }
  std::ofstream(out_path) << j.dump(2) << "\n";
  std::printf("\nwrote %s\n", out_path.c_str());
  return 0;
}
