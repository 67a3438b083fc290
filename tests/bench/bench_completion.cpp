// The end-to-end completion benchmark (issue 11, item 4): an edit session replayed on real
// files of >= 2,000 lines through the configurations of the completion path, side by side.
//
// Replay (completion_replay.h): per file, --positions cursor positions at the start of real
// statement lines (picked by --seed); at each, --keystrokes characters typed one at a time, a
// completion asked after each keystroke, once per --new-tokens value. A request is a task
// record like examples/tasks/completion.jsonl ({path, source, cursor {line, column}}): the file
// as the user sees it, the rest of the cursor's line removed.
//
// Configurations, every request through each of them in turn (the order rotates per request,
// the machine is noisy), each a real graph::Pipeline built from pipelines/complete.yaml:
//   naive      generate.llm alone on the +-200 lines around the cursor, FP16 KV, no
//              speculation, no pool. No stage cuts a line window, so the bench cuts it
//              (line_window) and hands it to generate.llm as the task's prefix/suffix: the
//              same prompt renderer (stages/generation/prompt.h) and model resource.
//   pruning    complete.yaml as shipped: anchor -> retrieve -> summarize -> deps -> dedup ->
//              prune (budget 1024) -> generate, FP16 KV
//   +int8      the same with `kv_cache: int8`
//   +spec      and `speculative: { drafter: ngram, max_draft: 4 }`
//   +pool      and `kv_pool_mb` (--pool-mb) on the model, with the IDE warm-up: when a file is
//              first opened, the file as opened goes through the same pipeline to a
//              generate.llm with `warmup: true` (untimed), routed there by core.select
//   f16+spec+pool  +pool with the FP16 KV cache (what complete.yaml ships)
// Each configuration sets the pool and speculation itself (what complete.yaml ships of them is
// removed first), so `pruning` stays the plain pipeline whatever the file ships.
// plus `naive-full-file` on --full-file-requests requests (spread over the run): generate.llm
// on the whole file before the cursor (context_length --full-context), the quality reference;
// a prompt over the context loses its oldest tokens (prompt.h), so at the default 8192 it is
// the last ~8k tokens before the cursor (the whole of a 2,000-line file is ~20k tokens: at
// 32768, minutes of prefill per request on this machine).
// Each configuration's pipeline routes by the task's /new_tokens (core.select) to one
// generate.llm per --new-tokens value, all on one model resource (one pool).
//
// Retrieval: with --repo-index 0 (the default) the retrieval.index resource has no root, so
// retrieval.search sees the task's own file only (indexing a repository with the encoder
// takes minutes per repository on this machine); --repo-index 1 indexes the file's repository.
//
// Figures per request (JSON, for scripts/bench/plot_completion.py): wall latency of the
// pipeline run, prompt / prefilled / cached tokens, pool hit, decode tokens/s, speculation
// counts, and quality: exact match and edit similarity of the first generated line against the
// rest of the real line. The table: P50/P95 latency, tokens/s, mean prefill tokens, pool hit
// rate, accepted tokens per verify step, exact-match %, edit similarity, ratios to naive, 95%
// bootstrap intervals of exact match and edit similarity, and the share of requests that
// ended before the token budget (a stop: n_indent, a stop string, EOG).
//
//   ninja -C build bench_completion
//   ./build/tests/bench/bench_completion [--repos .cache/bench-repos/src] [--files 2]
//       [--positions 1] [--keystrokes 2] [--new-tokens 16,64] [--max-requests 0] [--seed 1]
//       [--min-lines 2000] [--window 200] [--budget 1024] [--full-file-requests 1]
//       [--full-context 8192] [--pool-mb 256] [--threads 2] [--repo-index 0]
//       [--model models/gemma-3-270m-q4_k_m.gguf] [--max-seconds 0] [--json bench_completion.json]
//       [--suffix-without-fim above|drop]
// --max-seconds stops starting requests after that long (the table covers those that ran).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "graph/diagnostics.h"
#include "graph/pipeline.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "graph/validate.h"
#include "stages/ast/language.h"
#include "stages/ast/register.h"
#include "stages/context/register.h"
#include "stages/core/register.h"
#include "stages/generation/register.h"
#include "stages/retrieval/register.h"
#include "tests/bench/completion_replay.h"

