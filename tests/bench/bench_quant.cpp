// Quantized matvec throughput at the default model's shapes (Gemma 3 270M: d_model 640,
// q-projection 1024, FFN 2048, vocabulary 262144), per weight type, scalar vs AVX2, 1 vs 2
// threads, against the machine's measured streaming-read bandwidth.
//
//   bench_quant [out.json] [--quick] [--prefill-only] [--tokens N]
//                                            (default out.json: bench_quant.json)
//
// Two cache regimes per shape:
//   cold: every call reads a different copy of the matrix, copies spanning >= 1 GiB, so weights
//         come from DRAM as in decoding a whole model (~250 MB of weights per token);
//   hot:  the same matrix every call (L2/L3-resident when it fits): the kernels' compute ceiling.
// GB/s counts weight bytes read per second; GFLOP/s counts 2 * rows * k per call. Roofline is
// cold GB/s over the streaming-read GB/s measured with the same thread count. Times are the best
// call (the machine is shared; see time_matvec). The prefill section times matmul of N tokens
// (default 512, the engine's prefill chunk) at every (type, shape) pair the default model has,
// hot weights; --prefill-only runs that section alone (the kernel-tuning loop).
#include <emmintrin.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cpu/cpu_path.h"
#include "kernels/cpu/matvec.h"
#include "kernels/quant/quantize.h"

using namespace vsynth::kernels;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kGiB = size_t{1} << 30;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string type_name(DType t) {
  return std::string(dtype_info(t)->name);
}

