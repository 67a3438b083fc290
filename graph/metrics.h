// Per-stage run metrics: items started, processed and failed, queue length, items per port,
// and latency percentiles from a log-bucketed histogram (16 buckets per octave, ~4% wide).
//
// Counting sits on the hot path of every stage for every item, so counters live in
// per-thread shards (each thread owns one and updates it with plain relaxed stores; threads
// beyond the shard count share the last one with atomic adds) and readers sum the shards.
// The queue length of a stage whose queue limits something (a `reject` edge, a watched
// `block` edge) is instead one exact shared counter, with its maximum tracked.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace vsynth::graph {

class StageMetrics {
 public:
  static constexpr int kMaxPorts = 16;

  StageMetrics();
  ~StageMetrics();
  StageMetrics(const StageMetrics&) = delete;
  StageMetrics& operator=(const StageMetrics&) = delete;

  // Makes the queue length exact (one shared counter) for stages whose queue limits flow.
  void set_exact_queue(bool exact) { exact_queue_ = exact; }
  void reset();

  // --- hot path ---
  void enqueued();            // an item waits in front of the stage
  void started();             // the stage took an item from its queue
  void finished(int64_t ns);  // ... and is done with it after `ns`
  void errored();             // the item failed inside the stage
  void bypassed();            // the stage let an item pass without running (Task::bypass)
  void left_through(uint32_t port);

  // --- readers (sums over shards; approximate while the run is moving) ---
  int64_t queued() const;
  int64_t in_flight() const;
  int64_t max_queued() const { return max_queued_.load(std::memory_order_relaxed); }
  uint64_t processed() const;
  uint64_t errors() const;
  uint64_t bypassed_count() const;
  uint64_t port_count(uint32_t port) const;
  double percentile_ns(double q) const;  // q in [0, 1]
  double mean_ns() const;

 private:
  static constexpr int kSub = 16;
  static constexpr int kBuckets = 48 * kSub;
  static constexpr int kShards = 32;  // the last one is shared by threads beyond the others

  struct alignas(64) Shard {
    std::atomic<int64_t> queued{0}, started{0}, processed{0}, errors{0}, bypassed{0}, sum_ns{0};
    std::array<std::atomic<uint64_t>, kMaxPorts> ports{};
    std::array<std::atomic<uint32_t>, kBuckets> buckets{};
  };

  static int bucket_of(int64_t ns);
  Shard& mine();
  void dequeued(Shard& s);  // an item left the queue (started or bypassed)
  template <class T>
  void bump(std::atomic<T>& counter, T by);
  template <class F>
  int64_t sum(F field) const;

  std::unique_ptr<Shard[]> shards_;
  bool exact_queue_ = false;
  std::atomic<int64_t> exact_queued_{0};
  std::atomic<int64_t> max_queued_{0};
};

// A stage's numbers at one moment, for tables and JSON.
struct StageSnapshot {
  std::string name;
  std::string kind;
  uint64_t processed = 0, errors = 0, bypassed = 0;
  int64_t queued = 0, in_flight = 0, max_queued = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, mean_ms = 0;
  std::vector<std::pair<std::string, uint64_t>> ports;
};

}  // namespace vsynth::graph
