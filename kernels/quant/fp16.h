// IEEE half (fp16) and bfloat16 <-> fp32 conversions, scalar and exact.
//
// These are the portable reference: every quant block stores its scales as fp16, and F16/BF16
// tensors are rows of these. Row converters that use F16C when the CPU has it live in
// kernels/quant/convert.h; both agree bit for bit with these functions (tests check all 65536
// half values and the rounding of fp32 -> fp16).
#pragma once

#include <bit>
#include <cstdint>

namespace vsynth::kernels {

// fp16 bits -> fp32. Exact for every input (normals, subnormals, +-0, +-inf; NaNs stay NaN with
// their payload shifted into the fp32 mantissa, as F16C does).
constexpr float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return std::bit_cast<float>(sign);  // +-0
  // Subnormal half: value = mant * 2^-24. Normalise the mantissa into an fp32 normal.
  uint32_t e = 113;  // fp32 biased exponent of 2^-14, the top of the subnormal range
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((mant & 0x3FFu) << 13));
}

// fp32 -> fp16 bits, round to nearest even (what F16C's _MM_FROUND_TO_NEAREST_INT does).
// Values past the fp16 range become +-inf; tiny values become subnormals or +-0; NaN stays a
// quiet NaN.
constexpr uint16_t fp32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7FFFFFFFu;
  if (absx > 0x7F800000u) {  // NaN: keep the top payload bits, force quiet
    return static_cast<uint16_t>(sign | 0x7E00u | ((absx >> 13) & 0x3FFu));
  }
  if (absx >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520
  if (absx >= 0x38800000u) {                                              // normal half (>= 2^-14)
    // Rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even.
    const uint32_t rebased = absx - 0x38000000u;
    const uint32_t round = 0xFFFu + ((rebased >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rebased + round) >> 13));
  }
  if (absx < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): +-0
  // Subnormal half: shift the full 24-bit significand right, rounding to nearest even.
  const uint32_t exp = absx >> 23;  // 102..112
  const uint32_t mant = (absx & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exp;  // 14..24: value = mant * 2^(exp-150), unit = 2^-24
  const uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  const uint32_t rounded = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
  return static_cast<uint16_t>(sign | rounded);
}

// bf16 is the top half of an fp32: widening is a shift.
constexpr float bf16_to_fp32(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// fp32 -> bf16, round to nearest even; NaN stays a quiet NaN (never rounds into inf).
constexpr uint16_t fp32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace vsynth::kernels