namespace {

using namespace vsynth;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using bench::ReplayRequest;

struct Options {
  std::string repos = ".cache/bench-repos/src", json = "bench_completion.json";
  std::string model = "models/gemma-3-270m-q4_k_m.gguf";
  uint32_t files = 2, positions = 1, keystrokes = 2, max_requests = 0, min_lines = 2000;
  uint32_t window = 200, budget = 1024, full_file_requests = 1, full_context = 8192;
  uint32_t pool_mb = 256, threads = 2;
  uint32_t max_seconds = 0;  // 0: no limit; else no request starts after this many seconds
  uint64_t seed = 1;
  bool repo_index = false;
  std::vector<uint32_t> new_tokens = {16, 64};
  std::string suffix_without_fim;  // empty: complete.yaml's (generate.llm's default: above)
};

uint32_t to_u32(const std::string& option, const std::string& v) {
  try {
    std::size_t used = 0;
    const unsigned long n = std::stoul(v, &used);
    if (used == v.size() && n <= UINT32_MAX) return static_cast<uint32_t>(n);
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(option + " wants a non-negative integer, got `" + v + "`");
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(a + " wants a value (see the file's header)");
    const std::string v = argv[i + 1];
    std::map<std::string, uint32_t*> ints = {{"--files", &o.files},
                                             {"--positions", &o.positions},
                                             {"--keystrokes", &o.keystrokes},
                                             {"--max-requests", &o.max_requests},
                                             {"--min-lines", &o.min_lines},
                                             {"--window", &o.window},
                                             {"--budget", &o.budget},
                                             {"--full-file-requests", &o.full_file_requests},
                                             {"--full-context", &o.full_context},
                                             {"--pool-mb", &o.pool_mb},
                                             {"--max-seconds", &o.max_seconds},
                                             {"--threads", &o.threads}};
    if (auto it = ints.find(a); it != ints.end()) {
      *it->second = to_u32(a, v);
    } else if (a == "--repos") {
      o.repos = v;
    } else if (a == "--suffix-without-fim") {
      if (v != "above" && v != "drop") {
        throw std::invalid_argument("--suffix-without-fim wants above or drop");
      }
      o.suffix_without_fim = v;
    } else if (a == "--json") {
      o.json = v;
    } else if (a == "--model") {
      o.model = v;
    } else if (a == "--seed") {
      o.seed = to_u32(a, v);
    } else if (a == "--repo-index") {
      o.repo_index = to_u32(a, v) != 0;
    } else if (a == "--new-tokens") {
      o.new_tokens.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) o.new_tokens.push_back(to_u32(a, x));
      if (o.new_tokens.empty()) throw std::invalid_argument("--new-tokens wants N[,N...]");
    } else {
      throw std::invalid_argument("unknown option " + a + " (see bench_completion.cpp's header)");
    }
  }
  return o;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// --- the files: >= min_lines lines, spread over the repositories ---

struct File {
  std::string repo, path;  // path relative to the repository
  fs::path root;           // the repository's directory
  std::string text, language, comment;
  uint32_t lines = 0;
};

std::vector<File> pick_files(const Options& o) {
  std::vector<File> all;  // every long enough file, repository by repository, in path order
  std::vector<fs::path> repos;
  for (const auto& e : fs::directory_iterator(o.repos)) {
    if (e.is_directory()) repos.push_back(e.path());
  }
  std::sort(repos.begin(), repos.end());
  for (const fs::path& dir : repos) {
    std::vector<fs::path> paths;
    for (const auto& f : fs::recursive_directory_iterator(dir)) {
      if (f.is_regular_file() && stages::ast::Language::find_for_path(f.path().string()))
        paths.push_back(f.path());
    }
    std::sort(paths.begin(), paths.end());
    for (const fs::path& p : paths) {
      File f;
      f.text = read_file(p);
      f.lines = static_cast<uint32_t>(std::count(f.text.begin(), f.text.end(), '\n'));
      if (f.lines < o.min_lines) continue;
      f.repo = dir.filename().string();
      f.root = dir;
      f.path = fs::relative(p, dir).string();
      f.language = std::string(stages::ast::Language::for_path(f.path).name());
      f.comment =
          f.language == "python" || f.language == "ruby" || f.language == "bash" ? "#" : "//";
      all.push_back(std::move(f));
    }
  }
  // Round robin over the repositories (each one's files in path order), so that a few files
  // cover several repositories and languages.
  std::map<std::string, std::vector<File*>> by_repo;
  for (File& f : all) by_repo[f.repo].push_back(&f);
  std::vector<File> out;
  for (std::size_t round = 0; out.size() < o.files; ++round) {
    bool any = false;
    for (auto& [repo, fs_of] : by_repo) {
      if (round < fs_of.size() && out.size() < o.files) {
        out.push_back(*fs_of[round]);
        any = true;
      }
    }
    if (!any) break;
  }
  return out;
}

// --- the configurations: pipelines built from pipelines/complete.yaml ---

struct Config {
  std::string name;
  bool pruning = false, int8 = false, spec = false, pool = false, full_file = false;
};

const std::vector<Config> kConfigs = {
    {"naive", false, false, false, false, false}, {"pruning", true, false, false, false, false},
    {"+int8", true, true, false, false, false},   {"+spec", true, true, true, false, false},
    {"+pool", true, true, true, true, false},     {"f16+spec+pool", true, false, true, true, false},
};
const Config kFullFile = {"naive-full-file", false, false, false, false, true};

// The pipeline YAML of one configuration: complete.yaml's resources and stages, changed as the
// header says, its generate stage once per new-token count behind core.select stages.
std::string pipeline_yaml(const Config& c, const Options& o, const std::string& repo_root) {
  YAML::Node root = YAML::LoadFile(std::string(VSYNTH_SOURCE_DIR) + "/pipelines/complete.yaml");
  const std::string edge = root["edges"][0].as<std::string>();
  const std::size_t at = edge.find(" -> generate");
  if (at == std::string::npos) {
    throw std::runtime_error("pipelines/complete.yaml: its edge no longer ends `-> generate`: " +
                             edge);
  }
  const std::string chain = edge.substr(0, at);  // the context stages, anchor first
  YAML::Node model = root["resources"]["coder"]["with"];
  model["path"] = o.model;
  model["kv_cache"] = c.int8 ? "int8" : "f16";
  model["threads"] = o.threads;
  model["context_length"] = c.full_file ? o.full_context : 4096;
  // complete.yaml may ship a pool and speculation itself: each configuration says its own.
  if (c.pool) {
    model["kv_pool_mb"] = o.pool_mb;
  } else {
    model.remove("kv_pool_mb");
  }
  YAML::Node generate = YAML::Clone(root["stages"]["generate"]);
  generate["with"].remove("speculative");
  if (!o.suffix_without_fim.empty()) generate["with"]["suffix_without_fim"] = o.suffix_without_fim;
  YAML::Node stages = root["stages"];
  stages.remove("generate");
  if (c.pruning) {
    root["resources"]["code"]["with"]["root"] = repo_root;
    root["resources"]["code"]["with"]["threads"] = o.threads;
    stages["prune"]["with"]["budget_tokens"] = o.budget;
  } else {
    root["resources"].remove("code");
    for (const char* s : {"anchor", "retrieve", "summarize", "deps", "dedup", "prune"}) {
      stages.remove(s);
    }
  }
  if (c.spec) generate["with"]["speculative"] = YAML::Load("{ drafter: ngram, max_draft: 4 }");
  YAML::Node edges(YAML::NodeType::Sequence);
  std::string from = c.pruning ? chain : std::string("in");  // `in`: the entry
  auto edge_to = [&](const std::string& to) { edges.push_back(from + " -> " + to); };
  if (c.pool) {  // the file-open warm-up: prefill only, with the longest request's budget
    YAML::Node warm = YAML::Clone(generate);
    warm["with"]["warmup"] = true;
    warm["with"]["max_new_tokens"] = *std::max_element(o.new_tokens.begin(), o.new_tokens.end());
    stages["warm"] = warm;
    stages["opened"] = YAML::Load("{ use: core.select, with: { field: /event, values: [open] } }");
    edge_to("opened");
    edges.push_back("opened.match -> warm -> out");
    from = "opened.other";
  }
  for (std::size_t i = 0; i < o.new_tokens.size(); ++i) {
    const std::string n = std::to_string(o.new_tokens[i]), gen = "generate_" + n;
    YAML::Node g = YAML::Clone(generate);
    g["with"]["max_new_tokens"] = o.new_tokens[i];
    stages[gen] = g;
    if (i + 1 == o.new_tokens.size()) {
      edge_to(gen + " -> out");
      break;
    }
    const std::string sel = "tokens_" + n;
    stages[sel] =
        YAML::Load("{ use: core.select, with: { field: /new_tokens, values: [\"" + n + "\"] } }");
    edge_to(sel);
    edges.push_back(sel + ".match -> " + gen + " -> out");
    from = sel + ".other";
  }
  root["edges"] = edges;
  root["pipeline"] = "bench-completion-" + c.name;
  return YAML::Dump(root);
}

std::unique_ptr<graph::Pipeline> build_pipeline(const Config& c, const Options& o,
                                                const std::string& repo_root,
                                                const graph::Registry& reg) {
  const std::string yaml = pipeline_yaml(c, o, repo_root);
  graph::Diagnostics diags;
  const graph::PipelineSpec spec = graph::load_spec_string(yaml, "bench:" + c.name, diags);
  auto validated = diags.empty() ? graph::validate(spec, reg, diags) : std::nullopt;
  if (!validated) throw std::runtime_error(c.name + ":\n" + diags.format() + "\n" + yaml);
  return std::make_unique<graph::Pipeline>(std::move(*validated), reg);
}

// One task in, one record out.
class OneSource : public graph::Source {
 public:
  explicit OneSource(graph::Task t) : task_(std::move(t)) {}
  std::optional<graph::Task> next() override {
    if (done_) return std::nullopt;
    done_ = true;
    return task_;
  }
  std::optional<std::size_t> total() const override { return 1; }