// Page-aligned, touched buffer (so page faults are not timed).
struct Buffer {
  explicit Buffer(size_t n)
      : bytes(n), data(static_cast<uint8_t*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {
    std::memset(data, 1, bytes);
  }
  ~Buffer() { std::free(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  size_t bytes;
  uint8_t* data;
};

// Streaming read: sum [p, p + n) as 64-bit lanes of 16-byte loads (SSE2, baseline x86-64) with
// four accumulators, so the loop itself is never the limit. p 16-byte aligned, n a multiple of 64.
uint64_t read_sum(const uint8_t* p, size_t n) {
  const auto* v = reinterpret_cast<const __m128i*>(p);
  __m128i a = _mm_setzero_si128(), b = a, c = a, d = a;
  for (size_t i = 0; i + 4 <= n / 16; i += 4) {
    a = _mm_add_epi64(a, _mm_load_si128(v + i));
    b = _mm_add_epi64(b, _mm_load_si128(v + i + 1));
    c = _mm_add_epi64(c, _mm_load_si128(v + i + 2));
    d = _mm_add_epi64(d, _mm_load_si128(v + i + 3));
  }
  const __m128i s = _mm_add_epi64(_mm_add_epi64(a, b), _mm_add_epi64(c, d));
  return static_cast<uint64_t>(_mm_cvtsi128_si64(s)) +
         static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(s, s)));
}

struct Stream {
  double read_gbps[3] = {0, 0, 0};  // by thread count 1, 2
  double copy_gbps = 0;             // memcpy, 1 thread, bytes read + written
};

// Best bandwidth over 32 MiB pieces of a 1 GiB buffer, read in order so no piece is still cached
// (the L3 here is 260 MB): a piece that another process interrupted just loses. With 2 threads,
// each reads its own piece at the same time.
Stream measure_stream(int passes) {
  Stream s;
  Buffer buf(kGiB);
  const size_t piece = size_t{32} << 20;
  volatile uint64_t sink = 0;
  for (int threads : {1, 2}) {
    tbb::task_arena arena(threads);
    const size_t step = piece * static_cast<size_t>(threads);
    double best = 0;
    for (int p = 0; p < passes; ++p) {
      for (size_t off = 0; off + step <= buf.bytes; off += step) {
        const auto t0 = Clock::now();
        arena.execute([&] {
          tbb::parallel_for(
              0, threads,
              [&](int i) {
                sink = sink + read_sum(buf.data + off + static_cast<size_t>(i) * piece, piece);
              },
              tbb::static_partitioner());
        });
        best = std::max(best, static_cast<double>(step) / seconds_since(t0) / 1e9);
      }
    }
    s.read_gbps[threads] = best;
  }
  {
    const size_t half = buf.bytes / 2;
    double best = 0;
    for (int p = 0; p < passes; ++p) {
      for (size_t off = 0; off + piece <= half; off += piece) {
        const auto t0 = Clock::now();
        std::memcpy(buf.data + half + off, buf.data + off, piece);
        best = std::max(best, 2.0 * static_cast<double>(piece) / seconds_since(t0) / 1e9);
      }
    }
    s.copy_gbps = best;
  }
  return s;
}

struct Shape {
  int64_t k, rows;
  const char* what;
};

struct Result {
  DType type;
  Shape shape;
  size_t bytes;
  CpuPath path;
  int threads;
  std::string mode;
  double us_per_call, gbps, gflops, roofline;
};

// Seconds per matvec call: calls rotate over `views` (one view = hot, many = cold) for at least
// min_seconds; the fastest call wins. The best call rather than the mean, because this machine
// is shared: a call that another process interrupted says nothing about the kernel (and every
// call >= ~20 us, so the clock's own cost does not matter).
double time_matvec(const std::vector<WeightView>& views, const float* x, float* y,
                   double min_seconds, int threads) {
  tbb::task_arena arena(threads);
  double best = 1e30;
  arena.execute([&] {
    for (size_t i = 0; i < std::min<size_t>(views.size(), 2); ++i) matvec(views[i], x, y);
    size_t next = views.size() > 2 ? 2 : 0;
    const auto start = Clock::now();
    int calls = 0;
    while (seconds_since(start) < min_seconds || calls < 5) {
      const auto t0 = Clock::now();
      matvec(views[next], x, y);
      best = std::min(best, seconds_since(t0));
      next = next + 1 == views.size() ? 0 : next + 1;
      ++calls;
    }
  });
  return best;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Seconds per matmul call of n tokens (prefill), hot weights, best of batches as above. With one
// thread (which runs on the caller) also the best call in thread CPU time, which leaves out the
// time other processes on this shared machine held the core (cache interference stays in).
struct MatmulTime {
  double wall = 1e30, cpu = 0;
};
MatmulTime time_matmul(const WeightView& w, const float* X, int64_t n, float* Y, double min_seconds,
                       int threads) {
  tbb::task_arena arena(threads);
  MatmulTime best;
  double best_cpu = 1e30;
  arena.execute([&] {
    matmul(w, X, n, Y);  // warm-up
    const auto start = Clock::now();
    int calls = 0;
    while (seconds_since(start) < min_seconds || calls < 3) {
      const auto t0 = Clock::now();
      const double c0 = thread_cpu_seconds();
      matmul(w, X, n, Y);
      best_cpu = std::min(best_cpu, thread_cpu_seconds() - c0);
      best.wall = std::min(best.wall, seconds_since(t0));
      ++calls;
    }
  });
  if (threads == 1) best.cpu = best_cpu;
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "bench_quant.json";
  bool quick = false, prefill_only = false;
  int64_t n_tokens = 512;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--prefill-only") {
      prefill_only = true;
    } else if (a == "--tokens" && i + 1 < argc) {
      n_tokens = std::max<int64_t>(1, std::atoll(argv[++i]));
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: %s [out.json] [--quick] [--prefill-only] [--tokens N]\n", argv[0]);
      return 0;
    } else {
      out_path = a;
    }
  }
  const double min_seconds = quick ? 0.1 : 0.4;

