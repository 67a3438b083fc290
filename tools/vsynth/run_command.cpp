// `vsynth run`: load + validate the pipeline, build resources and stages, stream tasks through,
// report progress, print the summary. Under mpirun, or with --shard, the run is one part of a
// scaled-out job (scale/). Ctrl-C stops admission and lets in-flight items finish
// and be written; a second Ctrl-C exits at once (records already written stay whole).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/global_control.h>
#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/pipeline.h"
#include "graph/plugin_loader.h"
#include "graph/validate.h"
#include "stages/io/jsonl_sink.h"
#include "stages/io/shard.h"
#include "tools/vsynth/commands.h"
#include "tools/vsynth/exit_codes.h"
#include "tools/vsynth/progress.h"
#include "tools/vsynth/run_steps.h"
#include "tools/vsynth/scale/launch.h"
#include "tools/vsynth/scale/parts.h"
#include "tools/vsynth/scale/scaled_run.h"
#include "tools/vsynth/scoped_signals.h"

namespace vsynth::cli {

namespace {

namespace fs = std::filesystem;

std::atomic<graph::RunControl*> g_control{nullptr};
std::atomic<int> g_signals{0};

// Set while a single-process `vsynth run` sets up (reading the pipeline, loading resources:
// nothing written yet): a signal then ends the process at once.
std::atomic<bool> g_exit_outside_run{false};

// SIGINT/SIGTERM: during a run the first cancels it (the items inside stop and are left
// unfinished), a second ends the process at once; outside a run it ends the process when
// g_exit_outside_run is set, else (a scaled-out job between runs) it only counts.
extern "C" void on_interrupt(int) {
  graph::RunControl* const c = g_control.load();
  if (!c && g_exit_outside_run.load()) {
    static const char msg[] = "\nvsynth: interrupted before the run started, exiting now\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(kExitInterrupted);
  }
  if (g_signals.fetch_add(1) >= 1) {
    static const char msg[] = "\nvsynth: interrupted twice, exiting now\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(kExitInterrupted);
  }
  if (c) c->cancel();
}

// cmd_run's setup phase: a signal ends the process (on_interrupt) until the run binds its
// control, and after it.
class ExitOutsideRun {
 public:
  ExitOutsideRun() { g_exit_outside_run.store(true); }
  ~ExitOutsideRun() { g_exit_outside_run.store(false); }
  ExitOutsideRun(const ExitOutsideRun&) = delete;
  ExitOutsideRun& operator=(const ExitOutsideRun&) = delete;
};

// SIGXFSZ (a write past RLIMIT_FSIZE) would kill the run mid-record by default; handled, the
// write fails with EFBIG instead and the sink cuts the file back to its last whole record.
// A handler, unlike SIG_IGN, is not inherited across exec by sandboxed programs.
extern "C" void on_file_size_limit(int) {}

// Points the signal handler at one run's RunControl while it lives.
class ControlBinding {
 public:
  explicit ControlBinding(graph::RunControl& c) {
    g_signals.store(0);
    g_control.store(&c);
  }
  ~ControlBinding() { g_control.store(nullptr); }
  ControlBinding(const ControlBinding&) = delete;
  ControlBinding& operator=(const ControlBinding&) = delete;
};

// The YAML's source/sink when it names them, else the JSONL defaults; command-line values win.
graph::ResolvedEndpoint endpoint(const graph::Registry& registry,
                                 const std::optional<graph::ResolvedEndpoint>& from_yaml,
                                 const char* default_kind, graph::Role role,
                                 std::vector<std::pair<std::string, std::string>> overrides) {
  if (!from_yaml) return graph::resolve_endpoint(registry, default_kind, overrides, role);
  graph::ResolvedEndpoint e = *from_yaml;
  for (auto& [k, v] : overrides) {
    const graph::ParamSpec* spec = e.kind->contract.find_param(k);
    if (!spec) continue;  // this kind has no such parameter: the flag does not apply
    if (spec->type == graph::ParamType::Bool) {
      e.params.set(k, graph::Value{v == "true"});
    } else if (spec->type == graph::ParamType::Int) {
      e.params.set(k, graph::Value{static_cast<int64_t>(std::stoll(v))});  // CLI11 checked it
    } else {
      e.params.set(k, graph::Value{v});
    }
  }
  return e;
}

template <class T>
std::unique_ptr<T> build_endpoint(const graph::ResolvedEndpoint& e) {
  graph::ResourceSet none;
  graph::StageContext ctx{e.name, e.kind->contract, e.params, none};
  std::unique_ptr<graph::StageBase> base = e.kind->factory(ctx);
  auto* typed = dynamic_cast<T*>(base.get());
  if (!typed) throw std::logic_error(e.kind->contract.kind + " built the wrong kind of endpoint");
  base.release();
  return std::unique_ptr<T>(typed);
}

std::string path_param(const graph::ResolvedEndpoint& e) {
  return e.params.has("path") ? e.params.string("path") : std::string();
}

// One file under two names: the same inode (hard links, symlinks), or, for files not made
// yet, the same path once `.`, `..` and symlinked folders are resolved.
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) {
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(a, ea), cb = fs::weakly_canonical(b, eb);
  return !ea && !eb && ca == cb;
}

// The run reads one file and writes up to three: no two of them may be one file (the results
// would replace the tasks, or the trace the results). The message, else empty.
std::string file_clash(const std::vector<std::pair<const char*, std::string>>& files) {
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (std::size_t j = i + 1; j < files.size(); ++j) {
      const auto& [what_a, a] = files[i];
      const auto& [what_b, b] = files[j];
      if (a.empty() || b.empty() || !same_file(a, b)) continue;
      return fmt::format(
          "{} `{}` and {} `{}` are the same file: the run would write over what it {}; name "
          "another file",
          what_a, a, what_b, b, i == 0 ? "reads" : "writes");
    }
  }
  return {};
}