 private:
  graph::Task task_;
  bool done_ = false;
};

class OneSink : public graph::Sink {
 public:
  void write(const graph::Item& item) override {
    std::lock_guard lock(mu_);
    record = item.to_record();
  }
  bool contains(std::string_view) const override { return false; }
  nlohmann::json record;

 private:
  std::mutex mu_;
};

// Runs one task; the record and the wall time of the run.
std::pair<nlohmann::json, double> run_one(graph::Pipeline& p, graph::Task task) {
  OneSource source(std::move(task));
  OneSink sink;
  graph::RunControl control;
  const auto t0 = Clock::now();
  const graph::RunResult r = p.run(source, sink, control);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!r.fatal.empty()) throw std::runtime_error(p.spec().name + ": " + r.fatal);
  return {sink.record, ms};
}

// --- one request ---

struct Request {
  const File* file = nullptr;
  ReplayRequest replay;
  uint32_t new_tokens = 0;
  bool first_in_file = false;  // the file was just opened (the pool's warm-up runs first)
  std::string id;
};

graph::Task make_task(const Request& r, const Config& c, const Options& o) {
  nlohmann::json j = {{"id", r.id},
                      {"path", r.file->path},
                      {"language", r.file->language},
                      {"new_tokens", r.new_tokens}};
  if (c.pruning) {
    // A completion task record (examples/tasks/completion.jsonl), cursor one-based.
    j["source"] = r.replay.visible;
    j["cursor"] = {{"line", r.replay.line + 1}, {"column", r.replay.column + 1}};
  } else {
    const std::string_view v = r.replay.visible;
    const bench::Window w = c.full_file ? bench::Window{std::string(v.substr(0, r.replay.cursor)),
                                                        std::string(v.substr(r.replay.cursor))}
                                        : bench::line_window(v, r.replay.cursor, o.window);
    j["prefix"] = w.prefix;
    j["suffix"] = w.suffix;
  }
  return graph::Task{r.id, std::move(j)};
}

