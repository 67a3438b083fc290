// 64-bit FNV-1a: the content hash of files and chunk texts and the checksum of saved index
// files. Not cryptographic; collisions between a file's versions are 2^-64 events.
#pragma once

#include <cstdint>
#include <string_view>

namespace vsynth::stages::retrieval {

inline constexpr uint64_t kFnvOffset = 14695981039346656037ull;

inline uint64_t fnv1a64(std::string_view bytes, uint64_t h = kFnvOffset) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace vsynth::stages::retrieval