// A sink that also counts ids finished in other files as done (a scaled-out job resumed: the
// merged output and the other ranks' parts), so the runner skips them as it skips its own.
class ExcludingSink : public graph::Sink {
 public:
  ExcludingSink(std::unique_ptr<graph::Sink> inner, std::set<std::string, std::less<>> done)
      : inner_(std::move(inner)), done_(std::move(done)) {}
  void write(const graph::Item& item) override { inner_->write(item); }
  bool contains(std::string_view id) const override {
    return inner_->contains(id) || done_.find(id) != done_.end();
  }
  std::size_t already_done() const override { return inner_->already_done(); }
  void flush() override { inner_->flush(); }

 private:
  std::unique_ptr<graph::Sink> inner_;
  std::set<std::string, std::less<>> done_;
};

// The command line's say over the source and sink parameters.
void endpoint_overrides(const RunArgs& args, const RunPlan& plan,
                        std::vector<std::pair<std::string, std::string>>& in_params,
                        std::vector<std::pair<std::string, std::string>>& out_params) {
  if (!args.input.empty()) in_params.emplace_back("path", args.input);
  if (!plan.shard.empty()) in_params.emplace_back("shard", plan.shard);
  if (!args.shard_by.empty()) in_params.emplace_back("shard_by", args.shard_by);
  if (args.max_task_bytes)
    in_params.emplace_back("max_task_bytes", std::to_string(*args.max_task_bytes));
  if (args.max_file_bytes)
    in_params.emplace_back("max_file_bytes", std::to_string(*args.max_file_bytes));
  if (args.max_files) in_params.emplace_back("max_files", std::to_string(*args.max_files));
  if (!plan.output.empty()) out_params.emplace_back("path", plan.output);
  if (args.resume) out_params.emplace_back("resume", "true");
  if (args.overwrite) out_params.emplace_back("overwrite", "true");
}

// One-process sharded runs write a part; the hint says how the parts become one output.
void print_shard_hint(const RunArgs& args, const RunPlan& plan) {
  if (args.quiet || plan.shard.empty()) return;
  std::cerr << fmt::format(
      "shard {} written to `{}`; when every shard has finished: vsynth merge {}{}\n", plan.shard,
      plan.output, args.output, args.input.empty() ? "" : " --input " + args.input);
}

}  // namespace

