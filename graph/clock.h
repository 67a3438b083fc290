// A cheap monotonic clock for per-stage timing: the x86 time-stamp counter scaled to ns
// (invariant TSC on every x86-64 machine we target), steady_clock elsewhere. Two reads per
// stage per item, so a 20 ns vDSO call would be a visible share of a trivial stage.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace vsynth::graph {

class FastClock {
 public:
  // Nanoseconds since an arbitrary epoch; monotonic within a process.
  static int64_t now_ns() {
#if defined(__x86_64__)
    static const double ns_per_tick = calibrate();
    return static_cast<int64_t>(static_cast<double>(__rdtsc()) * ns_per_tick);
#else
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
#endif
  }

 private:
#if defined(__x86_64__)
  // Measures the TSC rate against steady_clock over ~2 ms, once per process.
  static double calibrate() {
    using C = std::chrono::steady_clock;
    const auto t0 = C::now();
    const uint64_t c0 = __rdtsc();
    while (C::now() - t0 < std::chrono::milliseconds(2)) {
    }
    const auto t1 = C::now();
    const uint64_t c1 = __rdtsc();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    return c1 > c0 ? ns / static_cast<double>(c1 - c0) : 1.0;
  }
#endif
};

}  // namespace vsynth::graph
