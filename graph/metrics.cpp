#include "graph/metrics.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace vsynth::graph {

namespace {
// Threads take shard slots in order of first use; the last slot is shared by the rest.
std::atomic<int> g_next_slot{0};
int thread_slot() {
  thread_local const int slot = g_next_slot.fetch_add(1, std::memory_order_relaxed);
  return slot;
}
}  // namespace

StageMetrics::StageMetrics() : shards_(new Shard[kShards]) {}
StageMetrics::~StageMetrics() = default;

StageMetrics::Shard& StageMetrics::mine() {
  return shards_[std::min(thread_slot(), kShards - 1)];
}

template <class T>
void StageMetrics::bump(std::atomic<T>& counter, T by) {
  // An owned shard has a single writer: a plain load and store, no locked instruction. The
  // shared last shard needs the atomic add. (Both relaxed: readers only sum.)
  if (thread_slot() >= kShards - 1) {
    counter.fetch_add(by, std::memory_order_relaxed);
  } else {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
}

template <class F>
int64_t StageMetrics::sum(F field) const {
  int64_t total = 0;
  for (int i = 0; i < kShards; ++i)
    total += static_cast<int64_t>(field(shards_[i]).load(std::memory_order_relaxed));
  return total;
}

int StageMetrics::bucket_of(int64_t ns) {
  if (ns < 1) ns = 1;
  const auto u = static_cast<uint64_t>(ns);
  const int octave = 63 - std::countl_zero(u);  // floor(log2(ns))
  // Position inside the octave from the 4 bits below the leading one.
  const int sub = octave >= 4 ? static_cast<int>((u >> (octave - 4)) & (kSub - 1))
                              : static_cast<int>((u << (4 - octave)) & (kSub - 1));
  const int b = octave * kSub + sub;
  return b < kBuckets ? b : kBuckets - 1;
}

void StageMetrics::reset() {
  for (int i = 0; i < kShards; ++i) {
    Shard& s = shards_[i];
    s.queued = 0;
    s.started = 0;
    s.processed = 0;
    s.errors = 0;
    s.bypassed = 0;
    s.sum_ns = 0;
    for (auto& p : s.ports) p = 0;
    for (auto& b : s.buckets) b = 0;
  }
  exact_queued_ = 0;
  max_queued_ = 0;
}

void StageMetrics::enqueued() {
  if (exact_queue_) {
    const int64_t now = exact_queued_.fetch_add(1, std::memory_order_relaxed) + 1;
    int64_t cur = max_queued_.load(std::memory_order_relaxed);
    while (now > cur && !max_queued_.compare_exchange_weak(cur, now, std::memory_order_relaxed)) {
    }
  } else {
    Shard& s = mine();
    bump(s.queued, int64_t{1});
  }
}

void StageMetrics::dequeued(Shard& s) {
  if (exact_queue_)
    exact_queued_.fetch_sub(1, std::memory_order_relaxed);
  else
    bump(s.queued, int64_t{-1});
}

void StageMetrics::started() {
  Shard& s = mine();
  dequeued(s);
  bump(s.started, int64_t{1});
}

// Leaves the queue like started(), but neither runs nor times anything.
void StageMetrics::bypassed() {
  Shard& s = mine();
  dequeued(s);
  bump(s.bypassed, int64_t{1});
}

void StageMetrics::finished(int64_t ns) {
  Shard& s = mine();
  bump(s.buckets[bucket_of(ns)], uint32_t{1});
  bump(s.sum_ns, ns < 0 ? int64_t{0} : ns);
  bump(s.processed, int64_t{1});
}

void StageMetrics::errored() {
  bump(mine().errors, int64_t{1});
}

void StageMetrics::left_through(uint32_t port) {
  if (port < kMaxPorts) bump(mine().ports[port], uint64_t{1});
}

int64_t StageMetrics::queued() const {
  return exact_queue_ ? exact_queued_.load(std::memory_order_relaxed)
                      : sum([](const Shard& s) -> const std::atomic<int64_t>& { return s.queued; });
}

int64_t StageMetrics::in_flight() const {
  return sum([](const Shard& s) -> const std::atomic<int64_t>& { return s.started; }) -
         sum([](const Shard& s) -> const std::atomic<int64_t>& { return s.processed; });
}

uint64_t StageMetrics::processed() const {
  return static_cast<uint64_t>(
      sum([](const Shard& s) -> const std::atomic<int64_t>& { return s.processed; }));
}

uint64_t StageMetrics::errors() const {
  return static_cast<uint64_t>(
      sum([](const Shard& s) -> const std::atomic<int64_t>& { return s.errors; }));
}

uint64_t StageMetrics::bypassed_count() const {
  return static_cast<uint64_t>(
      sum([](const Shard& s) -> const std::atomic<int64_t>& { return s.bypassed; }));
}

uint64_t StageMetrics::port_count(uint32_t port) const {
  if (port >= kMaxPorts) return 0;
  return static_cast<uint64_t>(
      sum([port](const Shard& s) -> const std::atomic<uint64_t>& { return s.ports[port]; }));
}

double StageMetrics::percentile_ns(double q) const {
  std::vector<uint64_t> buckets(kBuckets, 0);
  uint64_t n = 0;
  for (int i = 0; i < kShards; ++i) {
    for (int b = 0; b < kBuckets; ++b) {
      const uint64_t c = shards_[i].buckets[b].load(std::memory_order_relaxed);
      buckets[b] += c;
      n += c;
    }
  }
  if (n == 0) return 0;
  const auto rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(n))));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets[b];
    if (seen >= rank) {
      const int octave = b / kSub, sub = b % kSub;
      const double lo = std::ldexp(1.0 + sub / static_cast<double>(kSub), octave);
      const double hi = std::ldexp(1.0 + (sub + 1) / static_cast<double>(kSub), octave);
      return std::sqrt(lo * hi);
    }
  }
  return 0;
}

double StageMetrics::mean_ns() const {
  const uint64_t n = processed();
  const int64_t total = sum([](const Shard& s) -> const std::atomic<int64_t>& { return s.sum_ns; });
  return n ? static_cast<double>(total) / static_cast<double>(n) : 0;
}

}  // namespace vsynth::graph
