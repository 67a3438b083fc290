// Rng: the sampler's random numbers, one independent stream per sequence.
//
// xoshiro256** (Blackman & Vigna) seeded through splitmix64, so seeds 0, 1, 2... give unrelated
// streams. Deterministic across platforms and standard libraries (std::mt19937 is too, but
// std::uniform_real_distribution is not), which is what makes `--seed S` reproducible.
#pragma once

#include <cstdint>

#include "base/mix.h"

namespace vsynth::kernels {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  void reseed(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& w : s_) w = base::splitmix64_next(x);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  uint64_t s_[4];
};

}  // namespace vsynth::kernels