// The IDE's warm-up when a file opens: the file as the user sees it before the first keystroke
// (the replayed line not written yet: only its indentation, as make_request gives for 0 typed
// characters), cursor where the typing will start. The real file would hold the line the user
// is about to type, which the replay's requests never show.
graph::Task open_task(const Request& r) {
  const ReplayRequest before = bench::make_request(r.file->text, r.replay.line, 0);
  nlohmann::json j = {{"id", r.id + "-open"},
                      {"path", r.file->path},
                      {"language", r.file->language},
                      {"event", "open"},
                      {"source", before.visible},
                      {"cursor", {{"line", before.line + 1}, {"column", before.column + 1}}}};
  return graph::Task{r.id + "-open", std::move(j)};
}

// The per-request figures from a record (see the header).
nlohmann::json figures(const nlohmann::json& rec, double ms, const Request& r, const Config& c) {
  nlohmann::json f = {
      {"config", c.name},           {"repo", r.file->repo},      {"path", r.file->path},
      {"lines", r.file->lines},     {"line", r.replay.line + 1}, {"typed", r.replay.typed},
      {"new_tokens", r.new_tokens}, {"latency_ms", ms},          {"target", r.replay.target}};
  const nlohmann::json* cands = nullptr;
  if (!rec.is_object()) {
    f["error"] = "no record written";
    return f;
  }
  if (rec.contains("facets") && rec["facets"].contains("candidates")) {
    cands = &rec["facets"]["candidates"];
  }
  if (!cands || (*cands)["candidates"].empty()) {
    f["error"] = rec.value("error", std::string("no candidate (status ") +
                                        rec.value("status", std::string("?")) + ")");
    return f;
  }
  const nlohmann::json& k = (*cands)["candidates"][0];
  const int prompt = cands->value("prompt_tokens", 0);
  int cached = 0;
  if (cands->contains("kv_pool")) {
    cached = (*cands)["kv_pool"].value("cached_tokens", 0);
    f["pool_hit"] = (*cands)["kv_pool"].value("hit", false);
    if ((*cands)["kv_pool"].contains("fallback"))
      f["pool_fallback"] = (*cands)["kv_pool"]["fallback"];
  }
  f["prompt_tokens"] = prompt;
  f["cached_tokens"] = cached;
  f["prefill_tokens"] = prompt - cached;
  f["prefill_ms"] = cands->value("prefill_ms", 0.0);
  f["tokens"] = k.value("tokens", 0);
  f["decode_ms"] = k.value("decode_ms", 0.0);
  f["finish"] = k.value("finish", std::string());
  if (k.contains("speculation")) {
    f["drafted"] = k["speculation"].value("drafted", 0);
    f["accepted"] = k["speculation"].value("accepted", 0);
    f["verify_steps"] = k["speculation"].value("verify_steps", 0);
  }
  const std::string first = bench::first_line(k.value("text", std::string()));
  f["first_line"] = first;
  f["exact"] = first == r.replay.target;
  f["similarity"] = bench::edit_similarity(first, r.replay.target);
  return f;
}

