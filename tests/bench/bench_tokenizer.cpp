// Tokenizer throughput on the default model's vocabulary (Gemma 3, SentencePiece-style,
// 262144 pieces): load time, then encode and decode speed over the golden corpus files and two
// adversarial inputs (long runs of one character that many special tokens start with). Then the
// retrieval encoder's WordPiece (all-MiniLM-L6-v2's tokenizer.json, 30522 pieces) on the same
// inputs, whole (encode_pieces) and cut at 256 tokens (encode, what retrieval calls per chunk).
//
//   bench_tokenizer [out.json] [--model path.gguf] [--encoder tokenizer.json] [--corpus dir]
//     defaults: bench_tokenizer.json, models/gemma-3-270m-q4_k_m.gguf,
//               models/all-MiniLM-L6-v2/tokenizer.json (skipped when absent),
//               tests/data/golden/corpus (run from the repository root)
//
// Each timing is the best of 5 runs (the machine is shared). MB/s counts input bytes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/gguf/reader.h"
#include "kernels/tokenizer/gguf_vocab.h"
#include "kernels/tokenizer/tokenizer.h"
#include "kernels/tokenizer/wordpiece.h"

using namespace vsynth::kernels;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

template <class F>
double best_ms(F&& f, int runs = 5) {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, ms_since(t0));
  }
  return best;
}

struct Input {
  std::string name;
  std::string text;
};

// WordPiece rows: MB/s over whole inputs, and the time of one encode(text, 256).
nlohmann::json bench_wordpiece(const std::filesystem::path& path,
                               const std::vector<Input>& inputs) {
  const auto t0 = Clock::now();
  const WordPiece wp = WordPiece::from_file(path);
  const double load_ms = ms_since(t0);
  std::printf("\nWordPiece %s: %d pieces, load %.1f ms\n", path.string().c_str(), wp.vocab_size(),
              load_ms);
  std::printf("%-20s %10s %9s %10s %12s %14s\n", "input", "bytes", "pieces", "enc MB/s",
              "enc tok/s", "encode(256) us");
  nlohmann::json out = {{"tokenizer", path.string()}, {"load_ms", load_ms}, {"results", {}}};
  for (const auto& in : inputs) {
    std::vector<int32_t> ids, cut;
    const double enc = best_ms([&] { ids = wp.encode_pieces(in.text); });
    const double enc256 = best_ms([&] { cut = wp.encode(in.text, 256); });
    const double mb = static_cast<double>(in.text.size()) / 1e6;
    std::printf("%-20s %10zu %9zu %10.2f %12.0f %14.1f\n", in.name.c_str(), in.text.size(),
                ids.size(), mb / (enc / 1e3), static_cast<double>(ids.size()) / (enc / 1e3),
                enc256 * 1e3);
    out["results"].push_back({{"input", in.name},
                              {"bytes", in.text.size()},
                              {"pieces", ids.size()},
                              {"encode_ms", enc},
                              {"encode_256_ms", enc256}});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "bench_tokenizer.json";
  std::filesystem::path model = "models/gemma-3-270m-q4_k_m.gguf";
  std::filesystem::path encoder = "models/all-MiniLM-L6-v2/tokenizer.json";
  std::filesystem::path corpus = "tests/data/golden/corpus";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model" && i + 1 < argc) {
      model = argv[++i];
    } else if (a == "--encoder" && i + 1 < argc) {
      encoder = argv[++i];
    } else if (a == "--corpus" && i + 1 < argc) {
      corpus = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::printf(
          "usage: %s [out.json] [--model path.gguf] [--encoder tokenizer.json] [--corpus dir]\n",
          argv[0]);
      return 2;
    } else {
      out_path = a;
    }
  }
  if (!std::filesystem::exists(model)) {
    std::printf("model %s is absent (run scripts/setup-model.sh)\n", model.string().c_str());
    return 1;
  }

  const auto t0 = Clock::now();
  const GgufFile file = GgufFile::open(model);
  const double open_ms = ms_since(t0);
  const auto t1 = Clock::now();
  const Vocab vocab = load_vocab(file);
  const double vocab_ms = ms_since(t1);
  const auto t2 = Clock::now();
  const Tokenizer tok(vocab);
  const double build_ms = ms_since(t2);
  std::printf("vocabulary: %zu pieces; open %.1f ms, load_vocab %.1f ms, Tokenizer() %.1f ms\n\n",
              tok.size(), open_ms, vocab_ms, build_ms);

  std::vector<Input> inputs;
  std::string all;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(corpus)) {
    if (e.path().extension() != ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    std::ifstream in(p, std::ios::binary);
    inputs.push_back({p.filename().string(), std::string(std::istreambuf_iterator<char>(in), {})});
    all += inputs.back().text;
  }
  std::string all20;
  for (int i = 0; i < 20; ++i) all20 += all;
  inputs.push_back({"all files x20", all20});
  inputs.push_back({"200k spaces", std::string(200000, ' ')});
  inputs.push_back({"200k '<'", std::string(200000, '<')});

  nlohmann::json j;
  j["model"] = model.string();
  j["vocab_size"] = tok.size();
  j["load_ms"] = {{"open", open_ms}, {"load_vocab", vocab_ms}, {"tokenizer", build_ms}};
  j["results"] = nlohmann::json::array();
  std::printf("%-20s %10s %9s %10s %12s %10s\n", "input", "bytes", "tokens", "enc MB/s",
              "enc tok/s", "dec MB/s");
  for (const auto& in : inputs) {
    std::vector<TokenId> ids;
    const double enc = best_ms([&] { ids = tok.encode(in.text); });
    std::string back;
    const double dec = best_ms([&] { back = tok.decode(ids, {true, true, true}); });
    const double mb = static_cast<double>(in.text.size()) / 1e6;
    std::printf("%-20s %10zu %9zu %10.2f %12.0f %10.1f\n", in.name.c_str(), in.text.size(),
                ids.size(), mb / (enc / 1e3), static_cast<double>(ids.size()) / (enc / 1e3),
                mb / (dec / 1e3));
    j["results"].push_back({{"input", in.name},
                            {"bytes", in.text.size()},
                            {"tokens", ids.size()},
                            {"encode_ms", enc},
                            {"decode_ms", dec},
                            {"roundtrip", back == in.text}});
  }
  if (std::filesystem::exists(encoder)) {
    j["wordpiece"] = bench_wordpiece(encoder, inputs);
  } else {
    std::printf("\nWordPiece: %s is absent (run scripts/setup-embedder.sh)\n",
                encoder.string().c_str());
  }
  std::ofstream(out_path) << j.dump(2) << "\n";
  std::printf("\nwrote %s\n", out_path.c_str());
  return 0;
}
