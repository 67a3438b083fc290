// A scaled-out job's per-rank outcomes: what each rank sends rank 0 at the end (its counters,
// statuses and stage metrics as JSON), and the job's totals and table built from them.
#pragma once

#include <string>
#include <vector>

#include "graph/metrics.h"
#include "graph/pipeline.h"

namespace vsynth::cli {

// graph::RunProgress as numbers, for the progress relay (fixed order; elapsed_s last).
std::vector<double> progress_values(const graph::RunProgress& p);
graph::RunProgress progress_from(const std::vector<double>& v);
// The job's progress: counters (total included) summed, the longest elapsed time.
graph::RunProgress job_progress(const std::vector<graph::RunProgress>& ranks);

struct RankOutcome {
  int rank = 0;
  graph::RunResult result;
  std::string error;    // a step failed on this rank (the message); empty otherwise
  std::string metrics;  // metrics_document() of the rank's pipeline, when it ran
};

std::string encode_outcome(const RankOutcome& o);
// Throws std::runtime_error when `text` is not what encode_outcome wrote.
RankOutcome decode_outcome(const std::string& text);

// The job's result: counters and statuses summed, elapsed the longest, fatal/cancelled when
// any rank's is.
graph::RunResult job_result(const std::vector<RankOutcome>& ranks);
// One row per rank (tasks, passed, failed, skipped, seconds, tasks/s) and the job's row.
std::string rank_table(const std::vector<RankOutcome>& ranks);
// {"ranks": [{"rank": K, "stages": [...], "resources": [...]}, ...]}
std::string job_metrics_document(const std::vector<RankOutcome>& ranks);

}  // namespace vsynth::cli
