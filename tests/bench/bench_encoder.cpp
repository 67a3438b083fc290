// Retrieval encoder throughput (kernels/encoder/bert.h, all-MiniLM-L6-v2): chunks/s for batches
// of code chunks, 1 and 2 threads, F32 vs Q8_0 linear weights; load time; Q8_0's cosine to F32;
// then ours against llama.cpp's BERT embedding path on the same weights, side by side.
//
//   bench_encoder [out.json] [--model dir] [--golden file] [--chunks N] [--runs N] [--rounds N]
//                 [--no-table] [--no-llama] [--llama-f32 gguf] [--llama-q8 gguf] [--n-batch N]
//     defaults: bench_encoder.json, models/all-MiniLM-L6-v2,
//               tests/data/golden/encoder_minilm.json, 32 chunks, best of 3 runs, 3 rounds,
//               .cache/encoder-gguf/all-MiniLM-L6-v2-{f32,q8_0}.gguf, n_batch 512
//               (run from the repository root)
//
// The chunks are the golden's code pieces of 100 to 256 tokens (token ids from HF tokenizers;
// scripts/golden/make_encoder_golden.py), cycled to N chunks and embedded in batches of 1, 8 and
// 32. GFLOP/s counts the linear layers' multiply-adds (2 * tokens * weights), not attention.
//
// Side by side: llama.cpp runs through scripts/bench/llama_cpp_encoder_bench.py in .venv-bench
// (llama-cpp-python; the GGUFs made by scripts/bench/setup-encoder-gguf.sh with the converter of
// its sdist) on the same token ids, as Llama.embed batches them (sequences packed up to n_batch
// tokens per llama_decode, mean pooling, L2 norm). Each round runs, for 1 and 2 threads and each
// weight type with a GGUF: llama.cpp (best of --runs passes over the chunks), then ours (batch =
// all chunks, best of --runs); the ratio is taken within the round and the table gives medians
// over rounds. The embeddings of both sides are compared (cosine) on every chunk.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0.0;
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// One run of the llama.cpp driver (its output JSON, or null when it failed: the driver's own
// message is on stderr).
nlohmann::json run_llama(const std::string& cmd, const std::filesystem::path& out) {
  std::filesystem::remove(out);
  if (std::system(cmd.c_str()) != 0 || !std::filesystem::exists(out)) return nullptr;
  std::ifstream in(out);
  auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

struct SideBySide {
  int threads;
  std::string weights;
  std::filesystem::path gguf;
  std::vector<double> ours, llama, ratio, cosine_min;
};

// Phase 3: ours against llama.cpp, interleaved per round (see the file comment). Adds
// "side_by_side" to j; prints a Markdown table.
void side_by_side(nlohmann::json& j, const std::vector<std::vector<int32_t>>& chunks,
                  const std::filesystem::path& model, const std::filesystem::path& golden,
                  const std::filesystem::path& gguf_f32, const std::filesystem::path& gguf_q8,
                  int runs, int rounds, int n_batch) {
  namespace fs = std::filesystem;
  const fs::path py = ".venv-bench/bin/python", script = "scripts/bench/llama_cpp_encoder_bench.py";
  if (!fs::exists(py)) {
    std::printf("\nno .venv-bench (scripts/bench/setup-encoder-gguf.sh): no llama.cpp columns\n");
    return;
  }
  const fs::path tmp = fs::temp_directory_path();
  const fs::path chunk_file = tmp / "bench_encoder_chunks.json",
                 out = tmp / "bench_encoder_llama.json";
  std::ofstream(chunk_file) << nlohmann::json{{"chunks", chunks}}.dump();
  std::vector<SideBySide> rows;
  for (const int threads : {1, 2}) {
    for (const auto& [weights, gguf] : {std::pair{"f32", gguf_f32}, std::pair{"q8_0", gguf_q8}}) {
      if (fs::exists(gguf)) rows.push_back({threads, weights, gguf, {}, {}, {}, {}});
    }
  }
  if (rows.empty()) {
    std::printf("\nno GGUF at %s (scripts/bench/setup-encoder-gguf.sh): no llama.cpp columns\n",
                gguf_f32.string().c_str());
    return;
  }
  std::vector<std::shared_ptr<BertEncoder>> ours;
  for (const auto& r : rows) {
    ours.push_back(BertEncoder::load(model, {.threads = r.threads, .q8_0 = r.weights == "q8_0"}));
  }
  nlohmann::json golden_cos = nlohmann::json::object();
  std::printf("\nside by side with llama.cpp: %d rounds, n_batch %d\n", rounds, n_batch);
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < rows.size(); ++i) {
      SideBySide& r = rows[i];
      std::string cmd = py.string() + " " + script.string() + " " + r.gguf.string() + " " +
                        chunk_file.string() + " " + out.string() + " --threads " +
                        std::to_string(r.threads) + " --repeats " + std::to_string(runs) +
                        " --n-batch " + std::to_string(n_batch);
      if (round == 0 && r.threads == 1) cmd += " --golden " + golden.string();
      const auto l = run_llama(cmd, out);
      if (l.is_null()) {
        std::printf("llama.cpp driver failed (%s); row skipped this round\n", cmd.c_str());
        continue;
      }
      if (l.contains("golden_cosine")) golden_cos[r.weights] = l["golden_cosine"];
      const double ours_s = time_embed(*ours[i], chunks, chunks.size(), runs);
      const double ours_cps = double(chunks.size()) / ours_s;
      const double llama_cps = l.at("chunks_per_s").get<double>();
      const auto e = ours[i]->embed(chunks);
      const int d = ours[i]->dim();
      double mn = 1.0;
      for (size_t c = 0; c < chunks.size(); ++c) {
        const auto le = l.at("embeddings").at(c).get<std::vector<float>>();
        mn = std::min(mn, cosine(e.data() + c * size_t(d), le.data(), d));
      }
      r.ours.push_back(ours_cps);
      r.llama.push_back(llama_cps);
      r.ratio.push_back(ours_cps / llama_cps);
      r.cosine_min.push_back(mn);
      std::printf("round %d, %d thread(s), %s: ours %.2f chunks/s, llama.cpp %.2f, ratio %.2f\n",
                  round + 1, r.threads, r.weights.c_str(), ours_cps, llama_cps,
                  ours_cps / llama_cps);
      std::fflush(stdout);
    }
  }
  std::printf(
      "\n| threads | weights | ours chunks/s | llama.cpp chunks/s | ratio | ratio per round | "
      "cosine ours vs llama.cpp (min) |\n|---:|---|---:|---:|---:|---|---:|\n");
  nlohmann::json sj = nlohmann::json::array();
  for (const auto& r : rows) {
    if (r.ratio.empty()) continue;
    std::string per;
    for (const double x : r.ratio)
      per += (per.empty() ? "" : ", ") + std::to_string(x).substr(0, 4);
    const double cmin = *std::min_element(r.cosine_min.begin(), r.cosine_min.end());
    std::printf("| %d | %s | %.2f | %.2f | %.2f | %s | %.6f |\n", r.threads, r.weights.c_str(),
                median(r.ours), median(r.llama), median(r.ratio), per.c_str(), cmin);
    sj.push_back({{"threads", r.threads},
                  {"weights", r.weights},
                  {"gguf", r.gguf.string()},
                  {"ours_chunks_per_s", r.ours},
                  {"llama_chunks_per_s", r.llama},
                  {"ratio", r.ratio},
                  {"median_ratio", median(r.ratio)},
                  {"cosine_ours_vs_llama_min", cmin}});
  }
  for (const auto& [w, g] : golden_cos.items()) {
    std::printf("llama.cpp %s vs the float64 golden: cosine min %.6f, mean %.6f (%d snippets)\n",
                w.c_str(), g.at("min").get<double>(), g.at("mean").get<double>(),
                g.at("cases").get<int>());
  }
  j["side_by_side"] = {
      {"rounds", rounds}, {"n_batch", n_batch}, {"rows", sj}, {"llama_golden_cosine", golden_cos}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "bench_encoder.json";
  std::filesystem::path model = "models/all-MiniLM-L6-v2";
  std::filesystem::path golden = "tests/data/golden/encoder_minilm.json";
  size_t n_chunks = 32;
  int runs = 3, rounds = 3, n_batch = 512;
  bool table = true, llama = true;
  std::filesystem::path llama_f32 = ".cache/encoder-gguf/all-MiniLM-L6-v2-f32.gguf";
  std::filesystem::path llama_q8 = ".cache/encoder-gguf/all-MiniLM-L6-v2-q8_0.gguf";
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
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--n-batch" && i + 1 < argc) {
      n_batch = std::max(256, std::stoi(argv[++i]));
    } else if (a == "--llama-f32" && i + 1 < argc) {
      llama_f32 = argv[++i];
    } else if (a == "--llama-q8" && i + 1 < argc) {
      llama_q8 = argv[++i];
    } else if (a == "--no-table") {
      table = false;
    } else if (a == "--no-llama") {
      llama = false;
    } else if (!a.empty() && a[0] == '-') {
      std::printf(
          "usage: %s [out.json] [--model dir] [--golden file] [--chunks N] [--runs N] "
          "[--rounds N] [--no-table] [--no-llama] [--llama-f32 gguf] [--llama-q8 gguf] "
          "[--n-batch N]\n",
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
  if (table)
    std::printf("%8s %8s %6s %10s %10s %10s %9s\n", "threads", "weights", "batch", "chunks/s",
                "tokens/s", "GFLOP/s", "seconds");
  for (const int threads : {1, 2}) {
    for (const bool q8 : {false, true}) {
      if (!table) break;
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
  if (llama) side_by_side(j, chunks, model, golden, llama_f32, llama_q8, runs, rounds, n_batch);
  std::ofstream(out_path) << j.dump(2) << "\n";
  std::printf("\nwrote %s\n", out_path.c_str());
  return 0;
}