// --- the replay's requests ---

std::vector<Request> make_requests(const std::vector<File>& files, const Options& o) {
  std::vector<Request> out;
  for (std::size_t fi = 0; fi < files.size(); ++fi) {
    const File& f = files[fi];
    const std::vector<uint32_t> lines = bench::pick_lines(
        bench::statement_lines(f.text, f.comment, o.keystrokes + 4), o.positions, o.seed + fi);
    bool first = true;
    for (uint32_t line : lines) {
      for (uint32_t k = 1; k <= o.keystrokes; ++k) {
        for (uint32_t n : o.new_tokens) {
          Request r;
          r.file = &f;
          r.replay = bench::make_request(f.text, line, k);
          r.new_tokens = n;
          r.first_in_file = first;
          first = false;
          r.id = fmt::format("f{}-l{}-k{}-n{}", fi, line + 1, k, n);
          out.push_back(std::move(r));
        }
      }
    }
  }
  if (o.max_requests > 0 && out.size() > o.max_requests) out.resize(o.max_requests);
  return out;
}

// --- the table ---

struct Summary {
  std::string name;
  std::size_t n = 0, errors = 0;
  double p50 = 0, p95 = 0, tok_s = 0, prefill_mean = 0, hit_rate = -1, acc_step = -1;
  double exact = 0, similarity = 0;
  // 95% bootstrap intervals (2,000 resamples of the requests, a fixed seed: the same rows give
  // the same interval) of exact match (%) and edit similarity.
  double exact_lo = 0, exact_hi = 0, similarity_lo = 0, similarity_hi = 0;
  double ended = 0;  // % of requests that ended before the token budget (finish is not length)
};

// The 2.5th and 97.5th percentiles of the mean of `v` over bootstrap resamples.
std::pair<double, double> bootstrap_ci(const std::vector<double>& v) {
  if (v.empty()) return {0, 0};
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<std::size_t> pick(0, v.size() - 1);
  std::vector<double> means;
  means.reserve(2000);
  for (int b = 0; b < 2000; ++b) {
    double sum = 0;
    for (std::size_t i = 0; i < v.size(); ++i) sum += v[pick(rng)];
    means.push_back(sum / static_cast<double>(v.size()));
  }
  std::sort(means.begin(), means.end());
  return {means[50], means[1949]};
}

