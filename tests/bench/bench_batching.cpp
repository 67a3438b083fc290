// Continuous batching on the default model (docs/performance.md, "Continuous batching"), two
// measurements in one run:
//
// 0. Step cost (--step-rounds N > 0): for each S in --streams, S sequences prefilled with their
//    prompts, then N rounds of one forward_batch of S decode rows per S, the sizes interleaved
//    within each round so that load on the machine falls on all of them alike: the median step
//    time, its ratio to a one-row step, and the aggregate gain S x step(1) / step(S) that
//    batching can reach at most. --steps-only stops after it (e.g. under
//    valgrind --tool=callgrind --toggle-collect='*forward_batch*', whose instruction counts do
//    not depend on the load).
// 1. Streams: S = 1, 2, 4, 8 threads each generating --new tokens (greedy, EOG ignored) from
//    its own code prompt through one Scheduler, against the same S requests served one at a
//    time on the plain engine: aggregate tokens/s and its ratio, per-stream inter-token p50
//    (time between a stream's consecutive evaluations, sampling included) over a lone
//    stream's (the p50 gap of the same row's serial run), the scheduler's wait from submission to
//    step start (p50 / p95), rows per step, the p50 time of the steps that held every stream
//    and the mean time between steps (gathering, hand-offs, the streams' sampling), and whether
//    every stream's tokens equal the serial run's.
// 2. Static vs dynamic: --requests requests arriving as a Poisson process at --rate req/s
//    (default: 8 x the rate a lone stream serves them, enough to keep about 8 in flight). New
//    tokens per request (--lengths): `stops` (default), where the request's own greedy
//    completion stops as complete.yaml stops it (its stop strings, EOG, or --max-new, default
//    its max_new_tokens 48); `uniform`, drawn uniformly in [new/2, 2 new] (seeded). Static:
//    groups of 8 in arrival order, each group prefilled and decoded in lockstep with forward_batch
//    until its longest request ends, no request admitted mid-group, its rows sampled one after
//    another by generate()'s sampler (greedy, with logprobs). Dynamic: each request a thread
//    from its arrival through the Scheduler, at most max_rows of them generating at once (in
//    arrival order, as generate.llm's workers, which default to the row cap, admit items; a
//    finished request's slot goes to the next at once), run twice: `dynamic` with the
//    scheduler's default row cap (16) and `dynamic8` with static's 8; all give the same tokens
//    (checked per round). Requests/s (all requests over first arrival to last
//    completion) and mean latency (arrival to last token); per round each dynamic run's steps,
//    rows per step, full windows and share of time in steps; at the end each run's inter-token
//    p50 / p95 / p99 over every request (dynamic: a new request's prefill step holds up the
//    running ones; static: none joins mid-group).
//
//   ninja -C build bench_batching
//   ./build/tests/bench/bench_batching [--model GGUF] [--threads 2] [--new 32]
//       [--streams 1,2,4,8] [--window 5] [--requests 32] [--rate R] [--seed 1]
//       [--step-rounds N] [--steps-only] [--rounds 3] [--lengths stops|uniform]
//       [--max-new 48] [out.json]
// --rounds: parts 1 and 2 are repeated (each round runs every S, serial then batched, then
// static then dynamic) and the ratios' medians printed: on a shared machine one 32-token run
// moves the 4-stream inter-token ratio by +-0.5 between runs.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/engine.h"
#include "kernels/sampler/generator.h"
#include "kernels/sched/scheduler.h"
#include "tests/bench/bench_json.h"

using namespace vsynth::kernels;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
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

// Eight code prompts of different lengths; request i uses prompt i % 8 with its index in it.
std::string prompt_text(size_t i) {
  static const char* kBodies[] = {
      "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
      "import json\n\ndef load_config(path):\n    with open(path) as f:\n",
      "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, x):\n",
      "#include <vector>\n\nint sum(const std::vector<int>& v) {\n",
      ("def parse_csv_line(line, sep=','):\n    fields = []\n    current = ''\n    for ch in "
       "line:\n"),
      "fn main() {\n    let args: Vec<String> = std::env::args().collect();\n",
      "def binary_search(xs, target):\n    lo, hi = 0, len(xs) - 1\n    while lo <= hi:\n",
      "function debounce(fn, ms) {\n  let timer = null;\n  return function (...args) {\n",
  };
  return "# request " + std::to_string(i) + "\n" + kBodies[i % 8];
}

