// CUDA engine benchmark (run by scripts/gpu-check.sh): decode tokens/s at batch 1 and 32 and
// prefill tokens/s at 2048 tokens, for the default model's shapes (gemma3 270M) and a ~1.5B
// Llama, with FP16 and INT8 KV, on synthetic weights written on the spot. Each decode figure is
// set against the memory roofline: bytes one step must read (weights once, plus the KV rows the
// step attends to) over the device-to-device copy bandwidth measured here. Prints a table and
// writes JSON.
//
//   bench_cuda [--json FILE] [--models gemma3-270m,llama-1.5b] [--dir DIR] [--quick]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/memory.h"
#include "tests/cuda/synthetic_model.h"

using namespace vsynth::kernels;
using vsynth::kernels::test::random_tokens;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written.
double measure_d2d_gbps() {
  const size_t n = size_t{1} << 30;
  cuda::DeviceBuffer a(n, "bandwidth test"), b(n, "bandwidth test");
  cuda::Stream s;
  cuda::Event e0, e1;
  VSYNTH_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), n, cudaMemcpyDeviceToDevice, s.get()));
  e0.record(s.get());
  const int reps = 10;
  for (int i = 0; i < reps; ++i) {
    VSYNTH_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), n, cudaMemcpyDeviceToDevice, s.get()));
  }
  e1.record(s.get());
  e1.synchronize();
  return 2.0 * static_cast<double>(n) * reps / (e1.elapsed_ms_since(e0) * 1e-3) / 1e9;
}