int interrupts_received() {
  return g_signals.load();
}

void (*interrupt_handler())(int) {
  return on_interrupt;
}

std::shared_ptr<void> limit_threads(int threads) {
  if (threads <= 0) return nullptr;
  return std::make_shared<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                               static_cast<std::size_t>(threads));
}

std::string metrics_document(const std::vector<graph::StageSnapshot>& metrics,
                             const std::vector<graph::ResourceSnapshot>& resources,
                             const std::string& pipeline) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : metrics) {
    stages.push_back({{"stage", s.name},
                      {"kind", s.kind},
                      {"items", s.processed},
                      {"errors", s.errors},
                      {"p50_ms", s.p50_ms},
                      {"p95_ms", s.p95_ms},
                      {"p99_ms", s.p99_ms},
                      {"mean_ms", s.mean_ms},
                      {"max_queued", s.max_queued}});
  }
  nlohmann::json res = nlohmann::json::array();
  for (const auto& r : resources) {
    nlohmann::json counters = nlohmann::json::object();
    for (const auto& c : r.counters) counters[c.name] = c.value;
    res.push_back({{"resource", r.name}, {"kind", r.kind}, {"counters", counters}});
  }
  nlohmann::json doc = {{"stages", stages}, {"resources", res}};
  if (!pipeline.empty()) doc["pipeline"] = pipeline;
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int report_run(const RunArgs& args, const graph::Pipeline& pipeline, const graph::RunResult& result,
               ProgressReporter& progress) {
  progress.finish(result);
  const auto metrics = pipeline.metrics();
  const auto resources = pipeline.resource_counters();
  if (!args.quiet) std::cout << summary_table(metrics, result, resources);
  int code = kExitOk;
  if (!args.metrics_json.empty()) {
    std::ofstream out(args.metrics_json);
    std::error_code ec;
    const std::string file = pipeline.spec().file;
    const fs::path abs = file.empty() ? fs::path() : fs::absolute(file, ec);
    out << metrics_document(metrics, resources, ec ? file : abs.string());
    out.close();
    if (!out) {
      std::cerr << fmt::format("error: cannot write --metrics-json `{}`: {}\n", args.metrics_json,
                               std::strerror(errno));
      code = kExitRuntime;
    }
  }
  if (!result.fatal.empty()) {
    std::cerr << "error: " << result.fatal << "\n";
    return kExitRuntime;
  }
  if (result.cancelled) {
    std::cerr << fmt::format(
        "interrupted: {} results written, {} task(s) left unfinished; rerun with --resume to "
        "finish\n",
        result.written, result.unfinished);
    return kExitInterrupted;
  }
  return code;
}

StepError load_spec(graph::Registry& registry, const RunArgs& args, RunSetup& setup) {
  try {
    setup.spec = graph::load_pipeline_with_plugins(args.pipeline, registry);
  } catch (const graph::SpecError& e) {
    return {kExitUsage, e.what()};
  }
  if (args.resume && args.overwrite) {
    return {kExitUsage, "error: --resume and --overwrite contradict each other\n"};
  }
  if (!setup.spec->source && args.input.empty()) {
    return {kExitUsage,
            "error: no input: pass --input tasks.jsonl (the pipeline declares no `source:`)\n"};
  }
  if (!setup.spec->sink && args.output.empty()) {
    return {kExitUsage,
            "error: no output: pass --output results.jsonl (the pipeline declares no `sink:`)\n"};
  }
  return {};
}

