// Decoder engine throughput, side by side with llama.cpp on the same GGUF, thread count and
// prompt: prefill and decode tokens/s (batch 1) at several context lengths, our decode as a
// fraction of the memory-bandwidth roofline, and INT8 vs FP16 KV at the longest context.
//
//   ninja -C build-engine bench_engine
//   ./build-engine/tests/bench/bench_engine [--model models/gemma-3-270m-q4_k_m.gguf]
//       [--threads 2] [--contexts 512,1024,2048,4096] [--decode 32] [--repeats 2]
//       [--rounds 3] [--no-llama | --llama-json FILE] [out.json]
//
// llama.cpp's figures come from scripts/bench/llama_cpp_engine_bench.py run through
// .venv-bench/bin/python (scripts/golden/regen.sh makes that environment); without it the
// llama.cpp columns are empty. Prompt: the code corpus (tests/data/golden/corpus/) tokenized by
// our tokenizer with BOS, repeated to length. For each context C: prefill = the first C tokens
// from an empty cache; decode = `--decode` single tokens right after (the next prompt tokens).
// Best of `--repeats` runs per round; `--rounds` rounds alternate llama.cpp and ours, ratios
// are per round and reported as medians (the machine is shared). Roofline: bytes a decode step
// reads (every linear layer's weights including the output projection, plus the KV cache visible at
// C) times decode tokens/s, over the best 2-thread streaming read of a 1 GiB buffer.
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <emmintrin.h>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/engine.h"

using namespace vsynth::kernels;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Sum of 16-byte lanes with four accumulators (SSE2): a read loop that is never the limit.
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
  return static_cast<uint64_t>(_mm_cvtsi128_si64(s));
}

// Best read bandwidth (GB/s) with `threads` threads over 32 MiB pieces of a 1 GiB buffer read in
// order (more than the 260 MB L3, so pieces come from DRAM).
double stream_gbps(int threads, int passes) {
  const size_t bytes = size_t{1} << 30, piece = size_t{32} << 20;
  auto* buf = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
  std::memset(buf, 1, bytes);
  volatile uint64_t sink = 0;
  tbb::task_arena arena(threads);
  double best = 0;
  const size_t step = piece * static_cast<size_t>(threads);
  for (int p = 0; p < passes; ++p) {
    for (size_t off = 0; off + step <= bytes; off += step) {
      const auto t0 = Clock::now();
      arena.execute([&] {
        tbb::parallel_for(
            0, threads,
            [&](int i) {
              sink = sink + read_sum(buf + off + static_cast<size_t>(i) * piece, piece);
            },
            tbb::static_partitioner());
      });
      best = std::max(best, static_cast<double>(step) / since(t0) / 1e9);
    }
  }
  std::free(buf);
  return best;
}

struct Row {
  int context = 0;
  double prefill_tps = 0, decode_tps = 0;
};

Row run_ours(Model& m, const std::vector<int32_t>& toks, int ctx, int decode, int repeats) {
  Row r;
  r.context = ctx;
  for (int rep = 0; rep < repeats; ++rep) {
    auto seq = m.new_sequence();
    auto t0 = Clock::now();
    seq->prefill(std::span(toks).first(static_cast<size_t>(ctx)));
    r.prefill_tps = std::max(r.prefill_tps, ctx / since(t0));
    t0 = Clock::now();
    for (int i = 0; i < decode; ++i) seq->decode(toks[static_cast<size_t>(ctx + i)]);
    r.decode_tps = std::max(r.decode_tps, decode / since(t0));
  }
  return r;
}

// Bytes one decode step at context ctx reads: linear weights (the embedding lookup reads one
// row, so a tied token_embd counts once, as the output projection) plus the visible KV.
double decode_bytes(const Model& m, int ctx, KvType kv) {
  const ModelConfig& c = m.config();
  double kv_bytes = 0;
  const double per_tok =
      c.n_kv_heads * (c.head_dim_k + c.head_dim_v) * (kv == KvType::F16 ? 2.0 : 1.0);
  for (int l = 0; l < c.n_layers; ++l) {
    const bool sl = c.layer_sliding[static_cast<size_t>(l)];
    kv_bytes += per_tok * (sl ? std::min(ctx, c.sliding_window) : ctx);
  }
  return static_cast<double>(m.weight_bytes()) + kv_bytes;
}

