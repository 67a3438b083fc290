// hook.grammar's cost per token, measured on its own: the default model's tokenizer (Gemma 3,
// 262,144 tokens), every shipped task's reference solution tokenized and replayed through one
// GrammarMask per program as the decoding loop would drive it (after_sample per token: the
// common step), plus the full mask computed at every position (the step after a rejection).
// Prints p50 / p99 / max in microseconds, as wall time and as the thread's CPU time (which a
// loaded machine's preemptions do not inflate), and the table's build time; writes JSON.
//
//   build/tests/bench/bench_grammar [--model models/gemma-3-270m-q4_k_m.gguf]
//       [--tasks examples/tasks/synthesize.jsonl] [--json bench_grammar.json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/gguf/reader.h"
#include "kernels/tokenizer/gguf_vocab.h"
#include "stages/grammar/grammar_hook.h"

namespace {

using namespace vsynth;
namespace g = vsynth::stages::grammar;
using Clock = std::chrono::steady_clock;

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1));
  return v[i];
}

double us(Clock::time_point a) {
  return std::chrono::duration<double, std::micro>(Clock::now() - a).count();
}

double cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "models/gemma-3-270m-q4_k_m.gguf";
  std::string tasks_path = "examples/tasks/synthesize.jsonl";
  std::string json_path = "bench_grammar.json";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--model")
      model = argv[i + 1];
    else if (a == "--tasks")
      tasks_path = argv[i + 1];
    else if (a == "--json")
      json_path = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_grammar [--model GGUF] [--tasks JSONL] [--json FILE]\n");
      return 2;
    }
  }
  const auto file = kernels::GgufFile::open(model);
  const kernels::Tokenizer tok(kernels::load_vocab(file));
  const auto table = std::make_shared<const g::VocabTable>(tok);
  kernels::EncodeOptions eo;
  eo.add_special = false;
  eo.parse_special = false;

  std::vector<double> step_us, mask_us, step_cpu, mask_cpu, banned;
  std::ifstream in(tasks_path);
  int programs = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const nlohmann::json t = nlohmann::json::parse(line);
    const auto lang = g::language_from_name(t.value("language", "python"));
    if (!lang || !t.contains("reference")) continue;
    ++programs;
    g::Program::Shape shape;
    shape.language = *lang;
    g::GrammarMask hook(table, shape, {}, {});
    const std::string code = t["reference"].get<std::string>();
    const std::vector<kernels::TokenId> ids = tok.encode(code, eo);
    std::vector<kernels::TokenId> done;
    std::string text;
    std::vector<std::size_t> ends;
    g::ProgramState state = hook.program().start();
    std::vector<g::ProgramState> scratch;
    std::vector<kernels::TokenId> dead;
    for (kernels::TokenId id : ids) {
      // The full mask from this position (what a resample after a rejection costs).
      dead.clear();
      auto t0 = Clock::now();
      double c0 = cpu_us();
      table->walk(hook.program(), state, scratch, dead);
      mask_cpu.push_back(cpu_us() - c0);
      mask_us.push_back(us(t0));
      banned.push_back(static_cast<double>(dead.size()));
      // The common step: the hook judges the sampled token.
      const std::string piece = tok.piece(id);
      const kernels::DecodeView view{{}, done, text, ends, &tok};
      t0 = Clock::now();
      c0 = cpu_us();
      const auto v = hook.after_sample(view, id, piece);
      step_cpu.push_back(cpu_us() - c0);
      step_us.push_back(us(t0));
      if (v.kind != kernels::HookVerdict::Kind::Accept) {
        std::fprintf(stderr, "bench_grammar: a reference token was refused: %s\n",
                     v.reason.c_str());
        return 1;
      }
      hook.program().feed(state, piece);
      done.push_back(id);
      text += piece;
      ends.push_back(text.size());
    }
  }
  std::printf("vocabulary %zu tokens, %zu word classes holding %zu, table built in %.1f ms\n",
              table->vocab_size(), table->classes(), table->classed_tokens(), table->build_ms());
  std::printf("%d programs, %zu tokens\n", programs, step_us.size());
  std::printf("%-28s %10s %10s %10s\n", "us per token", "p50", "p99", "max");
  std::printf("%-28s %10.2f %10.2f %10.2f\n", "after_sample (common step)", pct(step_us, 50),
              pct(step_us, 99), pct(step_us, 100));
  std::printf("%-28s %10.1f %10.1f %10.1f\n", "full mask (after a reject)", pct(mask_us, 50),
              pct(mask_us, 99), pct(mask_us, 100));
  std::printf("%-28s %10.2f %10.2f %10.2f\n", "after_sample, CPU time", pct(step_cpu, 50),
              pct(step_cpu, 99), pct(step_cpu, 100));
  std::printf("%-28s %10.1f %10.1f %10.1f\n", "full mask, CPU time", pct(mask_cpu, 50),
              pct(mask_cpu, 99), pct(mask_cpu, 100));
  std::printf("tokens banned by a full mask: p50 %.0f, max %.0f\n", pct(banned, 50),
              pct(banned, 100));
  nlohmann::json j;
  j["vocab"] = table->vocab_size();
  j["table_ms"] = table->build_ms();
  j["programs"] = programs;
  j["tokens"] = step_us.size();
  j["step_us"] = {{"p50", pct(step_us, 50)}, {"p99", pct(step_us, 99)}, {"max", pct(step_us, 100)}};
  j["full_mask_us"] = {
      {"p50", pct(mask_us, 50)}, {"p99", pct(mask_us, 99)}, {"max", pct(mask_us, 100)}};
  j["step_cpu_us"] = {
      {"p50", pct(step_cpu, 50)}, {"p99", pct(step_cpu, 99)}, {"max", pct(step_cpu, 100)}};
  j["full_mask_cpu_us"] = {
      {"p50", pct(mask_cpu, 50)}, {"p99", pct(mask_cpu, 99)}, {"max", pct(mask_cpu, 100)}};
  std::ofstream(json_path) << j.dump(2) << "\n";
  std::printf("wrote %s\n", json_path.c_str());
  return 0;
}
