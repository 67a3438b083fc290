// Per-stage run metrics: items processed and failed, queue length, in flight, items per port,
// and latency percentiles from a log-bucketed histogram (lock-free; ~4% bucket resolution).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vsynth::graph {

class LatencyHistogram {
 public:
  void record(int64_t ns);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  // q in [0, 1]; the geometric middle of the bucket holding the q-th sample, in ns.
  double percentile(double q) const;
  double mean_ns() const;
  void reset();

 private:
  static constexpr int kSub = 16;  // buckets per power of two
  static constexpr int kBuckets = 48 * kSub;
  static int bucket_of(int64_t ns);
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_ns_{0};
};

struct StageMetrics {
  explicit StageMetrics(std::size_t ports) : per_port(ports) {}
  std::atomic<uint64_t> processed{0};
  std::atomic<uint64_t> errors{0};  // exceptions / failed completions
  std::atomic<int64_t> queued{0};   // waiting in front of the stage
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> max_queued{0};
  std::vector<std::atomic<uint64_t>> per_port;
  LatencyHistogram latency;
};

// A stage's numbers at one moment, for tables and JSON.
struct StageSnapshot {
  std::string name;
  std::string kind;
  uint64_t processed = 0, errors = 0;
  int64_t queued = 0, in_flight = 0, max_queued = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, mean_ms = 0;
  std::vector<std::pair<std::string, uint64_t>> ports;
};

}  // namespace vsynth::graph