Summary summarize(const std::string& name, const std::vector<nlohmann::json>& rows) {
  Summary s;
  s.name = name;
  std::vector<double> lat, exact, similarity;
  double tokens = 0, decode_ms = 0, prefill = 0, accepted = 0, steps = 0, ended = 0;
  std::size_t pooled = 0, hits = 0;
  for (const auto& r : rows) {
    if (r.contains("error")) {
      ++s.errors;
      continue;
    }
    ++s.n;
    lat.push_back(r["latency_ms"].get<double>());
    tokens += r["tokens"].get<double>();
    decode_ms += r["decode_ms"].get<double>();
    prefill += r["prefill_tokens"].get<double>();
    s.exact += r["exact"].get<bool>() ? 1 : 0;
    s.similarity += r["similarity"].get<double>();
    exact.push_back(r["exact"].get<bool>() ? 100.0 : 0.0);
    similarity.push_back(r["similarity"].get<double>());
    ended += r.value("finish", std::string()) != "length" ? 1 : 0;
    if (r.contains("pool_hit")) {
      ++pooled;
      hits += r["pool_hit"].get<bool>();
    }
    if (r.contains("verify_steps")) {
      accepted += r["accepted"].get<double>();
      steps += r["verify_steps"].get<double>();
    }
  }
  if (s.n == 0) return s;
  s.p50 = percentile(lat, 0.5);
  s.p95 = percentile(lat, 0.95);
  s.tok_s = decode_ms > 0 ? 1000.0 * tokens / decode_ms : 0;
  s.prefill_mean = prefill / static_cast<double>(s.n);
  if (pooled) s.hit_rate = static_cast<double>(hits) / static_cast<double>(pooled);
  // As bench_speculation counts it: the drafted tokens kept plus the target's own token, per
  // verify step.
  if (steps > 0) s.acc_step = (accepted + steps) / steps;
  s.exact = 100.0 * s.exact / static_cast<double>(s.n);
  s.similarity /= static_cast<double>(s.n);
  std::tie(s.exact_lo, s.exact_hi) = bootstrap_ci(exact);
  std::tie(s.similarity_lo, s.similarity_hi) = bootstrap_ci(similarity);
  s.ended = 100.0 * ended / static_cast<double>(s.n);
  return s;
}

nlohmann::json print_table(const std::string& title, const std::vector<Summary>& rows) {
  fmt::print("\n{}\n", title);
  fmt::print(
      "{:<16} {:>4} {:>9} {:>9} {:>7} {:>8} {:>6} {:>7} {:>6} {:>6} {:>8} {:>8} {:>13} {:>13} "
      "{:>7}\n",
      "config", "n", "P50 ms", "P95 ms", "tok/s", "prefill", "hit %", "acc/st", "EM %", "ES",
      "P95 x", "tok/s x", "EM 95%", "ES 95%", "ended %");
  nlohmann::json out = nlohmann::json::array();
  const Summary& base = rows.front();
  for (const Summary& s : rows) {
    const double p95x = s.p95 > 0 ? base.p95 / s.p95 : 0;
    const double tokx = base.tok_s > 0 ? s.tok_s / base.tok_s : 0;
    fmt::print(
        "{:<16} {:>4} {:>9.0f} {:>9.0f} {:>7.1f} {:>8.0f} {:>6} {:>7} {:>6.1f} {:>6.3f} "
        "{:>7.2f}x {:>7.2f}x {:>13} {:>13} {:>7.0f}{}\n",
        s.name, s.n, s.p50, s.p95, s.tok_s, s.prefill_mean,
        s.hit_rate < 0 ? "-" : fmt::format("{:.0f}", 100 * s.hit_rate),
        s.acc_step < 0 ? "-" : fmt::format("{:.2f}", s.acc_step), s.exact, s.similarity, p95x, tokx,
        fmt::format("{:.1f}-{:.1f}", s.exact_lo, s.exact_hi),
        fmt::format("{:.3f}-{:.3f}", s.similarity_lo, s.similarity_hi), s.ended,
        s.errors ? fmt::format("  ({} errors)", s.errors) : "");
    out.push_back(
        {{"config", s.name},
         {"n", s.n},
         {"errors", s.errors},
         {"p50_ms", s.p50},
         {"p95_ms", s.p95},
         {"tokens_per_s", s.tok_s},
         {"prefill_tokens_mean", s.prefill_mean},
         {"pool_hit_rate", s.hit_rate < 0 ? nlohmann::json() : nlohmann::json(s.hit_rate)},
         {"accepted_per_step", s.acc_step < 0 ? nlohmann::json() : nlohmann::json(s.acc_step)},
         {"exact_match_pct", s.exact},
         {"edit_similarity", s.similarity},
         {"exact_match_pct_ci95", {s.exact_lo, s.exact_hi}},
         {"edit_similarity_ci95", {s.similarity_lo, s.similarity_hi}},
         {"ended_before_budget_pct", s.ended},
         {"p95_speedup_vs_naive", p95x},
         {"tokens_per_s_vs_naive", tokx}});
  }
  return out;
}