// The whole of `value` as an integer, for option `option` (std::invalid_argument otherwise).
int to_int(const std::string& option, const std::string& value) {
  int v = 0;
  const char* end = value.data() + value.size();
  const auto r = std::from_chars(value.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end)
    throw std::invalid_argument(option + " wants an integer, got `" + value + "`");
  return v;
}

std::vector<int> parse_list(const std::string& option, const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) v.push_back(to_int(option, x));
  return v;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string join(const std::vector<double>& v) {
  std::string s;
  char buf[32];
  for (double x : v) {
    std::snprintf(buf, sizeof buf, "%.2f", x);
    s += (s.empty() ? "" : ", ") + std::string(buf);
  }
  return s;
}

// llama.cpp's prefill/decode t/s per context from its driver's JSON (0 when absent).
struct LlamaRows {
  nlohmann::json j;
  double at(int ctx, const char* key) const {
    if (!j.contains("rows") || !j["rows"].is_array()) return 0.0;
    for (const auto& r : j["rows"]) {
      // value(): a row without the field (or not an object) reads as absent, not a crash.
      if (r.is_object() && r.value("context", -1) == ctx) return r.value(key, 0.0);
    }
    return 0.0;
  }
};

constexpr const char* kUsage =
    "usage: bench_engine [--model GGUF] [--threads N] [--contexts 512,1024,...] [--decode N]\n"
    "                    [--repeats N] [--rounds N] [--no-llama | --llama-json FILE] [out.json]\n";

}  // namespace

