// Pipeline: a validated spec built into stage instances and resources, run on a oneTBB flow
// graph.
//
// Each stage is a flow-graph node with the concurrency the YAML gives it. Synchronous stages
// are function_nodes; asynchronous ones are async_nodes whose work leaves the graph thread and
// re-enters through the gateway (reserve_wait / try_put / release_wait), so graph threads never
// wait on an engine, a solver or a subprocess. The runner's own thread feeds the graph through
// an admission gate: at most max_in_flight items are inside at once, and a `block` edge whose
// queue is full pauses admission until it drains; a `reject` edge turns the overflowing item
// into a "rejected" result instead (counted, written, never dropped). Back edges send an item
// to an earlier stage with the feedback a stage attached, until the edge's max_attempts.
// With `ordered: true` results pass a sequencer_node and are written in input order.
//
// An exception in a stage fails that item only (status "error", with the stage's name) unless
// the pipeline says fail_fast. A task its source refused (Task::refused: over a size limit)
// is admitted and written as failed at once, never entering a stage. Cancellation
// (RunControl::cancel: SIGINT, SIGTERM) stops admission and reaches the items inside: a stage
// that takes seconds sees Item::stop_requested() and stops (graph::Cancelled), and every item
// that finishes a stage after the cancel is left unfinished (counted, not written: its result
// may have been cut short), so a resumed run gives it all its attempts and nothing written
// differs from an uninterrupted run. The pipeline is ready to run again. An item whose task's
// observer was cancelled (graph/observer.h: its client left) runs no further stage: it is
// written with status "cancelled"; the runner reports each stage's begin and end to that
// observer.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph/metrics.h"
#include "graph/registry.h"
#include "graph/resource.h"
#include "graph/stage.h"
#include "graph/trace.h"
#include "graph/validate.h"

namespace vsynth::graph {

// Shared between the runner and whoever may stop it (a signal handler, a test).
class RunControl {
 public:
  // Async-signal-safe: only sets a flag.
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  void reset() { cancelled_.store(false); }
  // What each admitted item's stop_flag() reads when its task has no observer.
  const std::atomic<bool>* flag() const { return &cancelled_; }

 private:
  std::atomic<bool> cancelled_{false};
};

struct RunProgress {
  uint64_t total = 0;  // tasks in the input when known (0: unknown), resumed ones excluded
  uint64_t admitted = 0;
  uint64_t written = 0;
  uint64_t passed = 0;
  uint64_t failed = 0;  // reached `out` through a failure port, or errored/rejected/exhausted
  uint64_t errors = 0;  // stage exceptions
  uint64_t rejected = 0;
  uint64_t exhausted = 0;
  uint64_t skipped = 0;  // already in the output (resume)
  // Cancelled on a back edge before their next attempt: not written, so --resume reruns them.
  uint64_t unfinished = 0;
  double elapsed_s = 0;
};

struct RunResult : RunProgress {
  bool cancelled = false;
  std::map<std::string, uint64_t> statuses;  // written items per final status
  std::string fatal;  // non-empty: the run stopped on an error (fail_fast, sink failure)
};

struct RunOptions {
  std::string trace_path;  // empty: no trace
  // Called after each result is written, from the writing thread; keep it cheap.
  std::function<void(const RunProgress&)> on_progress;
};

struct PipelineImpl;

class Pipeline {
 public:
  // Builds every resource (declaration order) and stage instance. Throws std::runtime_error
  // naming the resource or stage that failed to build.
  Pipeline(ValidatedPipeline spec, const Registry& registry);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Runs every task of `source` through the graph into `sink`. Re-entrant across calls (not
  // concurrent ones): each run builds a fresh flow graph over the same stages.
  RunResult run(Source& source, Sink& sink, RunControl& control, const RunOptions& options = {});

  const ValidatedPipeline& spec() const { return spec_; }
  std::vector<StageSnapshot> metrics() const;
  // Counters of the resources that report any (Resource::counters), in declaration order.
  std::vector<ResourceSnapshot> resource_counters() const {
    return resources_.snapshot(resource_order_);
  }
  // Items inside the graph right now (0 between runs).
  int64_t in_flight() const;

 private:
  ValidatedPipeline spec_;
  ResourceSet resources_;
  std::vector<std::string> resource_order_;
  std::vector<std::unique_ptr<StageBase>> stages_;
  std::vector<std::unique_ptr<StageMetrics>> metrics_;
  friend struct PipelineImpl;
};

}  // namespace vsynth::graph
