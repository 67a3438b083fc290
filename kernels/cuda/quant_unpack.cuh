// Register-level decoding of the GGUF quant blocks (layouts in kernels/quant/blocks.h), shared by
// the GEMV, get_rows and fp16-dequantization kernels (internal to kernels/cuda).
//
// Every weight type is cut the same way: a row is a run of 32-element groups (a whole Q4_0 /
// Q5_0 / Q8_0 block, or one 32-element slice of a 256-element K-quant super-block), and a group
// is cut into 4 parts of 8 elements. unpack<T>(row, g, p) returns part p of group g as two words
// of four 8-bit codes each, plus an affine map: element = scale * code - coef. The element index
// inside the group of each code of word 0 is o0 + byte (o1 for word 1), so the integer dot
// product with an activation group a (int8 codes, scale da) is
//   da * (scale * (dp4a(q0, a[o0..o0+4)) + dp4a(q1, a[o1..o1+4))) - coef * (sum of those a))
// which is how gemv uses it; get_rows and dequantize_f16 apply the map per element instead.
#pragma once

#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace vsynth::kernels::cuda::dev {

struct Part {
  int q0, q1;   // 4 codes each, one per byte, 0..63 (or -128..127 for Q8_0)
  float scale;  // element = scale * code - coef
  float coef;
  int o0, o1;  // element index in the 32-group of the first code of q0 / q1
};

// Type tags (the DType values as template arguments).
enum class QT { Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K };

// Bytes of one block: 32 elements for Q4_0 / Q5_0 / Q8_0, 256 (8 groups) for the K-quants.
__host__ __device__ constexpr int block_bytes(QT t) {
  return t == QT::Q4_0   ? 18
         : t == QT::Q5_0 ? 22
         : t == QT::Q8_0 ? 34
         : t == QT::Q4_K ? 144
         : t == QT::Q5_K ? 176
                         : 210;  // Q6_K
}

// The 6-bit (scale, min) of sub-block s of a Q4_K / Q5_K super-block (kernels/quant/kscales.h).
__device__ __forceinline__ void k_scale_min(const uint8_t* sc12, int s, int& sc, int& mn) {
  if (s < 4) {
    sc = sc12[s] & 63;
    mn = sc12[s + 4] & 63;
  } else {
    sc = (sc12[s + 4] & 15) | ((sc12[s - 4] >> 6) << 4);
    mn = (sc12[s + 4] >> 4) | ((sc12[s] >> 6) << 4);
  }
}

