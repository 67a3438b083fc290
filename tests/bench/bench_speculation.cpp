// Speculative decoding on the default model, two measurements in one run (docs/performance.md):
//
// 1. The cost curve: the time of one prefill_all(k) (k = 1..8 tokens in one pass) over one
//    decode at contexts 512 and 4096. A verification of d drafted tokens is prefill_all(d + 1),
//    so r(k) = t(k) / t(decode) bounds any gain: with a tokens kept per step on average, one
//    step yields a + 1 tokens for r(d + 1) decodes' time.
// 2. Decode tokens/s, plain vs the n-gram drafter at several max_draft, vs self-drafts (the
//    model's first L layers over its N most frequent tokens) and a draft model, side by side per
//    round (rounds alternate the configurations; the best round reported, the machine is
//    shared), on code that repeats patterns, on a real code file, and on prose (greedy, and
//    sampled with one seed); with accepted tokens per verify step and a check that every
//    speculative run's tokens equal plain decoding's (sampled: the same seed gives the same
//    random stream). Each draft's decode time over the target's is measured first (the
//    DraftModel::cost the drafter's cost model estimates from weight bytes).
//
//   ninja -C build bench_speculation
//   ./build/tests/bench/bench_speculation [--model GGUF] [--threads 2] [--contexts 512,4096]
//       [--reps 7] [--new 128] [--drafts 2,4,6,8] [--rounds 3] [--skip-cost]
//       [--self 4:16384,6:32768,9:32768] [--self-drafts 4] [--draft-model GGUF] [--cost-only]
//       [out.json]
//   --cost-only: the cost curve alone (what NgramDrafter::kVerifyCost is read from).
//   --self L:N,...: self-draft configurations (none: "--self none"); --self-drafts: their
//   max_draft values; --draft-model: a draft GGUF with the model's vocabulary (drafter model).
//
// Cost curve: the context is the code corpus (tests/data/golden/corpus/) repeated to length;
// --reps interleaved rounds time every k once each (each pass rolled back); best and median.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/engine.h"
#include "kernels/sampler/generator.h"
#include "kernels/sampler/model_drafter.h"

using namespace vsynth::kernels;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double since_ms(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The corpus's code, tokenized with BOS, repeated to at least n tokens.
std::vector<TokenId> corpus_tokens(const Model& m, const fs::path& root, size_t n) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(root / "tests/data/golden/corpus")) {
    if (e.path().extension() != ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) text += read_file(f) + "\n";
  const std::vector<TokenId> once = m.tokenizer().encode(text, {.add_special = false});
  std::vector<TokenId> out{m.tokenizer().bos()};
  while (out.size() < n) out.insert(out.end(), once.begin(), once.end());
  return out;
}

struct CostRow {
  int context = 0;
  double decode_ms = 0, decode_median_ms = 0;
  std::vector<double> prefill_all_ms, prefill_all_median_ms;  // [k - 1]
};

// Times of decode and prefill_all(k), k = 1..max_k, right after `ctx` tokens of context: `reps`
// rounds, each timing every k once in turn (so load on the shared machine hits all alike), each
// pass rolled back. The best of the rounds is the uncontended cost; the median is kept too.
CostRow cost_curve(Model& m, const std::vector<TokenId>& toks, int ctx, int reps, int max_k) {
  CostRow r;
  r.context = ctx;
  auto seq = m.new_sequence();
  seq->prefill(std::span(toks).first(static_cast<size_t>(ctx)));
  const std::span<const TokenId> next = std::span(toks).subspan(static_cast<size_t>(ctx));
  std::vector<std::vector<double>> t(static_cast<size_t>(max_k) + 1);  // [k], 0: decode
  for (int rep = -1; rep < reps; ++rep) {                              // -1: warm-up
    for (int k = 0; k <= max_k; ++k) {
      const auto t0 = Clock::now();
      if (k == 0) {
        seq->decode(next[0]);
      } else {
        seq->prefill_all(next.first(static_cast<size_t>(k)));
      }
      if (rep >= 0) t[static_cast<size_t>(k)].push_back(since_ms(t0));
      seq->rollback(ctx);
    }
  }
  auto best = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  r.decode_ms = best(t[0]);
  r.decode_median_ms = median(t[0]);
  for (int k = 1; k <= max_k; ++k) {
    r.prefill_all_ms.push_back(best(t[static_cast<size_t>(k)]));
    r.prefill_all_median_ms.push_back(median(t[static_cast<size_t>(k)]));
  }
  return r;
}

