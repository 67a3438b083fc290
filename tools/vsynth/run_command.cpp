// `vsynth run`: load + validate the pipeline, build resources and stages, stream tasks through,
// report progress, print the summary. Ctrl-C stops admission and lets in-flight items finish
// and be written; a second Ctrl-C exits at once (records already written stay whole).
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "graph/pipeline.h"
#include "graph/validate.h"
#include "tools/vsynth/commands.h"
#include "tools/vsynth/exit_codes.h"
#include "tools/vsynth/progress.h"

namespace vsynth::cli {

namespace {

graph::RunControl* g_control = nullptr;
std::atomic<int> g_signals{0};

extern "C" void on_signal(int) {
  if (g_signals.fetch_add(1) >= 1) {
    static const char msg[] = "\nvsynth: interrupted twice, exiting now\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(kExitInterrupted);
  }
  if (g_control) g_control->cancel();
}

// The YAML's source/sink when it names them, else the JSONL defaults; command-line paths win.
graph::ResolvedEndpoint endpoint(const graph::Registry& registry,
                                 const std::optional<graph::ResolvedEndpoint>& from_yaml,
                                 const char* default_kind, graph::Role role,
                                 std::vector<std::pair<std::string, std::string>> overrides) {
  if (!from_yaml) return graph::resolve_endpoint(registry, default_kind, overrides, role);
  graph::ResolvedEndpoint e = *from_yaml;
  for (auto& [k, v] : overrides) {
    const graph::ParamSpec* spec = e.kind->contract.find_param(k);
    if (!spec) continue;  // this kind has no such parameter: the flag does not apply
    if (spec->type == graph::ParamType::Bool)
      e.params.set(k, graph::Value{v == "true"});
    else
      e.params.set(k, graph::Value{v});
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

}  // namespace

int cmd_run(const graph::Registry& registry, const RunArgs& args) {
  std::optional<graph::ValidatedPipeline> spec;
  try {
    spec = graph::load_pipeline(args.pipeline, registry);
  } catch (const graph::SpecError& e) {
    std::cerr << e.what();
    return kExitUsage;
  }
  std::vector<std::pair<std::string, std::string>> in_params, out_params;
  if (!args.input.empty()) in_params.emplace_back("path", args.input);
  if (!args.output.empty()) out_params.emplace_back("path", args.output);
  if (args.resume) out_params.emplace_back("resume", "true");
  if (args.overwrite) out_params.emplace_back("overwrite", "true");
  if (args.resume && args.overwrite) {
    std::cerr << "error: --resume and --overwrite contradict each other\n";
    return kExitUsage;
  }
  if (!spec->source && args.input.empty()) {
    std::cerr << "error: no input: pass --input tasks.jsonl (the pipeline declares no `source:`)\n";
    return kExitUsage;
  }
  if (!spec->sink && args.output.empty()) {
    std::cerr
        << "error: no output: pass --output results.jsonl (the pipeline declares no `sink:`)\n";
    return kExitUsage;
  }

  std::unique_ptr<graph::Source> source;
  std::unique_ptr<graph::Sink> sink;
  try {
    source = build_endpoint<graph::Source>(
        endpoint(registry, spec->source, "io.jsonl_source", graph::Role::Source, in_params));
    sink = build_endpoint<graph::Sink>(
        endpoint(registry, spec->sink, "io.jsonl_sink", graph::Role::Sink, out_params));
  } catch (const graph::SpecError& e) {
    std::cerr << e.what();
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }

  std::unique_ptr<graph::Pipeline> pipeline;
  try {
    pipeline = std::make_unique<graph::Pipeline>(std::move(*spec), registry);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitRuntime;
  }

  graph::RunControl control;
  g_control = &control;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  ProgressReporter progress(stderr, !args.quiet);
  graph::RunOptions opts;
  opts.trace_path = args.trace;
  opts.on_progress = [&](const graph::RunProgress& p) { progress.update(p); };
  graph::RunResult result;
  try {
    result = pipeline->run(*source, *sink, control, opts);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitRuntime;
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  g_control = nullptr;

  progress.finish(result);
  const auto metrics = pipeline->metrics();
  if (!args.quiet) std::cout << summary_table(metrics, result);
  if (!args.metrics_json.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& s : metrics) {
      j.push_back({{"stage", s.name},
                   {"kind", s.kind},
                   {"items", s.processed},
                   {"errors", s.errors},
                   {"p50_ms", s.p50_ms},
                   {"p95_ms", s.p95_ms},
                   {"p99_ms", s.p99_ms},
                   {"mean_ms", s.mean_ms},
                   {"max_queued", s.max_queued}});
    }
    std::ofstream(args.metrics_json) << j.dump(2) << "\n";
  }
  if (!result.fatal.empty()) {
    std::cerr << "error: " << result.fatal << "\n";
    return kExitRuntime;
  }
  if (result.cancelled) {
    std::cerr << fmt::format("interrupted: {} results written; rerun with --resume to finish\n",
                             result.written);
    return kExitInterrupted;
  }
  return kExitOk;
}

}  // namespace vsynth::cli