// Decode speed of +spec over +int8 (the same prompts, the same KV) on the same requests,
// split by what the drafter found: most drafts kept (the code repeats), no draft at all
// (nothing matched), the rest.
nlohmann::json speculation_split(const std::vector<nlohmann::json>& plain,
                                 const std::vector<nlohmann::json>& spec) {
  std::map<std::size_t, const nlohmann::json*> base;
  for (const auto& r : plain) {
    if (!r.contains("error")) base[r["request"].get<std::size_t>()] = &r;
  }
  struct Sum {
    double tokens = 0, ms = 0, base_tokens = 0, base_ms = 0, accepted = 0, steps = 0;
    int n = 0;
  };
  std::map<std::string, Sum> groups;
  for (const auto& r : spec) {
    auto it = base.find(r["request"].get<std::size_t>());
    if (r.contains("error") || it == base.end() || !r.contains("drafted")) continue;
    const double drafted = r["drafted"].get<double>(), accepted = r["accepted"].get<double>();
    const std::string g = drafted == 0                ? "no draft"
                          : accepted >= 0.5 * drafted ? "most drafts kept"
                                                      : "fewer kept";
    Sum& s = groups[g];
    ++s.n;
    s.tokens += r["tokens"].get<double>();
    s.ms += r["decode_ms"].get<double>();
    s.base_tokens += (*it->second)["tokens"].get<double>();
    s.base_ms += (*it->second)["decode_ms"].get<double>();
    s.accepted += accepted;
    s.steps += r["verify_steps"].get<double>();
  }
  nlohmann::json out = nlohmann::json::object();
  fmt::print("\n+spec decode speed over +int8 on the same requests:\n");
  for (const auto& [g, s] : groups) {
    const double speed = s.ms > 0 ? s.tokens / s.ms : 0,
                 base_speed = s.base_ms > 0 ? s.base_tokens / s.base_ms : 0;
    const double ratio = base_speed > 0 ? speed / base_speed : 0;
    const double acc = s.steps > 0 ? (s.accepted + s.steps) / s.steps : 0;
    fmt::print("  {:<17} {:>3} requests: {:.2f}x, {:.2f} tokens per verify step\n", g, s.n, ratio,
               acc);
    out[g] = {{"requests", s.n}, {"decode_speedup", ratio}, {"tokens_per_verify_step", acc}};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse_options(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_completion: {}\n", e.what());
    return 2;
  }
  if (!fs::is_directory(o.repos)) {
    fmt::print(stderr,
               "bench_completion: no repositories at {} (run the download part of "
               "scripts/bench-context.sh)\n",
               o.repos);
    return 2;
  }
  try {
    // The capabilities complete.yaml uses (register_all's others, constraint and validation,
    // are not needed: the same stage code, fewer libraries to build).
    graph::Registry reg;
    stages::ast::register_stages(reg);
    stages::context::register_stages(reg);
    stages::core::register_stages(reg);
    stages::generation::register_stages(reg);
    stages::retrieval::register_stages(reg);
    const std::vector<File> files = pick_files(o);
    if (files.empty())
      throw std::runtime_error("no file of >= " + std::to_string(o.min_lines) + " lines under " +
                               o.repos);
    const std::vector<Request> requests = make_requests(files, o);
    nlohmann::json out;
    std::string command;
    for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
    out["command"] = command;
    for (const File& f : files) {
      fmt::print("file {}/{}: {} lines ({})\n", f.repo, f.path, f.lines, f.language);
      out["files"].push_back({{"repo", f.repo}, {"path", f.path}, {"lines", f.lines}});
    }
    // Which requests also run naive-full-file: every k-th one, ending with the last (a run cut
    // short by --max-seconds keeps the fast configurations' requests).
    std::vector<bool> full(requests.size(), false);
    const std::size_t nf = std::min<std::size_t>(o.full_file_requests, requests.size());
    for (std::size_t i = 1; i <= nf; ++i) full[i * requests.size() / nf - 1] = true;

    // Pipelines per repository root ("" without --repo-index), built once, reused per request.
    std::map<std::string, std::vector<std::unique_ptr<graph::Pipeline>>> pipelines;
    std::unique_ptr<graph::Pipeline> full_pipeline;
    auto pipelines_for = [&](const File& f) -> std::vector<std::unique_ptr<graph::Pipeline>>& {
      const std::string root = o.repo_index ? f.root.string() : std::string();
      auto& v = pipelines[root];
      if (v.empty()) {
        for (const Config& c : kConfigs) v.push_back(build_pipeline(c, o, root, reg));
      }
      return v;
    };
    fmt::print("{} requests x {} configurations ({} also naive-full-file)\n", requests.size(),
               kConfigs.size(), nf);
    std::fflush(stdout);

    std::map<std::string, std::vector<nlohmann::json>> rows;  // config -> per-request figures
    std::vector<std::size_t> full_ids;                        // requests with a full-file row
    const auto t0 = Clock::now();
    std::size_t done = 0;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
      if (o.max_seconds > 0 && elapsed > o.max_seconds) {
        fmt::print("  --max-seconds {} reached: {} of {} requests run\n", o.max_seconds, i,
                   requests.size());
        break;
      }
      const Request& r = requests[i];
      auto& ps = pipelines_for(*r.file);
      if (r.first_in_file) {  // the IDE opened the file: each pool configuration warms it
        for (std::size_t pool = 0; pool < kConfigs.size(); ++pool) {
          if (!kConfigs[pool].pool) continue;
          auto [rec, ms] = run_one(*ps[pool], open_task(r));
          out["warmups"].push_back({{"path", r.file->path},
                                    {"config", kConfigs[pool].name},
                                    {"ms", ms},
                                    {"record", rec["facets"]}});
        }
      }
      for (std::size_t k = 0; k < kConfigs.size(); ++k) {
        const std::size_t c = (i + k) % kConfigs.size();  // rotated per request
        auto [rec, ms] = run_one(*ps[c], make_task(r, kConfigs[c], o));
        nlohmann::json f = figures(rec, ms, r, kConfigs[c]);
        f["request"] = i;
        out["requests"].push_back(f);
        rows[kConfigs[c].name].push_back(std::move(f));
      }
      if (full[i]) {
        if (!full_pipeline) full_pipeline = build_pipeline(kFullFile, o, "", reg);
        auto [rec, ms] = run_one(*full_pipeline, make_task(r, kFullFile, o));
        nlohmann::json f = figures(rec, ms, r, kFullFile);
        f["request"] = i;
        out["requests"].push_back(f);
        rows[kFullFile.name].push_back(std::move(f));
        full_ids.push_back(i);
      }
      done = i + 1;
      fmt::print("  {} / {} requests, {:.0f} s\n", i + 1, requests.size(),
                 std::chrono::duration<double>(Clock::now() - t0).count());
      std::fflush(stdout);
    }

    // All requests, then the full-file subset (every configuration on the same requests).
    std::vector<Summary> all;
    for (const Config& c : kConfigs) all.push_back(summarize(c.name, rows[c.name]));
    out["table"] = print_table(fmt::format("All {} requests (ratios vs naive)", done), all);
    if (!full_ids.empty()) {
      std::vector<Summary> sub;
      for (const Config& c : kConfigs) {
        std::vector<nlohmann::json> picked;
        for (const auto& f : rows[c.name]) {
          if (std::find(full_ids.begin(), full_ids.end(), f["request"].get<std::size_t>()) !=
              full_ids.end())
            picked.push_back(f);
        }
        sub.push_back(summarize(c.name, picked));
      }
      sub.push_back(summarize(kFullFile.name, rows[kFullFile.name]));
      out["table_full_file_requests"] =
          print_table(fmt::format("The {} requests with a naive-full-file row (quality reference)",
                                  full_ids.size()),
                      sub);
    }
    out["speculation_vs_int8"] = speculation_split(rows["+int8"], rows["+spec"]);
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) == 3) {
      fmt::print("\nload average at the end: {:.2f} {:.2f} {:.2f}\n", load[0], load[1], load[2]);
      out["load_average"] = {load[0], load[1], load[2]};
    }
    out["wall_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
    std::ofstream(o.json) << out.dump(2) << "\n";
    fmt::print("wrote {}\n", o.json);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_completion: {}\n", e.what());
    return 1;
  }
  return 0;
}