// A Python module that repeats one getter/setter pattern per field: the model continues it.
std::string repetitive_code() {
  const char* fields[] = {"name", "host", "port", "timeout", "retries", "user"};
  std::string s =
      "class ServerConfig:\n    \"\"\"Connection settings, one accessor pair per field.\"\"\"\n\n"
      "    def __init__(self):\n";
  for (const char* f : fields) s += std::string("        self._") + f + " = None\n";
  for (const char* f : fields) {
    s += std::string("\n    def get_") + f + "(self):\n        return self._" + f + "\n";
    s += std::string("\n    def set_") + f + "(self, value):\n        self._" + f +
         " = value\n        return self\n";
  }
  return s + "\n    def get_password(self):\n";
}

const char* kProse =
    "In the spring of that year the river rose higher than anyone in the valley could remember. "
    "Farmers moved their animals to the hills, and the schoolhouse, which stood on a low rise "
    "near the old mill, became a shelter for families whose homes had flooded. My grandmother "
    "was nine then. She told me later that what she remembered most was not the water but the "
    "quiet: no carts on the road, no bells from the church, only the sound of rain on the "
    "roof and the low voices of adults deciding what to do next. One morning";

struct Workload {
  std::string name;
  std::vector<TokenId> prompt;
  float temperature = 0.0f;  // > 0: sampled with seed 1 (the same stream in every configuration)
};

// One configuration of phase 2.
struct Config {
  std::string name;  // "none", "ngram/4", "self 6:32768/4", "model/4"
  SpeculationOptions spec;
};

// Best-of-`reps` decode time of `m` right after `ctx` tokens of `toks` (each step rolled back).
double decode_ms(Model& m, const std::vector<TokenId>& toks, int ctx, int reps) {
  auto seq = m.new_sequence();
  seq->prefill(std::span(toks).first(static_cast<size_t>(ctx)));
  double best = 1e30;
  for (int rep = -1; rep < reps; ++rep) {
    const auto t0 = Clock::now();
    seq->decode(toks[static_cast<size_t>(ctx)]);
    if (rep >= 0) best = std::min(best, since_ms(t0));
    seq->rollback(ctx);
  }
  return best;
}

struct DecodeStats {
  std::vector<double> tps;  // per round
  Generation last;
  bool identical = true;
};

}  // namespace