StepError build_endpoints(const graph::Registry& registry, const RunArgs& args, const RunPlan& plan,
                          RunSetup& setup) {
  std::vector<std::pair<std::string, std::string>> in_params, out_params;
  endpoint_overrides(args, plan, in_params, out_params);
  try {
    const auto in =
        endpoint(registry, setup.spec->source, "io.jsonl_source", graph::Role::Source, in_params);
    const auto out =
        endpoint(registry, setup.spec->sink, "io.jsonl_sink", graph::Role::Sink, out_params);
    if (const std::string clash = file_clash({{"input", path_param(in)},
                                              {"output", path_param(out)},
                                              {"--trace", args.trace},
                                              {"--metrics-json", args.metrics_json}});
        !clash.empty()) {
      return {kExitUsage, "error: " + clash + "\n"};
    }
    setup.source = build_endpoint<graph::Source>(in);
    setup.sink = build_endpoint<graph::Sink>(out);
  } catch (const graph::SpecError& e) {
    return {kExitUsage, e.what()};
  } catch (const stages::io::OutputError& e) {
    return {kExitRuntime, fmt::format("error: {}\n", e.what())};
  } catch (const std::exception& e) {
    return {kExitUsage, fmt::format("error: {}\n", e.what())};
  }
  if (!plan.done_elsewhere.empty()) {
    setup.sink = std::make_unique<ExcludingSink>(std::move(setup.sink), plan.done_elsewhere);
  }
  return {};
}

StepError build_pipeline(const graph::Registry& registry, RunSetup& setup) {
  try {
    setup.pipeline = std::make_unique<graph::Pipeline>(std::move(*setup.spec), registry);
  } catch (const std::exception& e) {
    return {kExitRuntime, fmt::format("error: {}\n", e.what())};
  }
  return {};
}

StepError run_graph(const RunArgs& args, RunSetup& setup,
                    const std::function<void(const graph::RunProgress&)>& on_progress,
                    graph::RunResult& result) {
  graph::RunControl control;
  const ControlBinding binding(control);  // cmd_run installed the SIGINT/SIGTERM handler
  const ScopedSignals file_size({SIGXFSZ}, on_file_size_limit);
  graph::RunOptions opts;
  opts.trace_path = args.trace;
  opts.on_progress = on_progress;
  try {
    result = setup.pipeline->run(*setup.source, *setup.sink, control, opts);
  } catch (const std::exception& e) {
    return {kExitRuntime, fmt::format("error: {}\n", e.what())};
  }
  return {};
}

int cmd_run(graph::Registry& registry, const RunArgs& args) {
  // Phase 1: how this process was launched: one of an MPI job's ranks, one shard, or alone.
  const Launch launch = detect_launch();
  if (launch.ranks > 1) return run_scaled(registry, args, launch);
  RunPlan plan;
  plan.output = args.output;
  if (!args.shard.empty()) {
    std::string error;
    const auto shard = stages::io::parse_shard(args.shard, error);
    if (!shard) {
      std::cerr << "error: --" << error << "\n";
      return kExitUsage;
    }
    if (args.output.empty()) {
      std::cerr << "error: --shard needs --output: each shard writes OUTPUT.rank-I\n";
      return kExitUsage;
    }
    plan.shard = args.shard;
    plan.output = part_path(args.output, shard->index);
    if (args.resume) plan.done_elsewhere = finished_in_merged_output(args.output);
  }

  // Phase 2: the pipeline, its endpoints and its stages, then the run; SIGINT/SIGTERM end it
  // from here on (on_interrupt), the caller's handlers are back once it returns.
  const ScopedSignals interrupts({SIGINT, SIGTERM}, on_interrupt);
  const ExitOutsideRun exit_outside_run;
  const auto threads = limit_threads(args.threads);
  RunSetup setup;
  StepError failed = load_spec(registry, args, setup);
  if (!failed) failed = build_endpoints(registry, args, plan, setup);
  if (!failed) failed = build_pipeline(registry, setup);
  if (failed) {
    std::cerr << failed.message;
    return failed.code;
  }
  ProgressReporter progress(stderr, !args.quiet);
  graph::RunResult result;
  if (const StepError e = run_graph(
          args, setup, [&](const graph::RunProgress& p) { progress.update(p); }, result)) {
    std::cerr << e.message;
    return e.code;
  }

  // Phase 3: the summary and the exit code.
  const int code = report_run(args, *setup.pipeline, result, progress);
  if (code == kExitOk) print_shard_hint(args, plan);
  return code;
}

}  // namespace vsynth::cli