  std::vector<CpuPath> paths{CpuPath::Scalar};
  if (cpu_path_available(CpuPath::Avx2)) paths.push_back(CpuPath::Avx2);
  if (cpu_path_available(CpuPath::Avx512Vnni)) paths.push_back(CpuPath::Avx512Vnni);

  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<Result> results;
  Stream stream;
  if (!prefill_only) {
    std::printf("measuring streaming bandwidth (best 32 MiB piece of a 1 GiB buffer)...\n");
    stream = measure_stream(quick ? 3 : 6);
    std::printf("stream read: %.1f GB/s (1 thread), %.1f GB/s (2 threads); memcpy %.1f GB/s\n\n",
                stream.read_gbps[1], stream.read_gbps[2], stream.copy_gbps);

    const std::vector<DType> types = {DType::Q8_0, DType::Q4_0, DType::Q5_0,
                                      DType::Q4_K, DType::Q5_K, DType::Q6_K,
                                      DType::F16,  DType::BF16, DType::F32};
    const std::vector<Shape> shapes = {{640, 1024, "attn_q"},
                                       {640, 2048, "ffn_up/gate"},
                                       {1024, 640, "attn_output"},
                                       {2048, 640, "ffn_down"},
                                       {640, 262144, "output (tied embd)"}};

    std::printf("%-6s %-20s %9s %-6s %3s %-5s %10s %8s %8s %8s\n", "type", "shape (k x rows)", "MB",
                "path", "thr", "cache", "us/call", "GB/s", "GFLOP/s", "roofline");
    for (DType t : prefill_only ? std::vector<DType>{} : types) {
      for (const Shape& s : shapes) {
        const int64_t be = quant_block_elems(t);
        if (s.k % be != 0) continue;                         // K-quants need k % 256 == 0
        if (s.rows == 262144 && t != DType::Q8_0) continue;  // the model stores it as Q8_0
        const size_t row_bytes = row_size(t, s.k);
        const size_t bytes = row_bytes * static_cast<size_t>(s.rows);
        // One quantized matrix, then as many copies as span >= 1 GiB for the cold runs.
        std::vector<uint8_t> one(bytes);
        std::vector<float> src(static_cast<size_t>(s.k));
        for (int64_t r = 0; r < s.rows; ++r) {
          if (r < 64) {
            for (float& v : src) v = normal(rng);
            quantize_row(t, src.data(), s.k, one.data() + static_cast<size_t>(r) * row_bytes);
          } else {  // rows beyond 64 repeat earlier ones: same work, faster setup
            std::memcpy(one.data() + static_cast<size_t>(r) * row_bytes,
                        one.data() + static_cast<size_t>(r % 64) * row_bytes, row_bytes);
          }
        }
        const size_t copies = std::max<size_t>(2, (kGiB + bytes - 1) / bytes);
        Buffer cold(bytes * copies);
        for (size_t c = 0; c < copies; ++c) std::memcpy(cold.data + c * bytes, one.data(), bytes);
        std::vector<WeightView> cold_views, hot_view;
        for (size_t c = 0; c < copies; ++c) {
          cold_views.push_back(make_weight_view(t, s.rows, s.k, cold.data + c * bytes));
        }
        hot_view.push_back(make_weight_view(t, s.rows, s.k, one.data()));
        std::vector<float> x(static_cast<size_t>(s.k)), y(static_cast<size_t>(s.rows));
        for (float& v : x) v = normal(rng);

        for (CpuPath path : paths) {
          set_cpu_path(path);
          for (int threads : {1, 2}) {
            for (const char* mode : {"cold", "hot"}) {
              const bool is_cold = std::string(mode) == "cold";
              if (!is_cold && bytes > 64 * (size_t{1} << 20)) continue;  // can't be cache-hot
              const double sec = time_matvec(is_cold ? cold_views : hot_view, x.data(), y.data(),
                                             min_seconds, threads);
              Result r{t,
                       s,
                       bytes,
                       path,
                       threads,
                       mode,
                       sec * 1e6,
                       static_cast<double>(bytes) / sec / 1e9,
                       2.0 * static_cast<double>(s.rows) * static_cast<double>(s.k) / sec / 1e9,
                       0};
              r.roofline = is_cold ? r.gbps / stream.read_gbps[threads] : 0;
              char shape[48];
              std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(s.k),
                            static_cast<long long>(s.rows));
              std::printf(
                  "%-6s %-20s %9.2f %-6s %3d %-5s %10.1f %8.1f %8.1f %8s\n", type_name(t).c_str(),
                  shape, static_cast<double>(bytes) / 1e6, std::string(to_string(path)).c_str(),
                  threads, mode, r.us_per_call, r.gbps, r.gflops,
                  is_cold ? (std::to_string(static_cast<int>(r.roofline * 100 + 0.5)) + "%").c_str()
                          : "-");
              std::fflush(stdout);
              results.push_back(r);
            }
          }
        }
      }
    }

  }  // !prefill_only

  // Prefill: matmul of n_tokens tokens at the default model's (type, shape) pairs (hot weights),
  // GFLOP/s.
  struct MatmulResult {
    DType type;
    Shape shape;
    CpuPath path;
    int threads;
    double ms, gflops, cpu_gflops;
  };
  std::vector<MatmulResult> mm;
  std::printf("\nprefill matmul, %lld tokens, hot weights\n", static_cast<long long>(n_tokens));
  std::printf("%-6s %-12s %-12s %-6s %3s %10s %9s %9s\n", "type", "k x rows", "tensor", "path",
              "thr", "ms/call", "GFLOP/s", "cpu-time");
  const std::vector<std::pair<DType, Shape>> prefill_shapes = {
      {DType::Q5_0, {640, 1024, "attn_q"}},      {DType::Q5_0, {640, 256, "attn_k/v"}},
      {DType::Q8_0, {640, 256, "attn_v"}},       {DType::Q5_0, {640, 2048, "ffn_up/gate"}},
      {DType::Q4_K, {1024, 640, "attn_output"}}, {DType::Q4_K, {2048, 640, "ffn_down"}},
      {DType::Q6_K, {2048, 640, "ffn_down"}},    {DType::F16, {640, 2048, "(f16)"}}};
  for (const auto& [t, s] : prefill_shapes) {
    const size_t row_bytes = row_size(t, s.k);
    std::vector<uint8_t> wdata(row_bytes * static_cast<size_t>(s.rows));
    std::vector<float> src(static_cast<size_t>(s.k));
    for (int64_t r = 0; r < s.rows; ++r) {
      for (float& v : src) v = normal(rng);
      quantize_row(t, src.data(), s.k, wdata.data() + static_cast<size_t>(r) * row_bytes);
    }
    std::vector<float> X(static_cast<size_t>(n_tokens * s.k)),
        Y(static_cast<size_t>(n_tokens * s.rows));
    for (float& v : X) v = normal(rng);
    const WeightView w = make_weight_view(t, s.rows, s.k, wdata.data());
    // The scalar path at 512 tokens takes seconds per call; --prefill-only skips it.
    for (CpuPath path : paths) {
      if (prefill_only && path == CpuPath::Scalar && paths.size() > 1) continue;
      set_cpu_path(path);
      for (int threads : {1, 2}) {
        const MatmulTime tm = time_matmul(w, X.data(), n_tokens, Y.data(), min_seconds, threads);
        const double flops = 2.0 * static_cast<double>(n_tokens * s.rows * s.k);
        const double gflops = flops / tm.wall / 1e9;
        const double cpu_gflops = tm.cpu > 0 ? flops / tm.cpu / 1e9 : 0.0;
        std::printf("%-6s %4lldx%-7lld %-12s %-6s %3d %10.3f %9.1f %9s\n", type_name(t).c_str(),
                    static_cast<long long>(s.k), static_cast<long long>(s.rows), s.what,
                    std::string(to_string(path)).c_str(), threads, tm.wall * 1e3, gflops,
                    tm.cpu > 0 ? std::to_string(static_cast<int>(cpu_gflops + 0.5)).c_str() : "-");
        mm.push_back({t, s, path, threads, tm.wall * 1e3, gflops, cpu_gflops});
      }
    }
  }

  nlohmann::json j;
  j["command"] = "bench_quant" + std::string(quick ? " --quick" : "") +
                 (prefill_only ? " --prefill-only" : "") + " --tokens " + std::to_string(n_tokens);
  j["stream"] = {{"read_gbps_1_thread", stream.read_gbps[1]},
                 {"read_gbps_2_threads", stream.read_gbps[2]},
                 {"memcpy_gbps_1_thread", stream.copy_gbps},
                 {"buffer_bytes", kGiB}};
  j["results"] = nlohmann::json::array();
  for (const Result& r : results) {
    j["results"].push_back({{"type", type_name(r.type)},
                            {"k", r.shape.k},
                            {"rows", r.shape.rows},
                            {"tensor", r.shape.what},
                            {"weight_bytes", r.bytes},
                            {"path", std::string(to_string(r.path))},
                            {"threads", r.threads},
                            {"cache", r.mode},
                            {"us_per_call", r.us_per_call},
                            {"gbps", r.gbps},
                            {"gflops", r.gflops},
                            {"roofline", r.roofline}});
  }
  j["matmul"] = nlohmann::json::array();
  for (const MatmulResult& r : mm) {
    j["matmul"].push_back({{"type", type_name(r.type)},
                           {"k", r.shape.k},
                           {"rows", r.shape.rows},
                           {"tokens", n_tokens},
                           {"path", std::string(to_string(r.path))},
                           {"threads", r.threads},
                           {"ms_per_call", r.ms},
                           {"gflops", r.gflops},
                           {"cpu_time_gflops", r.cpu_gflops}});
  }
  std::ofstream(out_path) << j.dump(2) << "\n";
  std::printf("\nwrote %s\n", out_path.c_str());
  return 0;
}