int main(int argc, char** argv) {
  const fs::path root = VSYNTH_SOURCE_DIR;
  fs::path model_path = root / "models/gemma-3-270m-q4_k_m.gguf";
  int threads = 2, decode = 32, repeats = 2, rounds = 3;
  std::vector<int> contexts = {512, 1024, 2048, 4096};
  bool llama = true;
  std::string llama_json, out_path = "bench_engine.json";
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto next = [&] {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return std::string(argv[++i]);
      };
      if (a == "--model")
        model_path = next();
      else if (a == "--threads")
        threads = to_int(a, next());
      else if (a == "--contexts")
        contexts = parse_list(a, next());
      else if (a == "--decode")
        decode = to_int(a, next());
      else if (a == "--repeats")
        repeats = to_int(a, next());
      else if (a == "--rounds")
        rounds = to_int(a, next());
      else if (a == "--no-llama")
        llama = false;
      else if (a == "--llama-json")
        llama_json = next();
      else if (a == "-h" || a == "--help") {
        std::fputs(kUsage, stdout);
        return 0;
      } else if (a.starts_with("-"))
        throw std::invalid_argument("unknown option " + a);
      else
        out_path = a;
    }
    if (contexts.empty() || threads < 1 || decode < 1 || repeats < 1 || rounds < 1 ||
        *std::min_element(contexts.begin(), contexts.end()) < 1)
      throw std::invalid_argument(
          "--contexts, --threads, --decode, --repeats, --rounds must be >= 1");
    if (!llama_json.empty() && !fs::exists(llama_json))
      throw std::invalid_argument("--llama-json " + llama_json + ": no such file");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_engine: %s\n%s", e.what(), kUsage);
    return 2;
  }
  const int max_ctx = *std::max_element(contexts.begin(), contexts.end());
  ModelOptions opt;
  opt.threads = threads;
  opt.context_length = max_ctx + decode;
  std::shared_ptr<Model> f16, i8;
  try {
    f16 = Model::load(model_path, opt);
    opt.kv_type = KvType::Int8;
    i8 = Model::load(model_path, opt);
  } catch (const std::exception& e) {
    // A missing or unreadable model is the common first-run mistake: say so, don't abort().
    std::fprintf(stderr,
                 "bench_engine: %s\n(--model GGUF; scripts/setup-model.sh fetches the "
                 "default)\n",
                 e.what());
    return 1;
  }

  // The prompt: the code corpus, repeated to length.
  std::string text;
  for (const auto& e : fs::directory_iterator(root / "tests/data/golden/corpus")) {
    if (e.path().extension() == ".json") continue;
    std::ifstream in(e.path(), std::ios::binary);
    text += std::string(std::istreambuf_iterator<char>(in), {}) + "\n";
  }
  std::vector<int32_t> toks = f16->tokenizer().encode(text);
  const std::vector<int32_t> once(toks.begin() + 1, toks.end());
  while (static_cast<int>(toks.size()) < max_ctx + decode)
    toks.insert(toks.end(), once.begin(), once.end());
  toks.resize(static_cast<size_t>(max_ctx + decode));

  // llama.cpp, through the venv: run once per round (or read a given JSON once).
  const fs::path py = root / ".venv-bench/bin/python";
  const bool run_llama = llama && llama_json.empty() && fs::exists(py);
  const fs::path tok_path = fs::temp_directory_path() / "bench_engine_tokens.json";
  const std::string llama_out = (fs::temp_directory_path() / "bench_engine_llama.json").string();
  std::string llama_cmd;
  if (run_llama) {
    std::ofstream(tok_path) << nlohmann::json{{"tokens", toks}}.dump();
    std::string list;
    for (int c : contexts) list += (list.empty() ? "" : ",") + std::to_string(c);
    llama_cmd = py.string() + " " + (root / "scripts/bench/llama_cpp_engine_bench.py").string() +
                " " + model_path.string() + " " + tok_path.string() + " " + llama_out +
                " --threads " + std::to_string(threads) + " --contexts " + list + " --decode " +
                std::to_string(decode) + " --repeats " + std::to_string(repeats);
  }
  const auto llama_round = [&]() {
    LlamaRows l;
    std::string file = llama_json;
    if (run_llama) {
      std::printf("running llama.cpp: %s\n", llama_cmd.c_str());
      std::fflush(stdout);
      if (std::system(llama_cmd.c_str()) != 0) {
        std::printf("llama.cpp driver failed; its columns stay empty this round\n");
        return l;
      }
      file = llama_out;
    }
    if (!file.empty() && fs::exists(file)) {
      l.j = nlohmann::json::parse(std::ifstream(file), nullptr, /*allow_exceptions=*/false);
      if (l.j.is_discarded() || !l.j.is_object()) {
        std::printf("%s is not a JSON object; llama.cpp's columns stay empty this round\n",
                    file.c_str());
        l.j = nlohmann::json();
      }
    }
    return l;
  };

  std::printf("measuring streaming read bandwidth (%d threads)...\n", threads);
  const double bw = stream_gbps(threads, 3);

  // Rounds alternate llama.cpp and ours so that a change in the machine's load hits both sides
  // of a round alike; ratios are taken within a round and reported as medians over rounds.
  struct Round {
    LlamaRows llama;
    std::vector<Row> ours;  // per context, FP16 KV
    Row int8;               // at max_ctx
  };
  std::vector<Round> all;
  for (int r = 0; r < rounds; ++r) {
    std::printf("round %d/%d\n", r + 1, rounds);
    Round rd;
    rd.llama = llama_round();
    for (int c : contexts) {
      rd.ours.push_back(run_ours(*f16, toks, c, decode, repeats));
      std::printf("ours ctx %d: prefill %.1f t/s, decode %.2f t/s\n", c, rd.ours.back().prefill_tps,
                  rd.ours.back().decode_tps);
    }
    rd.int8 = run_ours(*i8, toks, max_ctx, decode, repeats);
    std::printf("ours ctx %d INT8 KV: prefill %.1f t/s, decode %.2f t/s\n", max_ctx,
                rd.int8.prefill_tps, rd.int8.decode_tps);
    all.push_back(std::move(rd));
  }

  std::printf(
      "\nEngine (CPU): %s, %d threads, decode %d tokens, best of %d per round, median of %d "
      "rounds; stream read %.1f GB/s\n\n",
      model_path.filename().string().c_str(), threads, decode, repeats, rounds, bw);
  std::printf(
      "| context | prefill t/s ours | llama.cpp | ratio | ratio per round | decode t/s ours | "
      "llama.cpp | ratio | ratio per round | decode MB/token | roofline |\n"
      "|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|\n");
  nlohmann::json j;
  j["model"] = model_path.filename().string();
  j["threads"] = threads;
  j["rounds"] = rounds;
  j["stream_read_gbps"] = bw;
  for (size_t ci = 0; ci < contexts.size(); ++ci) {
    const int ctx = contexts[ci];
    std::vector<double> op, od, lp, ld, rp, rdec;
    for (const Round& rd : all) {
      const Row& o = rd.ours[ci];
      const double l_p = rd.llama.at(ctx, "prefill_tps"), l_d = rd.llama.at(ctx, "decode_tps");
      op.push_back(o.prefill_tps);
      od.push_back(o.decode_tps);
      if (l_p > 0 && l_d > 0) {
        lp.push_back(l_p);
        ld.push_back(l_d);
        rp.push_back(o.prefill_tps / l_p);
        rdec.push_back(o.decode_tps / l_d);
      }
    }
    const double mb = decode_bytes(*f16, ctx, KvType::F16) / 1e6;
    const double roof = mb * 1e6 * median(od) / (bw * 1e9);
    std::printf("| %d | %.1f | %.1f | %.2f | %s | %.2f | %.2f | %.2f | %s | %.1f | %.0f%% |\n", ctx,
                median(op), median(lp), median(rp), join(rp).c_str(), median(od), median(ld),
                median(rdec), join(rdec).c_str(), mb, 100 * roof);
    j["rows"].push_back({{"context", ctx},
                         {"prefill_tps", median(op)},
                         {"decode_tps", median(od)},
                         {"llama_prefill_tps", median(lp)},
                         {"llama_decode_tps", median(ld)},
                         {"prefill_ratio", median(rp)},
                         {"decode_ratio", median(rdec)},
                         {"prefill_ratio_per_round", rp},
                         {"decode_ratio_per_round", rdec},
                         {"decode_mb_per_token", mb},
                         {"roofline", roof}});
  }
  std::vector<double> d16, d8, p16, p8, rd8, rp8;
  const auto max_i =
      static_cast<size_t>(std::max_element(contexts.begin(), contexts.end()) - contexts.begin());
  for (const Round& rd : all) {
    const Row& f = rd.ours[max_i];
    d16.push_back(f.decode_tps);
    d8.push_back(rd.int8.decode_tps);
    p16.push_back(f.prefill_tps);
    p8.push_back(rd.int8.prefill_tps);
    rd8.push_back(rd.int8.decode_tps / f.decode_tps);
    rp8.push_back(rd.int8.prefill_tps / f.prefill_tps);
  }
  std::printf(
      "\nKV cache at %d: FP16 decode %.2f t/s, prefill %.1f t/s | INT8 decode %.2f t/s "
      "(%.2fx; per round %s), prefill %.1f t/s (%.2fx)\n",
      max_ctx, median(d16), median(p16), median(d8), median(rd8), join(rd8).c_str(), median(p8),
      median(rp8));
  j["kv_at_max_context"] = {{"context", max_ctx},
                            {"f16_decode_tps", median(d16)},
                            {"int8_decode_tps", median(d8)},
                            {"f16_prefill_tps", median(p16)},
                            {"int8_prefill_tps", median(p8)},
                            {"int8_decode_ratio_per_round", rd8}};
  if (!all.empty() && all.front().llama.j.contains("llama_cpp_python"))
    j["llama_cpp_python"] = all.front().llama.j["llama_cpp_python"];
  std::ofstream(out_path) << j.dump(2) << "\n";
  std::printf("wrote %s\n", out_path.c_str());
  return 0;
}
