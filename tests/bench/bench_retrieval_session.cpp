// retrieval.search on the completion path (docs/performance.md, "Retrieval on a big file"):
// an editor session on one large file, each request a real graph::Pipeline run of
// anchor -> retrieve -> out (the stages of pipelines/retrieve.yaml) for one task, timed
// end to end (anchor's parse and the search stage). The file is the task's own, not in a
// repository index (retrieval.index without a root), so every request searches an overlay of
// that file, as an IDE's completion does on the file being edited.
//
// Session: `--positions` cursor positions spread over the file (fixed seed), at each a
// statement typed one character at a time at the start of a line inside a function
// (`--keys` requests per position, each a new text of the file). The first request opens the
// file (its chunks embedded once); it is reported apart.
//
// Configurations, interleaved per request in one run (same machine state):
//   fresh    overlay_cache_mb 0: every request indexes the file afresh (parse, chunk, terms;
//            embeddings from the embedder's per-process cache), what each request paid before
//            overlays were kept
//   kept     the default (overlay_cache_mb left out): overlays kept across requests, an edited
//            file's overlay built from the last one (only its changed chunks term-counted and
//            embedded). `--configs kept` alone also builds and runs on a tree from before
//            overlays were kept (the parameter is not named): the "before" figures.
// Both configurations' records are compared byte for byte: they must be equal.
//
//   bench_retrieval_session [--file .cache/bench-repos/src/cffi/src/c/_cffi_backend.c]
//       [--positions 4] [--keys 6] [--encoder models/all-MiniLM-L6-v2 | none] [--q8 1]
//       [--threads 2] [--configs fresh,kept] [--json bench_retrieval_session.json]
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "graph/diagnostics.h"
#include "graph/pipeline.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "graph/validate.h"
#include "stages/ast/register.h"
#include "stages/retrieval/register.h"

namespace graph = vsynth::graph;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

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

// overlay_mb < 0: the parameter left out (its default; a build without it runs too).
std::unique_ptr<graph::Pipeline> build(const std::string& encoder, bool q8, int threads,
                                       int overlay_mb, const graph::Registry& reg) {
  const std::string overlay =
      overlay_mb < 0 ? std::string() : fmt::format(", overlay_cache_mb: {}", overlay_mb);
  const std::string yaml = fmt::format(
      "pipeline: session\nresources:\n  code: {{ use: retrieval.index, with: {{ encoder: \"{}\", "
      "q8_0: {}, threads: {}{} }} }}\nstages:\n"
      "  anchor: {{ use: ast.anchor, with: {{ cursor_base: one }} }}\n"
      "  retrieve: {{ use: retrieval.search, with: {{ index: code }} }}\n"
      "edges:\n  - anchor -> retrieve -> out\n",
      encoder, q8 ? "true" : "false", threads, overlay);
  graph::Diagnostics diags;
  const graph::PipelineSpec spec = graph::load_spec_string(yaml, "bench:session", diags);
  auto validated = diags.empty() ? graph::validate(spec, reg, diags) : std::nullopt;
  if (!validated) throw std::runtime_error(diags.format() + "\n" + yaml);
  return std::make_unique<graph::Pipeline>(std::move(*validated), reg);
}

std::pair<nlohmann::json, double> run_one(graph::Pipeline& p, const nlohmann::json& task) {
  graph::Task t;
  t.data = task;
  t.id = task["id"].get<std::string>();
  OneSource source(std::move(t));
  OneSink sink;
  graph::RunControl control;
  const auto t0 = Clock::now();
  const graph::RunResult r = p.run(source, sink, control);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!r.fatal.empty()) throw std::runtime_error(r.fatal);
  return {sink.record, ms};
}

struct Request {
  std::string source;
  uint32_t line = 0, column = 0;  // 1-based
};

