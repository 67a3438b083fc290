// 64-bit mixers: splitmix64 (Steele, Lea and Flood; Vigna's constants) as a generator step, as
// a hash of one word and as its bare finaliser, and the first half of MurmurHash3's fmix64.
// Seeds, shard numbers and cache keys are made with them, so their values never change.
//
//   uint64_t state = seed;  base::splitmix64_next(state);   // a stream: 1st, 2nd, ... output
//   base::splitmix64(x)                                     // x hashed: full avalanche
#pragma once

#include <cstdint>

namespace vsynth::base {

inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;  // 2^64 / golden ratio, odd

// splitmix64's output function: a bijection of 64-bit words with full avalanche.
constexpr uint64_t splitmix64_finalize(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The first output of a splitmix64 generator whose state is x: x hashed.
constexpr uint64_t splitmix64(uint64_t x) {
  return splitmix64_finalize(x + kGoldenGamma);
}

// The generator's step: advances `state` and returns its next output.
constexpr uint64_t splitmix64_next(uint64_t& state) {
  state += kGoldenGamma;
  return splitmix64_finalize(state);
}

// The first half of MurmurHash3's fmix64 (one multiply): spreads a hash's bits over both
// halves of the word, cheaper than a full finaliser.
constexpr uint64_t fmix64_half(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

}  // namespace vsynth::base
