// One streaming pass over a trace written by `vsynth run --trace` (graph/trace.cpp: a JSON array
// with one event per line: a process_name metadata event naming the pipeline, then one complete
// "X" event per item per stage with args {item, attempt}; an interrupted run leaves no `]`).
// Per stage: spans, busy time and a log-bucket histogram of span durations; per item: its wall
// time (first span start to last span end) and time in each stage, from which the slowest items
// and each stage's share of the P95 items' time ("latency hotspot attribution").
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/vsynth/report/results_scan.h"

namespace vsynth::cli::report {

// Span durations in log buckets: 10 per decade from 1 µs to 1000 s (bucket 0: below 1 µs,
// the last: above). Percentiles read from it are the bucket's geometric middle (±12%).
struct LatencyHistogram {
  static constexpr int kPerDecade = 10;
  static constexpr int kBuckets = 9 * kPerDecade + 2;
  std::array<uint64_t, kBuckets> counts{};
  uint64_t n = 0;
  double max_ms = 0;

  void add(double ms);
  double percentile(double p) const;   // ms; 0 when empty
  static double lower_ms(int bucket);  // bucket's lower edge (ms)
};

struct StageTime {
  std::string stage;
  uint64_t spans = 0;
  double busy_ms = 0;  // sum of span durations
  LatencyHistogram hist;
};

struct SlowItem {
  std::string id;
  double wall_ms = 0;
  std::vector<double> stage_ms;  // by StageTime index
};

struct TraceSummary {
  std::string path;
  std::string pipeline;  // from the metadata event, "" when absent
  uint64_t lines = 0, events = 0, torn = 0, foreign = 0;
  bool unterminated = false;  // no closing `]`: the run was interrupted
  std::vector<BadLine> bad;
  double wall_ms = 0;             // first span start to last span end
  std::vector<StageTime> stages;  // in order of first appearance
  uint64_t items = 0;
  uint64_t items_untracked = 0;   // spans of items past max_items: in stage totals only
  std::vector<SlowItem> slowest;  // the 10 slowest by wall time
  double p50_item_ms = 0, p95_item_ms = 0;
  uint64_t p95_items = 0;                        // items at or above the P95 wall time
  std::vector<double> p95_stage_ms;              // their time in each stage (by StageTime index)
  double p95_wall_ms = 0;                        // their wall time, summed
  uint64_t ids_checked = 0, ids_in_results = 0;  // items checked against the results' ids
};

struct TraceLimits {
  std::size_t max_line_bytes = std::size_t{1} << 20;
  std::size_t max_items = std::size_t{1} << 22;  // items followed one by one (≈100 B each)
  std::size_t max_stages = 64;
  std::size_t max_listed = 20;
};

// Throws std::runtime_error when the file cannot be read or is not a vsynth trace (not a JSON
// array of events, or no stage span in it). `results_ids`, when given, is checked against the
// trace's items (ids_in_results: none for a trace from another run).
TraceSummary scan_trace(const std::string& path, const TraceLimits& limits,
                        const IdFilter* results_ids);

}  // namespace vsynth::cli::report
