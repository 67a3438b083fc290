// Retrieval encoder throughput (kernels/encoder/bert.h, all-MiniLM-L6-v2): chunks/s for batches
// of code chunks, 1 and 2 threads, F32 vs Q8_0 linear weights; load time; Q8_0's cosine to F32.
//
//   bench_encoder [out.json] [--model dir] [--golden file] [--chunks N] [--runs N]
//     defaults: bench_encoder.json, models/all-MiniLM-L6-v2,
//               tests/data/golden/encoder_minilm.json, 32 chunks, best of 3 runs
//               (run from the repository root)
//
// The chunks are the golden's code pieces of 100 to 256 tokens (token ids from HF tokenizers;
// scripts/golden/make_encoder_golden.py), cycled to N chunks and embedded in batches of 1, 8 and
// 32. GFLOP/s counts the linear layers' multiply-adds (2 * tokens * weights), not attention.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/encoder/bert.h"

using namespace vsynth::kernels;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Linear-layer weights per token: 4 h^2 (q, k, v, out) + 2 h i (up, down) per layer.
double linear_flops_per_token(const EncoderConfig& c) {
  const double h = c.hidden, i = c.intermediate;
  return 2.0 * c.layers * (4.0 * h * h + 2.0 * h * i);
}

std::vector<std::vector<int32_t>> read_chunks(const std::filesystem::path& golden, size_t n) {
  std::ifstream in(golden);
  if (!in) throw std::runtime_error(golden.string() + ": cannot open");
  const auto doc = nlohmann::json::parse(in);
  std::vector<std::vector<int32_t>> code;
  for (const auto& c : doc.at("cases")) {
    const auto name = c.at("name").get<std::string>();
    auto ids = c.at("ids").get<std::vector<int32_t>>();
    if (name.rfind("prose:", 0) != 0 && ids.size() >= 100 && ids.size() <= 256) {
      code.push_back(std::move(ids));
    }
  }
  if (code.empty()) throw std::runtime_error(golden.string() + ": no code chunk of 100-256 tokens");
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < n; ++i) out.push_back(code[i % code.size()]);
  return out;
}

// Embeds every chunk in batches of `batch`; returns the best wall time over `runs` (seconds).
double time_embed(const BertEncoder& enc, const std::vector<std::vector<int32_t>>& chunks,
                  size_t batch, int runs) {
  double best = 1e300;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    for (size_t i = 0; i < chunks.size(); i += batch) {
      const size_t n = std::min(batch, chunks.size() - i);
      const auto e = enc.embed(std::span(chunks.data() + i, n));
      if (e.empty()) std::abort();  // keeps the call
    }
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

double cosine(const float* a, const float* b, int n) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "bench_encoder.json";
  std::filesystem::path model = "models/all-MiniLM-L6-v2";
  std::filesystem::path golden = "tests/data/golden/encoder_minilm.json";
  size_t n_chunks = 32;
  int runs = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model" && i + 1 < argc) {
      model = argv[++i];
    } else if (a == "--golden" && i + 1 < argc) {
      golden = argv[++i];
    } else if (a == "--chunks" && i + 1 < argc) {
      n_chunks = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::stoi(argv[++i]));
    } else if (!a.empty() && a[0] == '-') {
      std::printf("usage: %s [out.json] [--model dir] [--golden file] [--chunks N] [--runs N]\n",
                  argv[0]);
      return 2;
    } else {
      out_path = a;
    }
  }
  if (!std::filesystem::exists(model / "model.safetensors")) {
    std::printf("encoder %s is absent (run scripts/setup-embedder.sh)\n", model.string().c_str());
    return 1;
  }
  const auto chunks = read_chunks(golden, n_chunks);
  size_t tokens = 0;
  for (const auto& c : chunks) tokens += c.size();

  nlohmann::json j;
  j["model"] = model.string();
  j["chunks"] = chunks.size();
  j["tokens"] = tokens;
  j["runs"] = runs;
  j["results"] = nlohmann::json::array();
  std::printf("%zu code chunks, %zu tokens (mean %.0f); best of %d runs\n\n", chunks.size(), tokens,
              double(tokens) / double(chunks.size()), runs);

  // Phase 1: load times and Q8_0's accuracy against F32 on the chunks.
  std::vector<float> f32_emb;
  for (const bool q8 : {false, true}) {
    const auto t0 = Clock::now();
    const auto enc = BertEncoder::load(model, {.threads = 2, .q8_0 = q8});
    const double load_s = seconds_since(t0);
    j[q8 ? "load_ms_q8_0" : "load_ms_f32"] = load_s * 1e3;
    std::printf("load (%s, 2 threads): %.1f ms\n", q8 ? "q8_0" : "f32", load_s * 1e3);
    const auto e = enc->embed(chunks);
    if (!q8) {
      f32_emb = e;
      continue;
    }
    double mn = 1.0, sum = 0.0;
    const int d = enc->dim();
    for (size_t i = 0; i < chunks.size(); ++i) {
      const double c = cosine(e.data() + i * size_t(d), f32_emb.data() + i * size_t(d), d);
      mn = std::min(mn, c);
      sum += c;
    }
    j["q8_0_cosine_vs_f32"] = {{"min", mn}, {"mean", sum / double(chunks.size())}};
    std::printf("q8_0 vs f32 cosine over the chunks: min %.6f, mean %.6f\n\n", mn,
                sum / double(chunks.size()));
  }

  // Phase 2: throughput per (threads, weights, batch).
  std::printf("%8s %8s %6s %10s %10s %10s %9s\n", "threads", "weights", "batch", "chunks/s",
              "tokens/s", "GFLOP/s", "seconds");
  for (const int threads : {1, 2}) {
    for (const bool q8 : {false, true}) {
      const auto enc = BertEncoder::load(model, {.threads = threads, .q8_0 = q8});
      const double flops = linear_flops_per_token(enc->config()) * double(tokens);
      for (const size_t batch : {size_t{1}, size_t{8}, size_t{32}}) {
        const double s = time_embed(*enc, chunks, batch, runs);
        const double cps = double(chunks.size()) / s;
        std::printf("%8d %8s %6zu %10.2f %10.0f %10.1f %9.2f\n", threads, q8 ? "q8_0" : "f32",
                    batch, cps, double(tokens) / s, flops / s / 1e9, s);
        std::fflush(stdout);
        j["results"].push_back({{"threads", threads},
                                {"weights", q8 ? "q8_0" : "f32"},
                                {"batch", batch},
                                {"seconds", s},
                                {"chunks_per_s", cps},
                                {"tokens_per_s", double(tokens) / s},
                                {"linear_gflops", flops / s / 1e9}});
      }
    }
  }
  std::ofstream(out_path) << j.dump(2) << "\n";
  std::printf("\nwrote %s\n", out_path.c_str());
  return 0;
}