template <QT T>
__device__ __forceinline__ Part unpack(const uint8_t* row, int g, int p) {
  Part r;
  if constexpr (T == QT::Q4_0 || T == QT::Q5_0) {
    const uint8_t* b = row + static_cast<size_t>(g) * block_bytes(T);
    const float d = half_bits_to_float(*reinterpret_cast<const uint16_t*>(b));
    // Nibbles after d (Q4_0) or after d and the 32 fifth bits qh (Q5_0): bytes 4p..4p+3 hold
    // elements 4p.. (low nibbles) and 16+4p.. (high nibbles).
    const int v = load_int_b2(b + (T == QT::Q4_0 ? 2 : 6), p);
    r.q0 = v & 0x0F0F0F0F;
    r.q1 = (v >> 4) & 0x0F0F0F0F;
    if constexpr (T == QT::Q5_0) {
      const uint32_t qh = static_cast<uint32_t>(load_int_b2(b + 2, 0));
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        r.q0 |= static_cast<int>(((qh >> (4 * p + i)) & 1u) << (8 * i + 4));
        r.q1 |= static_cast<int>(((qh >> (16 + 4 * p + i)) & 1u) << (8 * i + 4));
      }
    }
    r.scale = d;
    r.coef = (T == QT::Q4_0 ? 8.0f : 16.0f) * d;
    r.o0 = 4 * p;
    r.o1 = 16 + 4 * p;
  } else if constexpr (T == QT::Q8_0) {
    const uint8_t* b = row + static_cast<size_t>(g) * block_bytes(T);
    r.scale = half_bits_to_float(*reinterpret_cast<const uint16_t*>(b));
    r.coef = 0.0f;
    r.q0 = load_int_b2(b + 2, 2 * p);
    r.q1 = load_int_b2(b + 2, 2 * p + 1);
    r.o0 = 8 * p;
    r.o1 = 8 * p + 4;
  } else if constexpr (T == QT::Q4_K || T == QT::Q5_K) {
    const uint8_t* b = row + static_cast<size_t>(g / 8) * block_bytes(T);
    const int s = g % 8;  // sub-block: chunk s/2, low nibbles when s is even
    const float d = half_bits_to_float(*reinterpret_cast<const uint16_t*>(b));
    const float dmin = half_bits_to_float(*reinterpret_cast<const uint16_t*>(b + 2));
    int sc, mn;
    k_scale_min(b + 4, s, sc, mn);
    const uint8_t* qs = b + (T == QT::Q4_K ? 16 : 48) + 32 * (s / 2);
    const int shift = 4 * (s & 1);
    r.q0 = (load_int_b2(qs, 2 * p) >> shift) & 0x0F0F0F0F;
    r.q1 = (load_int_b2(qs, 2 * p + 1) >> shift) & 0x0F0F0F0F;
    if constexpr (T == QT::Q5_K) {
      const uint8_t* qh = b + 16;  // bit s of qh[l] is the fifth bit of element l of sub-block s
      r.q0 |= ((load_int_b2(qh, 2 * p) >> s) & 0x01010101) << 4;
      r.q1 |= ((load_int_b2(qh, 2 * p + 1) >> s) & 0x01010101) << 4;
    }
    r.scale = d * static_cast<float>(sc);
    r.coef = dmin * static_cast<float>(mn);
    r.o0 = 8 * p;
    r.o1 = 8 * p + 4;
  } else {  // Q6_K
    const uint8_t* b = row + static_cast<size_t>(g / 8) * block_bytes(T);
    const int gi = g % 8;               // 32-group inside the super-block
    const int h = gi / 4, qd = gi % 4;  // 128-element half, quadrant inside it
    const uint8_t* ql = b + 64 * h + 32 * (qd & 1);
    const uint8_t* qh = b + 128 + 32 * h;
    const int nshift = 4 * (qd >> 1), hshift = 2 * qd;
    r.q0 = ((load_int_b2(ql, 2 * p) >> nshift) & 0x0F0F0F0F) |
           (((load_int_b2(qh, 2 * p) >> hshift) & 0x03030303) << 4);
    r.q1 = ((load_int_b2(ql, 2 * p + 1) >> nshift) & 0x0F0F0F0F) |
           (((load_int_b2(qh, 2 * p + 1) >> hshift) & 0x03030303) << 4);
    const int8_t sc = reinterpret_cast<const int8_t*>(b + 192)[8 * h + (p >> 1) + 2 * qd];
    const float d = half_bits_to_float(*reinterpret_cast<const uint16_t*>(b + 208));
    r.scale = d * static_cast<float>(sc);
    r.coef = 32.0f * r.scale;
    r.o0 = 8 * p;
    r.o1 = 8 * p + 4;
  }
  return r;
}

// Code j (0..3) of a packed word: signed for Q8_0, unsigned otherwise.
template <QT T>
__device__ __forceinline__ float code(int word, int j) {
  if constexpr (T == QT::Q8_0) {
    return static_cast<float>(static_cast<int8_t>((word >> (8 * j)) & 0xFF));
  } else {
    return static_cast<float>((word >> (8 * j)) & 0xFF);
  }
}

// The 32 elements of group g of a row, as floats, through a callback out(index, value).
template <QT T, typename Out>
__device__ __forceinline__ void decode_group(const uint8_t* row, int g, Out out) {
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const Part r = unpack<T>(row, g, p);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      out(r.o0 + j, r.scale * code<T>(r.q0, j) - r.coef);
      out(r.o1 + j, r.scale * code<T>(r.q1, j) - r.coef);
    }
  }
}

}  // namespace vsynth::kernels::cuda::dev
