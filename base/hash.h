// FNV-1a (64 bit): the one byte-string hash of the project's fingerprints and content hashes
// (encoder and vocabulary identity, index files and chunks, shard keys, per-task seeds).
// Stored and compared across runs, so its values never change. Not cryptographic, and not for
// hash tables under adversarial keys.
//
//   uint64_t h = base::fnv1a64("text");            // a whole string
//   h = base::fnv1a64_bytes(&n, sizeof n, h);      // extended by more bytes (incremental)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vsynth::base {

inline constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ULL;  // 14695981039346656037
inline constexpr uint64_t kFnv1a64Prime = 0x100000001b3ULL;        // 1099511628211

// FNV's offset basis short of its last digit: the start three hashes were written with
// (context's token fingerprints, the BPE vocabulary index, the report's id filter). They keep
// it so that their values stay what they were.
inline constexpr uint64_t kFnv1a64ShortOffset = 1469598103934665603ULL;

// h extended by the bytes of `bytes` (start from kFnv1a64Offset).
constexpr uint64_t fnv1a64(std::string_view bytes, uint64_t h = kFnv1a64Offset) {
  for (const char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * kFnv1a64Prime;
  return h;
}

// h extended by n bytes at p.
inline uint64_t fnv1a64_bytes(const void* p, std::size_t n, uint64_t h = kFnv1a64Offset) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * kFnv1a64Prime;
  return h;
}

}  // namespace vsynth::base