struct Row {
  std::string model, kv;
  double prefill_tps = 0, decode1_tps = 0, decode32_tps = 0;
  double roofline1_tps = 0, roofline32_tps = 0;
  double weight_mb = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, dir = "build-gpu/synthetic";
  std::string models = "gemma3-270m,llama-1.5b";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc)
      json_path = argv[++i];
    else if (a == "--dir" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--models" && i + 1 < argc)
      models = argv[++i];
    else if (a == "--quick")
      quick = true;
    else {
      std::fprintf(stderr,
                   "usage: bench_cuda [--json FILE] [--models a,b] [--dir DIR] [--quick]\n");
      return 2;
    }
  }
  const cuda::DeviceQuery q = cuda::query_devices();
  if (q.devices.empty()) {
    std::printf("bench_cuda: %s\n", q.reason.c_str());
    return 3;
  }
  const cuda::DeviceInfo& dev = q.devices.front();
  const double bw = measure_d2d_gbps();
  std::printf("device: %s (sm_%d%d, %d SMs), measured D2D bandwidth %.0f GB/s\n", dev.name.c_str(),
              dev.sm_major, dev.sm_minor, dev.sm_count, bw);
  nlohmann::json out;
  out["device"] = dev.name;
  out["d2d_gbps"] = bw;
  std::vector<Row> rows;
  const int prefill_n = 2048, ctx0 = 128, steps = quick ? 32 : 128, batch = 32;
  for (const auto& spec : {test::gemma3_270m_spec(), test::llama_1_5b_spec()}) {
    if (models.find(spec.name) == std::string::npos) continue;
    const auto t0 = Clock::now();
    const auto path = test::synthetic_model(spec, dir);
    std::printf("%s: synthetic weights ready in %.1f s\n", spec.name.c_str(), seconds_since(t0));
    for (KvType kv : {KvType::F16, KvType::Int8}) {
      ModelOptions opt;
      opt.kv_type = kv;
      opt.context_length = 4096;
      opt.kv_pool_tokens = int64_t{batch + 4} * 4096 / 8;  // 32 short sequences + one 2k one
      auto m = cuda::CudaModel::load(path, opt);
      Row r;
      r.model = spec.name;
      r.kv = kv == KvType::F16 ? "f16" : "int8";
      r.weight_mb = static_cast<double>(m->weight_bytes()) / 1e6;
      // Prefill 2k (after a warm-up that captures nothing but loads cuBLAS kernels).
      {
        auto w = m->new_sequence();
        w->prefill(random_tokens(256, spec.vocab, 1));
        auto s = m->new_sequence();
        const auto toks = random_tokens(prefill_n, spec.vocab, 2);
        const auto t = Clock::now();
        s->prefill(toks);
        r.prefill_tps = prefill_n / seconds_since(t);
      }
      // Decode, batch 1: each step is a graph launch, a logits copy and a host argmax.
      const double kv_row = static_cast<double>(m->kv_stats().bytes_capacity) /
                            static_cast<double>(m->kv_stats().blocks_capacity) /
                            m->kv_stats().block_tokens;  // bytes per token, all layers
      {
        auto s = m->new_sequence();
        auto l = s->prefill(random_tokens(ctx0, spec.vocab, 3));
        TokenId next = static_cast<TokenId>(std::max_element(l.begin(), l.end()) - l.begin());
        l = s->decode(next);  // graph capture
        const auto t = Clock::now();
        for (int i = 0; i < steps; ++i) {
          next = static_cast<TokenId>(std::max_element(l.begin(), l.end()) - l.begin());
          l = s->decode(next);
        }
        r.decode1_tps = steps / seconds_since(t);
        const double bytes = static_cast<double>(m->weight_bytes()) + kv_row * (ctx0 + steps / 2.0);
        r.roofline1_tps = bw * 1e9 / bytes;
      }
      // Decode, batch 32 (batched GEMMs, argmax on the device).
      {
        std::vector<std::unique_ptr<Sequence>> seqs;
        std::vector<Sequence*> ptrs;
        for (int i = 0; i < batch; ++i) {
          seqs.push_back(m->new_sequence());
          seqs.back()->prefill(random_tokens(ctx0, spec.vocab, 10 + i));
          ptrs.push_back(seqs.back().get());
        }
        std::vector<TokenId> next(batch, 5);
        next = m->decode_batch_greedy(ptrs, next);
        const int bsteps = steps / 2;
        const auto t = Clock::now();
        for (int i = 0; i < bsteps; ++i) next = m->decode_batch_greedy(ptrs, next);
        r.decode32_tps = batch * bsteps / seconds_since(t);
        const double bytes =
            static_cast<double>(m->weight_bytes()) + batch * kv_row * (ctx0 + bsteps / 2.0);
        r.roofline32_tps = batch * bw * 1e9 / bytes;
      }
      std::printf("%s kv=%s: %s\n", r.model.c_str(), r.kv.c_str(), m->memory_report().c_str());
      rows.push_back(r);
      out["rows"].push_back({{"model", r.model},
                             {"kv", r.kv},
                             {"weight_mb", r.weight_mb},
                             {"prefill_2k_tps", r.prefill_tps},
                             {"decode_b1_tps", r.decode1_tps},
                             {"decode_b1_roofline_tps", r.roofline1_tps},
                             {"decode_b32_tps", r.decode32_tps},
                             {"decode_b32_roofline_tps", r.roofline32_tps}});
    }
  }
  std::printf("\n%-12s %-4s %9s %12s %12s %9s %12s %9s\n", "model", "kv", "weightsMB",
              "prefill2k/s", "decode b1/s", "roof b1", "decode b32/s", "roof b32");
  for (const Row& r : rows) {
    std::printf("%-12s %-4s %9.0f %12.0f %12.1f %8.0f%% %12.0f %8.0f%%\n", r.model.c_str(),
                r.kv.c_str(), r.weight_mb, r.prefill_tps, r.decode1_tps,
                100.0 * r.decode1_tps / r.roofline1_tps, r.decode32_tps,
                100.0 * r.decode32_tps / r.roofline32_tps);
  }
  if (!json_path.empty()) {
    std::ofstream(json_path) << out.dump(2) << "\n";
  }
  return 0;
}