// A Sequence wrapper that stamps the time each evaluation returns (inter-token gaps).
class Timed final : public Sequence {
 public:
  explicit Timed(std::unique_ptr<Sequence> s) : s_(std::move(s)) {}
  std::span<const float> prefill(std::span<const TokenId> t) override {
    return stamp(s_->prefill(t));
  }
  std::span<const float> prefill_all(std::span<const TokenId> t) override {
    return stamp(s_->prefill_all(t));
  }
  std::span<const float> decode(TokenId t) override { return stamp(s_->decode(t)); }
  int32_t position() const override { return s_->position(); }
  std::span<const TokenId> tokens() const override { return s_->tokens(); }
  std::span<const float> last_logits() const override { return s_->last_logits(); }
  void rollback(int32_t pos) override { s_->rollback(pos); }
  int32_t min_rollback_position() const override { return s_->min_rollback_position(); }
  std::unique_ptr<Sequence> fork() const override { return s_->fork(); }
  int64_t kv_bytes() const override { return s_->kv_bytes(); }
  const Model& model() const override { return s_->model(); }
  // Gaps between consecutive evaluations after the prefill (ms).
  std::vector<double> gaps() const {
    std::vector<double> g;
    for (size_t i = 1; i < stamps_.size(); ++i) g.push_back(ms(stamps_[i - 1], stamps_[i]));
    return g;
  }

 private:
  std::span<const float> stamp(std::span<const float> r) {
    stamps_.push_back(Clock::now());
    return r;
  }
  std::unique_ptr<Sequence> s_;
  std::vector<Clock::time_point> stamps_;
};

struct Result {
  std::vector<TokenId> tokens;
  std::vector<double> gaps;
  Clock::time_point done;
};

Result run_one(std::unique_ptr<Sequence> seq, const Tokenizer& tok, size_t i, int new_tokens) {
  Timed t(std::move(seq));
  GenerateOptions g;
  g.max_new_tokens = new_tokens;
  g.stop_at_eog = false;
  g.sampler.temperature = 0.0f;
  const std::vector<TokenId> prompt = tok.encode(prompt_text(i));
  const std::span<const float> logits = t.prefill(prompt);
  Result r;
  r.tokens = generate(t, tok, logits, g).tokens;
  r.gaps = t.gaps();
  r.done = Clock::now();
  return r;
}

// complete.yaml's stop strings (the IDE completion pipeline's).
const std::vector<std::string> kCompleteStops = {"\n\n\n",  "\n}",   "\ndef ",   "\nclass ",
                                                 "\nfunc ", "\nfn ", "\npub fn "};

// The tokens request i's greedy completion makes before it stops as complete.yaml stops it (a
// stop string, EOG, or max_new): its length in the static-vs-dynamic workload. Every batched
// or static run of the request then decodes exactly these tokens.
int stop_length(Model& m, const Tokenizer& tok, size_t i, int max_new) {
  GenerateOptions g;
  g.max_new_tokens = max_new;
  g.stop = kCompleteStops;
  g.sampler.temperature = 0.0f;
  auto seq = m.new_sequence();
  const std::span<const float> logits = seq->prefill(tok.encode(prompt_text(i)));
  const Generation r = generate(*seq, tok, logits, g);
  return std::max(1, static_cast<int>(r.tokens.size()));
}

TokenId argmax(std::span<const float> x) {
  return static_cast<TokenId>(std::max_element(x.begin(), x.end()) - x.begin());
}

