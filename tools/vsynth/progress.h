// What `vsynth run` shows while it works: a redrawn progress bar on a terminal, plain periodic
// lines otherwise (logs, CI), and a per-stage summary table at the end.
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <vector>

#include "graph/metrics.h"
#include "graph/pipeline.h"

namespace vsynth::cli {

class ProgressReporter {
 public:
  ProgressReporter(std::FILE* out, bool enabled);
  void update(const graph::RunProgress& p);  // throttled; safe from any one thread at a time
  void finish(const graph::RunProgress& p);  // final line

 private:
  std::string line(const graph::RunProgress& p) const;
  std::FILE* out_;
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point last_{};
  std::mutex mu_;
};

// The end-of-run table: one row per stage with count, errors, p50/p95/p99 and items per port,
// the results line, then one line per resource that reports counters (a model's KV pool hit
// rate, evictions, speculation acceptance).
std::string summary_table(const std::vector<graph::StageSnapshot>& stages,
                          const graph::RunResult& r,
                          const std::vector<graph::ResourceSnapshot>& resources = {});
// One resource's counters as "name value, ..." (ratios as percentages).
std::string counters_line(const graph::ResourceSnapshot& r);

}  // namespace vsynth::cli
