// The document `vsynth run --metrics-json` writes (run_command.cpp metrics_document):
// {pipeline, stages: [{stage, kind, items, errors, p50_ms, p95_ms, p99_ms, mean_ms,
// max_queued}], resources: [{resource, kind, counters: {name: value}}]}, or a scaled-out job's
// {ranks: [that, with `rank`]} (scale/job_summary.cpp), read as one with each row's rank named.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vsynth::cli::report {

struct RunMetrics {
  std::string path;
  std::string pipeline;  // "" when the run did not record it
  nlohmann::json stages = nlohmann::json::array();
  nlohmann::json resources = nlohmann::json::array();
};

// Throws std::runtime_error naming the file and what is wrong: unreadable, over 64 MiB, not
// JSON (with the byte offset), or JSON without `stages` and `resources` arrays.
RunMetrics read_metrics(const std::string& path);

}  // namespace vsynth::cli::report