// Static batching of one group: prefill every request in one step, then decode in lockstep
// (finished requests drop out of the step, none join) until the longest is done. Each row's
// token is drawn by the same Sampler settings run_one's generate() uses (greedy, with the
// logprob), one row after another on this thread as a static serving loop samples its slots.
// `gaps` gets each request's time between consecutive evaluations (ms), as Timed records them
// for the dynamic runs.
void static_group(Model& m, const std::vector<std::vector<TokenId>>& prompts,
                  const std::vector<int>& lengths, std::vector<Clock::time_point>& done,
                  std::vector<std::vector<TokenId>>& tokens, std::vector<double>& gaps) {
  const size_t n = prompts.size();
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<BatchRow> rows(n);
  SamplerParams sp;
  sp.temperature = 0.0f;
  std::vector<Sampler> samplers(n, Sampler(sp));
  tokens.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    seqs.push_back(m.new_sequence());
    rows[i].sequence = seqs[i].get();
    rows[i].tokens = prompts[i];
    rows[i].publish = true;
  }
  m.forward_batch(rows);
  Clock::time_point evaluated = Clock::now();
  // Token 1 comes from the prefill; each step evaluates the newest token of every request
  // that still wants more (the last one is never evaluated, as in generate()).
  const auto draw = [&](size_t i, std::span<const float> logits) {
    tokens[i].push_back(samplers[i].sample(logits, tokens[i]).token);
  };
  for (size_t i = 0; i < n; ++i) {
    draw(i, rows[i].result);
    if (static_cast<int>(tokens[i].size()) >= lengths[i]) done[i] = Clock::now();
  }
  for (;;) {
    std::vector<BatchRow> step;
    std::vector<size_t> which;
    for (size_t i = 0; i < n; ++i) {
      if (static_cast<int>(tokens[i].size()) >= lengths[i]) continue;
      BatchRow r;
      r.sequence = seqs[i].get();
      r.tokens = {&tokens[i].back(), 1};
      step.push_back(r);
      which.push_back(i);
    }
    if (step.empty()) break;
    m.forward_batch(step);
    const Clock::time_point now = Clock::now();
    gaps.insert(gaps.end(), step.size(), ms(evaluated, now));
    evaluated = now;
    for (size_t k = 0; k < step.size(); ++k) {
      const size_t i = which[k];
      draw(i, step[k].result);
      if (static_cast<int>(tokens[i].size()) == lengths[i]) done[i] = Clock::now();
    }
  }
}

// The process's CPU time (ms, every thread): what a step costs a loaded machine, where wall
// time also counts the time other processes held the cores.
double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct StepCost {
  double wall_ms = 0, cpu_ms = 0;  // medians
};