// The session: at each position (a line inside the file's body, indented: inside a
// function), the statement typed a character at a time on a new line above it.
std::vector<Request> session(const std::string& text, uint32_t positions, uint32_t keys) {
  std::vector<std::size_t> starts;  // byte offsets of indented, non-blank lines
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nl = text.find('\n', at);
    const std::size_t end = nl == std::string::npos ? text.size() : nl;
    const std::string_view line(text.data() + at, end - at);
    if (line.size() > 8 && line.rfind("    ", 0) == 0 &&
        std::isalpha(static_cast<unsigned char>(line[4]))) {
      starts.push_back(at);
    }
    at = end + 1;
  }
  std::vector<Request> out;
  if (starts.empty()) return out;
  const std::string typed = "    result = lookup_entry(";
  for (uint32_t p = 0; p < positions; ++p) {
    const std::size_t at = starts[(starts.size() * (2 * p + 1)) / (2 * positions)];
    const auto line = static_cast<uint32_t>(std::count(text.begin(), text.begin() + at, '\n') + 1);
    for (uint32_t k = 1; k <= keys; ++k) {
      const std::string part = typed.substr(0, std::min<std::size_t>(4 + k, typed.size()));
      Request r;
      r.source = text.substr(0, at) + part + "\n" + text.substr(at);
      r.line = line;
      r.column = static_cast<uint32_t>(part.size()) + 1;
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file = ".cache/bench-repos/src/cffi/src/c/_cffi_backend.c";
  std::string encoder = "models/all-MiniLM-L6-v2", json_path = "bench_retrieval_session.json";
  uint32_t positions = 4, keys = 6;
  std::string only = "fresh,kept";
  bool q8 = true;
  int threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--file") {
      file = v;
    } else if (a == "--positions") {
      positions = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--keys") {
      keys = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--encoder") {
      encoder = v == "none" ? "/nonexistent/encoder" : v;
    } else if (a == "--q8") {
      q8 = v != "0";
    } else if (a == "--threads") {
      threads = std::stoi(v);
    } else if (a == "--json") {
      json_path = v;
    } else if (a == "--configs") {
      only = v;
    } else {
      fmt::print(stderr, "bench_retrieval_session: unknown option {} (see its header)\n", a);
      return 2;
    }
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    fmt::print(stderr, "bench_retrieval_session: cannot read {} (scripts/bench-context.sh)\n",
               file);
    return 2;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  const std::string path = fs::path(file).filename().string();
  const std::vector<Request> requests = session(text, positions, keys);

  graph::Registry reg;
  vsynth::stages::ast::register_stages(reg);
  vsynth::stages::retrieval::register_stages(reg);
  struct Config {
    std::string name;
    int overlay_mb;
    std::unique_ptr<graph::Pipeline> pipeline;
    double open_ms = 0;
    std::vector<double> ms;
  };
  std::vector<Config> configs;
  for (const std::string name : {"fresh", "kept"}) {
    if (("," + only + ",").find("," + name + ",") == std::string::npos) continue;
    const int mb = name == "fresh" ? 0 : -1;
    configs.push_back({name, mb, build(encoder, q8, threads, mb, reg), 0, {}});
  }

  const auto lines = static_cast<uint32_t>(std::count(text.begin(), text.end(), '\n'));
  fmt::print("file {} ({} lines, {} bytes), {} requests ({} positions x {} keys), encoder {}\n",
             file, lines, text.size(), requests.size(), positions, keys, encoder);
  // Opening the file: its text as it is, once per configuration (the first embeds its chunks).
  const nlohmann::json open = {
      {"id", "open"},
      {"path", path},
      {"source", text},
      {"cursor", {{"line", requests.empty() ? 1 : requests[0].line}, {"column", 1}}}};
  for (Config& c : configs) c.open_ms = run_one(*c.pipeline, open).second;
  uint32_t differ = 0;
  std::string served_by;
  for (std::size_t n = 0; n < requests.size(); ++n) {
    const nlohmann::json task = {
        {"id", "r" + std::to_string(n)},
        {"path", path},
        {"source", requests[n].source},
        {"cursor", {{"line", requests[n].line}, {"column", requests[n].column}}}};
    std::string first;
    for (std::size_t k = 0; k < configs.size(); ++k) {
      Config& c = configs[(n + k) % configs.size()];  // the order rotates per request
      auto [record, ms] = run_one(*c.pipeline, task);
      c.ms.push_back(ms);
      record.erase("timing");
      served_by = record["facets"]["retrieved"]["served_by"].get<std::string>();
      const std::string bytes = record["facets"].dump();
      if (first.empty()) {
        first = bytes;
      } else {
        differ += bytes != first;
      }
    }
  }
  nlohmann::json out = {{"file", file},
                        {"lines", lines},
                        {"requests", requests.size()},
                        {"encoder", encoder},
                        {"q8_0", q8},
                        {"threads", threads},
                        {"served_by", served_by},
                        {"records_differing", differ}};
  fmt::print("served by {}; records differing between configurations: {}\n", served_by, differ);
  fmt::print("| config | open ms | request p50 ms | request p95 ms | max ms |\n");
  fmt::print("|---|---:|---:|---:|---:|\n");
  for (const Config& c : configs) {
    const double p50 = percentile(c.ms, 0.5), p95 = percentile(c.ms, 0.95);
    const double max = c.ms.empty() ? 0 : *std::max_element(c.ms.begin(), c.ms.end());
    fmt::print("| {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", c.name, c.open_ms, p50, p95, max);
    out["configs"].push_back({{"name", c.name},
                              {"overlay_cache_mb", c.overlay_mb},
                              {"open_ms", c.open_ms},
                              {"request_p50_ms", p50},
                              {"request_p95_ms", p95},
                              {"request_max_ms", max}});
  }
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) out["load_average"] = {load[0], load[1], load[2]};
  std::ofstream(json_path) << out.dump(2) << "\n";
  fmt::print("wrote {}\n", json_path);
  return differ == 0 ? 0 : 1;
}
