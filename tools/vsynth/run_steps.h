// The phases of `vsynth run`, shared by the one-process run (run_command.cpp) and the
// scaled-out job (scale/scaled_run.cpp), which runs them on every rank and agrees on their
// outcome before going on. Each phase returns its failure instead of printing it, so that a job
// can say once which rank failed and why.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/pipeline.h"
#include "graph/registry.h"
#include "graph/validate.h"
#include "tools/vsynth/commands.h"

namespace vsynth::cli {

// What the job decides for this process on top of the command line.
struct RunPlan {
  std::string output;  // the results file this process writes (a part when scaled out)
  std::string shard;   // "I/N" for the source; empty: every task
  std::set<std::string, std::less<>> done_elsewhere;  // ids finished in other files: skipped
};

struct StepError {
  int code = 0;  // an exit code (exit_codes.h); 0: no failure
  std::string message;
  explicit operator bool() const { return code != 0; }
};

struct RunSetup {
  std::optional<graph::ValidatedPipeline> spec;
  std::unique_ptr<graph::Source> source;
  std::unique_ptr<graph::Sink> sink;
  std::unique_ptr<graph::Pipeline> pipeline;
};

// Phase 1: the pipeline file (its plugins loaded into `registry`) and the command line checked
// against each other.
StepError load_spec(graph::Registry& registry, const RunArgs& args, RunSetup& setup);
// Phase 2: source and sink resolved, checked for clashes, built (the sink takes its lock).
StepError build_endpoints(const graph::Registry& registry, const RunArgs& args, const RunPlan& plan,
                          RunSetup& setup);
// Phase 3: every resource and stage (models load here).
StepError build_pipeline(const graph::Registry& registry, RunSetup& setup);
// Phase 4: the run, cancelled by SIGINT/SIGTERM through the caller's handler (cmd_run's, a
// scaled-out job's: interrupt_handler()), with the file size limit handled until it returns.
StepError run_graph(const RunArgs& args, RunSetup& setup,
                    const std::function<void(const graph::RunProgress&)>& on_progress,
                    graph::RunResult& result);
// SIGINT/SIGTERM received since the latest run_graph began.
int interrupts_received();
// run_graph's SIGINT/SIGTERM handler: it cancels the run in progress; between runs it only
// counts (interrupts_received). A scaled-out job keeps it installed from start to end, so a
// SIGTERM after this rank's run (mpirun stopping the job) is seen, not fatal at once.
void (*interrupt_handler())(int);

// The --metrics-json document: {pipeline, stages: [...], resources: [...]}; `pipeline` (the
// pipeline file, absolute) lets `vsynth report` draw the graph.
std::string metrics_document(const std::vector<graph::StageSnapshot>& metrics,
                             const std::vector<graph::ResourceSnapshot>& resources,
                             const std::string& pipeline = {});
// Phase 5: the summary on stdout, --metrics-json, the exit code.
int report_run(const RunArgs& args, const graph::Pipeline& pipeline, const graph::RunResult& result,
               class ProgressReporter& progress);

// How many TBB threads this process may use (--threads); 0: no limit. Applies until the
// returned handle dies.
std::shared_ptr<void> limit_threads(int threads);

}  // namespace vsynth::cli