// Part 0: the median wall and CPU time of one forward_batch of S decode rows, for each S in
// `sizes`.
std::vector<StepCost> step_costs(Model& m, const Tokenizer& tok, const std::vector<int>& sizes,
                                 int rounds) {
  const int most = *std::max_element(sizes.begin(), sizes.end());
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<TokenId> next;
  for (int i = 0; i < most; ++i) {
    seqs.push_back(m.new_sequence());
    next.push_back(argmax(seqs.back()->prefill(tok.encode(prompt_text(static_cast<size_t>(i))))));
  }
  std::vector<std::vector<double>> times(sizes.size()), cpu(sizes.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < sizes.size(); ++k) {
      std::vector<BatchRow> rows(static_cast<size_t>(sizes[k]));
      for (size_t i = 0; i < rows.size(); ++i) {
        rows[i].sequence = seqs[i].get();
        rows[i].tokens = {&next[i], 1};
      }
      const double c0 = cpu_ms();
      const Clock::time_point t0 = Clock::now();
      m.forward_batch(rows);
      times[k].push_back(ms(t0, Clock::now()));
      cpu[k].push_back(cpu_ms() - c0);
      for (size_t i = 0; i < rows.size(); ++i) next[i] = argmax(rows[i].result);
    }
  }
  std::vector<StepCost> med;
  for (size_t k = 0; k < sizes.size(); ++k) med.push_back({pct(times[k], 0.5), pct(cpu[k], 0.5)});
  return med;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path model_path = fs::path(VSYNTH_SOURCE_DIR) / "models/gemma-3-270m-q4_k_m.gguf";
  int threads = 2, new_tokens = 32, requests = 32, seed = 1, step_rounds = 0, rounds = 3;
  int max_new = 48;  // --lengths stops: complete.yaml's max_new_tokens
  std::string lengths_mode = "stops";
  bool steps_only = false;
  double window = 5.0, rate = 0.0;
  std::vector<int> streams = {1, 2, 4, 8};
  std::string out_path = "bench_batching.json";
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
      else if (a == "--new")
        new_tokens = to_int(a, next());
      else if (a == "--streams")
        streams = parse_list(a, next());
      else if (a == "--window")
        window = to_int(a, next());
      else if (a == "--requests")
        requests = to_int(a, next());
      else if (a == "--rate")
        rate = to_int(a, next());
      else if (a == "--seed")
        seed = to_int(a, next());
      else if (a == "--step-rounds")
        step_rounds = to_int(a, next());
      else if (a == "--rounds")
        rounds = to_int(a, next());
      else if (a == "--lengths")
        lengths_mode = next();
      else if (a == "--max-new")
        max_new = to_int(a, next());
      else if (a == "--steps-only")
        steps_only = true;
      else if (a.starts_with("-"))
        throw std::invalid_argument("unknown option " + a);
      else
        out_path = a;
    }
    if (threads < 1 || new_tokens < 2 || requests < 1 || streams.empty() || rounds < 1 ||
        max_new < 2)
      throw std::invalid_argument(
          "--threads >= 1, --new >= 2, --max-new >= 2, --requests >= 1, --rounds >= 1, "
          "--streams given");
    if (lengths_mode != "stops" && lengths_mode != "uniform")
      throw std::invalid_argument("--lengths wants stops or uniform, got `" + lengths_mode + "`");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }

  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ModelOptions mo;
  mo.threads = threads;
  mo.context_length = 1024;
  mo.kv_pool_tokens = 64 * 1024;
  auto model = Model::load(model_path, mo);
  const Tokenizer& tok = model->tokenizer();
  SchedulerOptions so;
  so.window_ms = window;
  std::printf("model %s, %s, window %.1f ms\n", model_path.filename().c_str(),
              model->backend().c_str(), window);
  nlohmann::json out;
  out["model"] = model_path.filename().string();
  out["backend"] = model->backend();
  out["window_ms"] = window;
  out["new_tokens"] = new_tokens;

  // Part 0: what one batched step costs against a one-row step.
  if (step_rounds > 0) {
    std::vector<int> sizes = streams;
    if (std::find(sizes.begin(), sizes.end(), 1) == sizes.end()) sizes.insert(sizes.begin(), 1);
    const std::vector<StepCost> med = step_costs(*model, tok, sizes, step_rounds);
    const StepCost one =
        med[static_cast<size_t>(std::find(sizes.begin(), sizes.end(), 1) - sizes.begin())];
    std::printf(
        "\nstep cost, median of %d rounds (sizes interleaved; cpu: the process's CPU time, all "
        "threads)\n%5s %10s %9s %10s %10s %9s %10s\n",
        step_rounds, "rows", "step_ms", "vs_1row", "max_gain", "cpu_ms", "cpu_vs_1", "cpu_gain");
    for (size_t k = 0; k < sizes.size(); ++k) {
      const StepCost& c = med[k];
      std::printf("%5d %10.2f %9.2f %10.2f %10.2f %9.2f %10.2f\n", sizes[k], c.wall_ms,
                  c.wall_ms / one.wall_ms, sizes[k] * one.wall_ms / c.wall_ms, c.cpu_ms,
                  c.cpu_ms / one.cpu_ms, sizes[k] * one.cpu_ms / c.cpu_ms);
      out["step_cost"].push_back({{"rows", sizes[k]},
                                  {"step_ms", c.wall_ms},
                                  {"vs_one_row", c.wall_ms / one.wall_ms},
                                  {"max_gain", sizes[k] * one.wall_ms / c.wall_ms},
                                  {"cpu_ms", c.cpu_ms},
                                  {"cpu_vs_one_row", c.cpu_ms / one.cpu_ms},
                                  {"cpu_max_gain", sizes[k] * one.cpu_ms / c.cpu_ms}});
    }
  }
  if (steps_only) {
    std::printf("(--steps-only)\n");
    return 0;
  }

  // Part 1: concurrent streams vs the same requests one at a time.
  std::printf("\n%7s %12s %12s %7s %10s %10s %8s %9s %9s %9s %8s %8s %5s\n", "streams",
              "serial_tok/s", "batch_tok/s", "ratio", "itl_p50", "lone_p50", "itl_x", "wait_p95",
              "window_p95", "rows/step", "step_ms", "gap_ms", "same");
  // A warm-up request first (discarded): the first pass over the weights pays page faults and
  // the CPU's clock ramp, which would land on round 1's lone stream alone.
  run_one(model->new_sequence(), tok, 0, new_tokens);
  double lone_p50 = 0, lone_req_ms = 0;
  std::map<int, std::vector<double>> ratios, itl_ratios;  // per S, one per round
  for (int round = 0; round < rounds; ++round)
    for (int S : streams) {
      std::vector<Result> ser;
      const Clock::time_point s0 = Clock::now();
      for (int i = 0; i < S; ++i) {
        ser.push_back(run_one(model->new_sequence(), tok, static_cast<size_t>(i), new_tokens));
      }
      const double ser_ms = ms(s0, Clock::now());
      std::vector<double> ser_gaps;
      for (const Result& r : ser) ser_gaps.insert(ser_gaps.end(), r.gaps.begin(), r.gaps.end());
      // The lone stream's inter-token time is this row's own serial run (the same S requests one
      // at a time, just before the batched run): side by side, so that drift in the machine's
      // load between rows does not enter the ratio.
      lone_p50 = pct(ser_gaps, 0.5);
      if (lone_req_ms == 0) lone_req_ms = ser_ms / S;

      std::vector<Result> bat(static_cast<size_t>(S));
      Scheduler sched(model, so);
      const Clock::time_point b0 = Clock::now();
      {
        std::vector<std::thread> ts;
        for (int i = 0; i < S; ++i) {
          ts.emplace_back([&, i] {
            bat[static_cast<size_t>(i)] =
                run_one(sched.new_sequence(), tok, static_cast<size_t>(i), new_tokens);
          });
        }
        for (auto& t : ts) t.join();
      }
      const double bat_ms = ms(b0, Clock::now());
      std::vector<double> itl;
      bool same = true;
      for (int i = 0; i < S; ++i) {
        const Result& r = bat[static_cast<size_t>(i)];
        itl.push_back(pct(r.gaps, 0.5));
        same = same && r.tokens == ser[static_cast<size_t>(i)].tokens;
      }
      const SchedulerStats st = sched.stats();
      const double toks = static_cast<double>(S) * new_tokens;
      const double ser_tps = toks / ser_ms * 1000, bat_tps = toks / bat_ms * 1000;
      const double itl_p50 = pct(itl, 0.5);
      const double rows_per_step = static_cast<double>(st.rows) / std::max<int64_t>(1, st.steps);
      // The p50 time of the steps that held every stream, and the mean time between steps
      // (gathering, hand-offs, sampling).
      std::vector<double> full_steps;
      for (size_t k = 0; k < st.step_ms.size(); ++k) {
        if (st.step_rows[k] == S) full_steps.push_back(st.step_ms[k]);
      }
      const double step_ms = pct(full_steps, 0.5);
      const double gap_ms =
          (bat_ms - st.busy_ms) / static_cast<double>(std::max<int64_t>(1, st.steps));
      ratios[S].push_back(bat_tps / ser_tps);
      itl_ratios[S].push_back(itl_p50 / lone_p50);
      std::printf("%7d %12.1f %12.1f %7.2f %10.2f %10.2f %8.2f %9.2f %9.2f %9.2f %8.2f %8.2f %5s\n",
                  S, ser_tps, bat_tps, bat_tps / ser_tps, itl_p50, lone_p50, itl_p50 / lone_p50,
                  pct(st.wait_ms, 0.95), pct(st.window_wait_ms, 0.95), rows_per_step, step_ms,
                  gap_ms, same ? "yes" : "NO");
      out["streams"].push_back({{"round", round + 1},
                                {"streams", S},
                                {"serial_tok_s", ser_tps},
                                {"batched_tok_s", bat_tps},
                                {"ratio", bat_tps / ser_tps},
                                {"itl_p50_ms", itl_p50},
                                {"lone_itl_p50_ms", lone_p50},
                                {"itl_ratio", itl_p50 / lone_p50},
                                {"window_wait_p95_ms", pct(st.window_wait_ms, 0.95)},
                                {"wait_p95_ms", pct(st.wait_ms, 0.95)},
                                {"rows_per_step", rows_per_step},
                                {"step_ms", step_ms},
                                {"gap_ms", gap_ms},
                                {"same_tokens", same}});
    }

  std::printf("\nmedian of %d round(s): streams, aggregate ratio, inter-token ratio\n", rounds);
  for (int S : streams) {
    const double r = pct(ratios[S], 0.5), x = pct(itl_ratios[S], 0.5);
    std::printf("%7d %7.2f %8.2f\n", S, r, x);
    out["streams_median"].push_back(
        {{"streams", S}, {"ratio", r}, {"itl_ratio", x}, {"rounds", rounds}});
  }

  // Part 2: static batches of 8 vs dynamic, Poisson arrivals. The new tokens per request: where
  // each request's own greedy completion stops (--lengths stops) or uniform (--lengths uniform).
  std::vector<int> lengths(static_cast<size_t>(requests));
  std::vector<std::vector<TokenId>> prompts;
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::uniform_int_distribution<int> len(new_tokens / 2, 2 * new_tokens);
  for (int i = 0; i < requests; ++i) {
    const auto k = static_cast<size_t>(i);
    prompts.push_back(tok.encode(prompt_text(k)));
    if (lengths_mode == "uniform") {
      lengths[k] = len(rng);
      continue;
    }
    lengths[k] = stop_length(*model, tok, k, max_new);
  }
  double mean_len = 0;
  for (int l : lengths) mean_len += l;
  mean_len /= requests;
  std::vector<int> sorted_len = lengths;
  std::sort(sorted_len.begin(), sorted_len.end());
  // Default rate: 8 x what a lone stream serves of this mix (lone_req_ms is part 1's --new).
  if (rate <= 0) rate = 8.0 * 1000.0 / std::max(1.0, lone_req_ms * mean_len / new_tokens);
  std::exponential_distribution<double> gap(rate / 1000.0);  // per ms
  std::vector<double> arrive_ms(static_cast<size_t>(requests));
  double t = 0;
  for (int i = 0; i < requests; ++i) {
    arrive_ms[static_cast<size_t>(i)] = t;
    t += gap(rng);
  }
  out["static_vs_dynamic"]["lengths_mode"] = lengths_mode;
  out["static_vs_dynamic"]["lengths"] = lengths;
  out["static_vs_dynamic"]["mean_length"] = mean_len;
  const auto at = [](Clock::time_point base, double off) {
    return base + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double, std::milli>(off));
  };
  const auto summarize = [&](const char* name, Clock::time_point base,
                             const std::vector<Clock::time_point>& done) {
    double lat = 0;
    Clock::time_point last = base;
    for (int i = 0; i < requests; ++i) {
      lat += ms(at(base, arrive_ms[static_cast<size_t>(i)]), done[static_cast<size_t>(i)]);
      last = std::max(last, done[static_cast<size_t>(i)]);
    }
    const double rps = requests / ms(base, last) * 1000, mean = lat / requests;
    std::printf("%8s %10.2f %14.1f\n", name, rps, mean);
    return std::pair{rps, mean};
  };
  std::printf(
      "\n%d requests, Poisson %.2f req/s, new tokens (%s) min %d, p50 %d, max %d, mean %.1f\n"
      "%8s %10s %14s\n",
      requests, rate, lengths_mode.c_str(), sorted_len.front(), sorted_len[sorted_len.size() / 2],
      sorted_len.back(), mean_len, "mode", "req/s", "mean_lat_ms");
  out["static_vs_dynamic"]["rate_req_s"] = rate;
  out["static_vs_dynamic"]["requests"] = requests;

  // Static then dynamic in each round, so that both see the same drift in the machine's load.
  std::map<std::string, std::vector<double>> sd_ratios, latency_ratios;  // by dynamic run
  // Every request's gaps between consecutive evaluations, all rounds, by run.
  std::map<std::string, std::vector<double>> itl;
  std::mutex itl_mu;
  for (int round = 0; round < rounds; ++round) {
    std::vector<Clock::time_point> done_s(static_cast<size_t>(requests));
    std::vector<std::vector<TokenId>> static_tokens(static_cast<size_t>(requests));
    std::vector<std::vector<TokenId>> dynamic_tokens(static_cast<size_t>(requests));
    const Clock::time_point base_s = Clock::now();
    for (int g0 = 0; g0 < requests; g0 += 8) {
      const int g1 = std::min(requests, g0 + 8);
      std::this_thread::sleep_until(at(base_s, arrive_ms[static_cast<size_t>(g1 - 1)]));
      std::vector<std::vector<TokenId>> ps(prompts.begin() + g0, prompts.begin() + g1);
      std::vector<int> ls(lengths.begin() + g0, lengths.begin() + g1);
      std::vector<Clock::time_point> d(ps.size());
      std::vector<std::vector<TokenId>> tk;
      static_group(*model, ps, ls, d, tk, itl["static8"]);
      std::copy(d.begin(), d.end(), done_s.begin() + g0);
      std::move(tk.begin(), tk.end(), static_tokens.begin() + g0);
    }
    const auto [static_rps, static_mean] = summarize("static8", base_s, done_s);

    // Dynamic twice: with the scheduler's own row cap (max_rows, default 16) and capped at
    // static's 8 rows, which trades the larger batches' throughput for FCFS-like latency.
    nlohmann::json round_json = {
        {"static8", {{"req_s", static_rps}, {"mean_latency_ms", static_mean}}}};
    for (const int cap : {so.max_rows, 8}) {
      SchedulerOptions dso = so;
      dso.max_rows = cap;
      const std::string name = cap == so.max_rows ? "dynamic" : "dynamic8";
      std::vector<Clock::time_point> done_d(static_cast<size_t>(requests));
      Scheduler sched(model, dso);
      const Clock::time_point base_d = Clock::now();
      std::vector<std::thread> ts;
      // At most `cap` requests generate at once, in arrival order, as generate.llm's workers
      // (which default to the row cap) admit items; the rest wait, their latency counting it.
      std::mutex slot_mu;
      std::condition_variable slot_cv;
      int running = 0, next_in = 0;
      for (int i = 0; i < requests; ++i) {
        ts.emplace_back([&, i] {
          const size_t k = static_cast<size_t>(i);
          std::this_thread::sleep_until(at(base_d, arrive_ms[k]));
          {
            std::unique_lock<std::mutex> lock(slot_mu);
            slot_cv.wait(lock, [&] { return next_in == i && running < cap; });
            ++running;
            ++next_in;
          }
          slot_cv.notify_all();
          Result r = run_one(sched.new_sequence(), tok, k, lengths[k]);
          {
            const std::lock_guard<std::mutex> lock(slot_mu);
            --running;
          }
          slot_cv.notify_all();
          done_d[k] = r.done;
          dynamic_tokens[k] = std::move(r.tokens);
          const std::lock_guard<std::mutex> lock(itl_mu);
          itl[name].insert(itl[name].end(), r.gaps.begin(), r.gaps.end());
        });
      }
      for (auto& th : ts) th.join();
      const auto [dyn_rps, dyn_mean] = summarize(name.c_str(), base_d, done_d);
      const SchedulerStats st = sched.stats();
      std::printf(
          "round %d: %s (max_rows %d) / static req/s %.2f, mean latency %.2f (%lld steps, %.2f "
          "rows per step, %lld full windows, busy %.0f%%), same tokens %s\n",
          round + 1, name.c_str(), cap, dyn_rps / static_rps, dyn_mean / static_mean,
          static_cast<long long>(st.steps),
          static_cast<double>(st.rows) / static_cast<double>(std::max<int64_t>(1, st.steps)),
          static_cast<long long>(st.full_windows), 100.0 * st.busy_ms / ms(base_d, Clock::now()),
          static_tokens == dynamic_tokens ? "yes" : "NO");
      sd_ratios[name].push_back(dyn_rps / static_rps);
      latency_ratios[name].push_back(dyn_mean / static_mean);
      round_json[name] = {{"req_s", dyn_rps},
                          {"mean_latency_ms", dyn_mean},
                          {"max_rows", cap},
                          {"ratio", dyn_rps / static_rps},
                          {"same_tokens", static_tokens == dynamic_tokens}};
      if (cap == so.max_rows) round_json["ratio"] = dyn_rps / static_rps;
    }
    out["static_vs_dynamic"]["rounds"].push_back(round_json);
  }
  for (const char* name : {"dynamic", "dynamic8"}) {
    std::printf("median of %d round(s): %s / static req/s %.2f, mean latency %.2f\n", rounds, name,
                pct(sd_ratios[name], 0.5), pct(latency_ratios[name], 0.5));
    const std::string suffix = std::string(name) == "dynamic" ? "" : "_dynamic8";
    out["static_vs_dynamic"]["ratio_median" + suffix] = pct(sd_ratios[name], 0.5);
    out["static_vs_dynamic"]["mean_latency_ratio_median" + suffix] = pct(latency_ratios[name], 0.5);
  }

  std::printf("inter-token ms over every request and round: %8s %7s %7s %7s\n", "run", "p50", "p95",
              "p99");
  for (const char* name : {"static8", "dynamic", "dynamic8"}) {
    std::vector<double>& g = itl[name];
    std::printf("%47s %7.1f %7.1f %7.1f\n", name, pct(g, 0.5), pct(g, 0.95), pct(g, 0.99));
    out["static_vs_dynamic"]["inter_token_ms"][name] = {
        {"p50", pct(g, 0.5)}, {"p95", pct(g, 0.95)}, {"p99", pct(g, 0.99)}};
  }

  return vsynth::bench::write_json(out_path, out) ? 0 : 1;
}
