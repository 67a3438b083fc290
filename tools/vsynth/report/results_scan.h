// One streaming pass over a results file (`vsynth run --output`, one JSON record per line):
// aggregates over every record, and a bounded table of tasks for the page. Memory does not grow
// with the file: lines are read one at a time with a cap, counters are keyed by bounded sets,
// and the table keeps at most `max_tasks` rows, failures first, each cut field by field.
// Lines that are not records (torn by an interrupted writer, a task line, another tool's JSON,
// longer than the cap) are counted and the first few listed with their line numbers.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/vsynth/report/bounded_json.h"
#include "tools/vsynth/report/id_filter.h"

namespace vsynth::cli::report {

struct ScanLimits {
  std::size_t max_tasks = 500;                         // rows in the task table
  std::size_t max_line_bytes = std::size_t{64} << 20;  // longer lines are skipped, not parsed
  std::size_t max_listed = 20;                         // bad lines listed by number
  std::size_t max_keys = 64;  // distinct statuses, ports, facets... counted
  JsonBudget row;             // per-row cut (bounded_json.h)
};

struct BadLine {
  uint64_t line = 0;  // 1-based
  std::string why;
};

// Pass rates over one kind of row: the loop's own verdict (claimed), the final candidate's
// proof (verified), and hidden tests where the record carries their score (`hidden`, as
// bench_loop writes it).
struct PassRates {
  uint64_t tasks = 0;
  uint64_t claimed = 0;        // `passed`
  uint64_t verified = 0;       // final candidate's proof verdict `verified`
  uint64_t proved = 0;         // final candidate got a proof verdict (not no_spec)
  uint64_t hidden_scored = 0;  // records with a boolean `hidden`
  uint64_t hidden_passed = 0;
};

// Counts by key with at most `max_keys` distinct keys: later keys go to "(other)", so a file of
// a million distinct foreign statuses cannot grow the map.
class BoundedCounts {
 public:
  explicit BoundedCounts(std::size_t max_keys = 64) : max_(max_keys) {}
  void add(const std::string& key, uint64_t n = 1);
  const std::map<std::string, uint64_t>& counts() const { return counts_; }

 private:
  std::size_t max_;
  std::map<std::string, uint64_t> counts_;
};

// What the model produced, summed over every candidate's facets (generate.llm).
struct EngineTotals {
  uint64_t candidates = 0;
  uint64_t tokens = 0;
  double decode_ms = 0;
  uint64_t prompts = 0;        // attempts that went through the prefix KV pool
  uint64_t prompt_hits = 0;    // ... of which some prompt tokens came from cached blocks
  uint64_t prompt_tokens = 0;  // their prompt tokens
  uint64_t cached_tokens = 0;  // ... read from the pool
  uint64_t drafted = 0;        // speculative decoding: tokens drafted
  uint64_t accepted = 0;       // ... and kept
};

struct ResultsSummary {
  std::string path;
  uint64_t lines = 0;
  uint64_t records = 0;
  uint64_t torn = 0, foreign = 0, oversized = 0;
  std::vector<BadLine> bad;  // the first ScanLimits::max_listed

  BoundedCounts statuses;
  PassRates visible;  // ordinary rows: the loop saw only visible tests
  PassRates oracle;   // oracle rows (tests_visibility: oracle): scored by the hidden tests
  std::map<uint64_t, uint64_t> attempts;  // attempts -> tasks (keys over 64 go to 64)

  // The feedback loop: tasks sent back at least once, those that passed in the end, who sent
  // them back (stage.port), which facets changed between attempts, first -> final status.
  uint64_t retried = 0, retried_passed = 0;
  BoundedCounts feedback_from, changed_facets, transitions;

  EngineTotals engine;

  // The task table: failures first (up to max_tasks), then passes; each row cut (bounded_json).
  std::vector<nlohmann::json> table;
  uint64_t failures_left_out = 0, passes_left_out = 0;

  IdFilter ids;
};

// Reads the whole file. Throws std::runtime_error when it cannot be opened or read; a file with
// no record at all is the caller's to refuse (records == 0).
ResultsSummary scan_results(const std::string& path, const ScanLimits& limits);

}  // namespace vsynth::cli::report
