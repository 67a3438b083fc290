// Packing of the eight 6-bit (scale, min) pairs of a Q4_K / Q5_K super-block into 12 bytes.
// Layout (see BlockQ4_K in kernels/quant/blocks.h): bytes 0-3 hold sc[0..3] in their low 6 bits
// and the top 2 bits of sc[4..7]; bytes 4-7 hold m[0..3] and the top 2 bits of m[4..7]; bytes
// 8-11 hold the low nibbles of sc[4..7] (low half) and m[4..7] (high half).
//
// Scalar code only: the AVX2 translation unit has its own vector unpacking (see blocks.h on
// why inline functions must not be shared with it).
#pragma once

#include <cstdint>

namespace vsynth::kernels::detail {

inline void unpack_k_scales(const uint8_t s[12], uint8_t sc[8], uint8_t m[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    m[j] = s[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
    m[j] = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// sc[j], m[j] must be < 64.
inline void pack_k_scales(const uint8_t sc[8], const uint8_t m[8], uint8_t s[12]) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

}  // namespace vsynth::kernels::detail