int main(int argc, char** argv) {
  const fs::path root = VSYNTH_SOURCE_DIR;
  fs::path model_path = root / "models/gemma-3-270m-q4_k_m.gguf";
  int threads = 2, reps = 7, new_tokens = 128, rounds = 3;
  std::vector<int> contexts = {512, 4096}, drafts = {2, 4, 6, 8};
  bool skip_cost = false, cost_only = false;
  std::vector<std::pair<int, int>> selfs = {{4, 16384}, {6, 32768}, {9, 32768}};  // (L, N)
  std::vector<int> self_drafts = {4};
  fs::path draft_model_path;
  std::string out_path = "bench_speculation.json";
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
      else if (a == "--reps")
        reps = to_int(a, next());
      else if (a == "--new")
        new_tokens = to_int(a, next());
      else if (a == "--drafts")
        drafts = parse_list(a, next());
      else if (a == "--rounds")
        rounds = to_int(a, next());
      else if (a == "--skip-cost")
        skip_cost = true;
      else if (a == "--cost-only")
        cost_only = true;
      else if (a == "--self") {
        selfs.clear();
        const std::string v = next();
        std::stringstream ss(v == "none" ? "" : v);
        for (std::string x; std::getline(ss, x, ',');) {
          const auto colon = x.find(':');
          if (colon == std::string::npos) throw std::invalid_argument("--self wants L:N,...");
          selfs.emplace_back(to_int(a, x.substr(0, colon)), to_int(a, x.substr(colon + 1)));
        }
      } else if (a == "--self-drafts")
        self_drafts = parse_list(a, next());
      else if (a == "--draft-model")
        draft_model_path = next();
      else if (a.starts_with("-"))
        throw std::invalid_argument("unknown option " + a);
      else
        out_path = a;
    }
    if (skip_cost && cost_only) throw std::invalid_argument("--skip-cost and --cost-only conflict");
    if (threads < 1 || reps < 1 || new_tokens < 2 || rounds < 1 || drafts.empty())
      throw std::invalid_argument("--threads, --reps, --rounds >= 1, --new >= 2, --drafts given");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }

  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured
  ModelOptions mo;
  mo.threads = threads;
  mo.context_length = std::max(4096, *std::max_element(contexts.begin(), contexts.end()) + 64);
  auto model = Model::load(model_path, mo);
  std::printf("model %s, %s\n", model_path.filename().c_str(), model->backend().c_str());
  nlohmann::json out;
  out["model"] = model_path.filename().string();
  out["backend"] = model->backend();

  // Phase 1: the cost curve.
  if (!skip_cost) {
    const int max_k = 8;
    const std::vector<TokenId> toks = corpus_tokens(
        *model, root,
        static_cast<size_t>(*std::max_element(contexts.begin(), contexts.end())) + 16);
    std::printf(
        "\ncost of prefill_all(k) over one decode: best of %d interleaved rounds "
        "(median in brackets)\n%8s %16s",
        reps, "context", "decode ms");
    for (int k = 1; k <= max_k; ++k) std::printf("          k=%d", k);
    std::printf("\n");
    for (int ctx : contexts) {
      const CostRow r = cost_curve(*model, toks, ctx, reps, max_k);
      std::printf("%8d %6.2f [%6.2f]", ctx, r.decode_ms, r.decode_median_ms);
      nlohmann::json row = {
          {"context", ctx}, {"decode_ms", r.decode_ms}, {"decode_median_ms", r.decode_median_ms}};
      for (int k = 1; k <= max_k; ++k) {
        const double t = r.prefill_all_ms[static_cast<size_t>(k - 1)];
        const double tm = r.prefill_all_median_ms[static_cast<size_t>(k - 1)];
        std::printf("  %4.2f [%4.2f]", t / r.decode_ms, tm / r.decode_median_ms);
        row["prefill_all_ms"].push_back(t);
        row["ratio"].push_back(t / r.decode_ms);
        row["ratio_median"].push_back(tm / r.decode_median_ms);
      }
      std::printf("\n");
      out["cost"].push_back(row);
    }
  }

  if (cost_only) {
    std::ofstream(out_path) << out.dump(2) << "\n";
    std::printf("\nwrote %s\n", out_path.c_str());
    return 0;
  }

  // Phase 2: plain vs speculative decoding, the configurations alternating within each round.
  std::vector<Workload> loads;
  const Tokenizer& tok = model->tokenizer();
  loads.push_back({"code, repeated pattern", tok.encode(repetitive_code(), {.add_special = true})});
  {
    const std::string file = read_file(root / "tests/data/golden/corpus/interval_tree.py");
    loads.push_back({"code, real file (interval_tree.py, first 60%)",
                     tok.encode(file.substr(0, file.size() * 6 / 10), {.add_special = true})});
  }
  loads.push_back({"prose, greedy", tok.encode(kProse, {.add_special = true})});
  loads.push_back(
      {"prose, sampled (T 0.8, top-k 40)", tok.encode(kProse, {.add_special = true}), 0.8f});

  // The configurations: plain, n-gram, self-drafts, a draft model; each draft's measured cost.
  std::vector<Config> configs{{"none", {}}};
  for (int d : drafts) {
    configs.push_back(
        {"ngram/" + std::to_string(d), {.drafter = DrafterKind::Ngram, .max_draft = d}});
  }
  std::vector<std::pair<std::string, std::shared_ptr<const DraftModel>>> draft_models;
  for (auto [layers, vocab] : selfs) {
    draft_models.emplace_back("self " + std::to_string(layers) + ":" + std::to_string(vocab),
                              DraftModel::self(model, {.layers = layers, .vocab = vocab}));
  }
  if (!draft_model_path.empty()) {
    draft_models.emplace_back("model", DraftModel::separate(*model, model_path.string(),
                                                            Model::load(draft_model_path, mo),
                                                            draft_model_path.string()));
  }
  {
    const std::vector<TokenId> toks = corpus_tokens(*model, root, 600);
    const double target_ms = decode_ms(*model, toks, 512, reps);
    std::printf("\ndraft decode cost at context 512, best of %d (target decode %.2f ms)\n", reps,
                target_ms);
    std::printf("%-16s %10s %12s %14s\n", "draft", "decode ms", "measured x", "weight-bytes x");
    for (const auto& [name, d] : draft_models) {
      const double ms = decode_ms(*d->model, toks, 512, reps);
      std::printf("%-16s %10.2f %12.3f %14.3f\n", name.c_str(), ms, ms / target_ms, d->cost);
      out["draft_cost"].push_back({{"draft", name},
                                   {"decode_ms", ms},
                                   {"measured", ms / target_ms},
                                   {"estimate", d->cost}});
      for (int md : self_drafts) {
        const DrafterKind kind = name == "model" ? DrafterKind::Model : DrafterKind::Self;
        configs.push_back(
            {name + "/" + std::to_string(md), {.drafter = kind, .max_draft = md, .draft = d}});
      }
    }
  }
  std::printf("\ndecode, %d new tokens, %d threads, best of %d rounds\n", new_tokens, threads,
              rounds);
  std::printf("%-46s %-18s %8s %7s %9s %9s %8s %9s\n", "workload", "drafter", "tok/s", "speedup",
              "acc/step", "tok/pass", "kept %", "identical");
  for (const Workload& w : loads) {
    std::vector<DecodeStats> stats(configs.size());
    for (int round = 0; round < rounds; ++round) {
      for (size_t c = 0; c < configs.size(); ++c) {
        GenerateOptions o;
        o.sampler.temperature = w.temperature;
        o.sampler.seed = 1;
        o.max_new_tokens = new_tokens;
        o.stop_at_eog = false;  // every run decodes the same number of tokens
        o.speculation = configs[c].spec;
        auto seq = model->new_sequence();
        const auto first = seq->prefill(w.prompt);
        const std::vector<float> logits(first.begin(), first.end());
        Generation g = generate(*seq, tok, logits, o);
        stats[c].tps.push_back(1000.0 * static_cast<double>(g.tokens.size()) / g.decode_ms);
        if (c > 0) stats[c].identical = stats[c].identical && g.tokens == stats[0].last.tokens;
        stats[c].last = std::move(g);
      }
    }
    // Best of the rounds (the least contended), as for the cost curve; the JSON has them all.
    auto best = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
    const double plain_tps = best(stats[0].tps);
    for (size_t c = 0; c < configs.size(); ++c) {
      const Generation& g = stats[c].last;
      const double tps = best(stats[c].tps);
      const int passes = g.verify_steps + g.decode_steps;
      // Accepted per verify step counts the target's own token of the step too (the one
      // sampled from the last row checked), as speculative-decoding papers do.
      const double acc_step =
          g.verify_steps > 0 ? static_cast<double>(g.accepted + g.verify_steps) / g.verify_steps
                             : 0.0;
      const double per_pass = passes > 0 ? static_cast<double>(g.tokens.size() - 1) / passes : 0.0;
      const double kept = g.drafted > 0 ? 100.0 * g.accepted / g.drafted : 0.0;
      const std::string& name = configs[c].name;
      std::printf("%-46s %-18s %8.1f %6.2fx %9.2f %9.2f %8.1f %9s\n", c == 0 ? w.name.c_str() : "",
                  name.c_str(), tps, tps / plain_tps, acc_step, per_pass, kept,
                  c == 0 ? "-" : (stats[c].identical ? "yes" : "NO"));
      out["decode"].push_back({{"workload", w.name},
                               {"prompt_tokens", w.prompt.size()},
                               {"drafter", name},
                               {"tok_s", tps},
                               {"tok_s_rounds", stats[c].tps},
                               {"speedup", tps / plain_tps},
                               {"drafted", g.drafted},
                               {"accepted", g.accepted},
                               {"verify_steps", g.verify_steps},
                               {"decode_steps", g.decode_steps},
                               {"accepted_per_step", acc_step},
                               {"tokens_per_pass", per_pass},
                               {"identical", stats[c].identical}});
    }
  }
  std::ofstream(out_path) << out.dump(2) << "\n";
  std::printf("\nwrote %s\n", out_path.c_str());
  return 0;
}
