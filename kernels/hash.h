// FNV-1a (64 bit): the one byte-string hash of the project's fingerprints (encoder and
// vocabulary identity, per-task seeds). Not for hash tables under adversarial keys.
//
//   uint64_t h = fnv1a(kFnv1aOffset, bytes.data(), bytes.size());
#pragma once

#include <cstddef>
#include <cstdint>

namespace vsynth::kernels {

inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ULL;
inline constexpr uint64_t kFnv1aPrime = 0x100000001b3ULL;

// h extended by n bytes at p (start from kFnv1aOffset).
inline uint64_t fnv1a(uint64_t h, const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * kFnv1aPrime;
  return h;
}

}  // namespace vsynth::kernels
