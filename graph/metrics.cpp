#include "graph/metrics.h"

#include <bit>
#include <cmath>

namespace vsynth::graph {

int LatencyHistogram::bucket_of(int64_t ns) {
  if (ns < 1) ns = 1;
  const auto u = static_cast<uint64_t>(ns);
  const int octave = 63 - std::countl_zero(u);  // floor(log2(ns))
  // Position inside the octave from the bits below the leading one.
  const int sub = octave >= 4 ? static_cast<int>((u >> (octave - 4)) & (kSub - 1))
                              : static_cast<int>((u << (4 - octave)) & (kSub - 1));
  const int b = octave * kSub + sub;
  return b < kBuckets ? b : kBuckets - 1;
}

void LatencyHistogram::record(int64_t ns) {
  buckets_[bucket_of(ns)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(ns < 0 ? 0 : ns), std::memory_order_relaxed);
}

double LatencyHistogram::percentile(double q) const {
  const uint64_t n = count();
  if (n == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(n)));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b].load(std::memory_order_relaxed);
    if (seen >= rank && seen > 0) {
      const int octave = b / kSub, sub = b % kSub;
      const double lo = std::ldexp(1.0 + sub / static_cast<double>(kSub), octave);
      const double hi = std::ldexp(1.0 + (sub + 1) / static_cast<double>(kSub), octave);
      return std::sqrt(lo * hi);
    }
  }
  return 0;
}

double LatencyHistogram::mean_ns() const {
  const uint64_t n = count();
  return n ? static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / static_cast<double>(n)
           : 0;
}

void LatencyHistogram::reset() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  count_ = 0;
  sum_ns_ = 0;
}

}  // namespace vsynth::graph
