// AVX2 + FMA + F16C kernels. kernels/CMakeLists.local.cmake compiles this file alone with
// -mavx2 -mfma -mf16c; kernels/cpu/cpu_path.cpp only calls into it after cpuid says the CPU
// has all three.
//
// Because of those flags nothing here may be shared with other translation units: everything is
// in an anonymous namespace, and no inline function or template from another header (not even
// std::max) is used, since the linker could keep this file's AVX2 copy of it for scalar code.
//
// Integer core: weights are unpacked to unsigned bytes (Q4/Q5/Q6 codes) or kept signed (Q8_0),
// activations are int8. _mm256_maddubs_epi16 multiplies u8 x s8 pairs into int16 sums of two
// (never saturates here: 63 * 127 * 2 < 32767), _mm256_madd_epi16 widens to int32 (optionally
// times a per-sub-block scale). Offsets (q - 8, q - 16, q - 32) and mins are applied once per
// block through the activation block sums. For Q8_0 the signed weights use the sign trick:
// |w| * (a * sign(w)) = w * a.
#include "kernels/quant/kernel_table.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/quant/blocks.h"

namespace vsynth::kernels::detail {

namespace {

#define VS_AVX2_INLINE inline __attribute__((always_inline))

VS_AVX2_INLINE float h2f(uint16_t h) {
  return _cvtsh_ss(h);
}

VS_AVX2_INLINE float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

VS_AVX2_INLINE int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

VS_AVX2_INLINE float hmax_ps(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Decode (one column) streams each weight byte once from DRAM. The hardware prefetcher alone
// leaves the core waiting (q8_0 output projection, 178 MB: 7.2 GB/s of the 11.4 GB/s one core
// streams); software prefetches kPrefetchDistance bytes ahead of the bytes being read keep the
// stream in flight (10.3 GB/s). Rows of a matvec are contiguous, so running past the row's end
// warms the next row; prefetches past the tensor are harmless (they never fault).
constexpr int kPrefetchDistance = 4096;

VS_AVX2_INLINE void prefetch_ahead(const void* p, size_t bytes) {
  const char* q = static_cast<const char*>(p) + kPrefetchDistance;
  for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(q + off, _MM_HINT_T0);
}

VS_AVX2_INLINE __m256i loadu256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
VS_AVX2_INLINE __m128i loadu128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

// u8 x s8 -> int32 sums of four neighbours.
VS_AVX2_INLINE __m256i dot_u8s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

template <typename T>
VS_AVX2_INLINE const T* column(const void* act, size_t stride, int c) {
  return reinterpret_cast<const T*>(static_cast<const unsigned char*>(act) +
                                    static_cast<size_t>(c) * stride);
}

// ---- Activation quantization (bit-identical to kernels_scalar.cpp) ----

// 32 floats -> 32 int8 in order, scale, and the int32 sum. amax and id are computed by the same
// float operations as the scalar code and the conversion rounds to nearest even like lrint.
VS_AVX2_INLINE __m256i quantize32(const float* x, float* d_out, int32_t* sum_out) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
  const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
  const __m256 m =
      _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                    _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
  const float amax = hmax_ps(m);
  const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
  *d_out = amax / 127.0f;
  const __m256 idv = _mm256_set1_ps(id);
  const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, idv));
  const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, idv));
  const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, idv));
  const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, idv));
  if (sum_out) {
    *sum_out = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
  }
  // packs work per 128-bit lane; the permute restores element order.
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void quantize_a32(const float* x, int64_t k, void* out) {
  const int64_t nb = k / kQK32;
  auto* qs = static_cast<int8_t*>(out);
  auto* d = reinterpret_cast<float*>(qs + 32 * nb);
  auto* sums = reinterpret_cast<int32_t*>(qs + 36 * nb);
  for (int64_t b = 0; b < nb; ++b, x += kQK32) {
    const __m256i q = quantize32(x, d + b, sums + b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 32 * b), q);
  }
}

void quantize_a256(const float* x, int64_t k, void* out) {
  auto* y = static_cast<BlockQ8A256*>(out);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < k / kQKK; ++b, x += kQKK) {
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < kQKK; i += 8)
      m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
    const float amax = hmax_ps(m);
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    const __m256 idv = _mm256_set1_ps(id);
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int j = 0; j < 8; ++j) {
      const float* xj = x + 32 * j;
      const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xj), idv));
      const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xj + 8), idv));
      const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xj + 16), idv));
      const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xj + 24), idv));
      const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs + 32 * j),
                          _mm256_permutevar8x32_epi32(p, perm));
      y[b].bsums[2 * j] = static_cast<int16_t>(hsum_epi32(_mm256_add_epi32(i0, i1)));
      y[b].bsums[2 * j + 1] = static_cast<int16_t>(hsum_epi32(_mm256_add_epi32(i2, i3)));
    }
    y[b].d = amax / 127.0f;
  }
}

void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(loadu128(x + i)));
  for (; i < n; ++i) y[i] = h2f(x[i]);
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

// ---- Float weights (activations stay float) ----

enum class FloatKind { F32, F16, BF16 };

template <FloatKind K>
VS_AVX2_INLINE __m256 load8(const void* w, int64_t i) {
  if constexpr (K == FloatKind::F32) {
    return _mm256_loadu_ps(static_cast<const float*>(w) + i);
  } else if constexpr (K == FloatKind::F16) {
    return _mm256_cvtph_ps(loadu128(static_cast<const uint16_t*>(w) + i));
  } else {
    const __m256i u = _mm256_cvtepu16_epi32(loadu128(static_cast<const uint16_t*>(w) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  }
}

template <FloatKind K>
VS_AVX2_INLINE float load1(const void* w, int64_t i) {
  if constexpr (K == FloatKind::F32) {
    return static_cast<const float*>(w)[i];
  } else if constexpr (K == FloatKind::F16) {
    return h2f(static_cast<const uint16_t*>(w)[i]);
  } else {
    const uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(w)[i]) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
}

template <FloatKind K, int C>
void dot_float(int64_t k, const void* w, const void* act, size_t stride, float* y) {
  const float* a[C];
  for (int c = 0; c < C; ++c) a[c] = column<float>(act, stride, c);
  __m256 acc[C][2];
  for (int c = 0; c < C; ++c) acc[c][0] = acc[c][1] = _mm256_setzero_ps();
  constexpr size_t kElem = K == FloatKind::F32 ? 4 : 2;
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    if constexpr (C == 1) {
      prefetch_ahead(static_cast<const char*>(w) + static_cast<size_t>(i) * kElem, 16 * kElem);
    }
    const __m256 w0 = load8<K>(w, i), w1 = load8<K>(w, i + 8);
    for (int c = 0; c < C; ++c) {
      acc[c][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a[c] + i), acc[c][0]);
      acc[c][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(a[c] + i + 8), acc[c][1]);
    }
  }
  for (; i + 8 <= k; i += 8) {
    const __m256 w0 = load8<K>(w, i);
    for (int c = 0; c < C; ++c)
      acc[c][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a[c] + i), acc[c][0]);
  }
  for (int c = 0; c < C; ++c) {
    float s = hsum_ps(_mm256_add_ps(acc[c][0], acc[c][1]));
    for (int64_t j = i; j < k; ++j) s += load1<K>(w, j) * a[c][j];
    y[c] = s;
  }
}

// ---- 32-element types ----
//
// Per group of 8 consecutive blocks: the weight blocks are unpacked once (into wq, on the stack),
// then for each column the 8 integer block dots are reduced to one vector holding the 8 blocks'
// exact integer sums (minus the offset times the activation sums, also exact), converted once,
// and multiplied by the 8 blocks' scale products: one float multiply-add per column per 8
// blocks instead of one per block. Lane j of a column's accumulator sums blocks j, j + 8, ...
// Every column is computed identically whatever the column count (bit-identical results).

// Unsigned codes in element order (Q4_0 / Q5_0; the fifth bit for Q5_0), or Q8_0's signed
// weights as they are. The 16 Q4 bytes are broadcast to both lanes by the load itself; the high
// lane is shifted to its nibbles.
VS_AVX2_INLINE __m256i unpack_nibbles32(const uint8_t* qs) {
  const __m256i both = _mm256_broadcastsi128_si256(loadu128(qs));
  const __m256i shifted = _mm256_srlv_epi32(both, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
  return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0F));
}

// Bit i of the 32-bit qh -> byte i = 0x10 if set, else 0.
VS_AVX2_INLINE __m256i fifth_bits32(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

VS_AVX2_INLINE __m256i unpack32(const BlockQ4_0& x) {
  return unpack_nibbles32(x.qs);
}
VS_AVX2_INLINE __m256i unpack32(const BlockQ5_0& x) {
  return _mm256_or_si256(unpack_nibbles32(x.qs), fifth_bits32(x.qh));
}
VS_AVX2_INLINE __m256i unpack32(const BlockQ8_0& x) {
  return loadu256(x.qs);
}

// log2 of the code offset subtracted per element (q - 8, q - 16); Q8_0 has none (-1).
template <typename Block>
constexpr int kOffsetShift = std::is_same_v<Block, BlockQ4_0>   ? 3
                             : std::is_same_v<Block, BlockQ5_0> ? 4
                                                                : -1;

// One block's integer dot (int32 x 8; the lanes sum to the exact block product). Q8_0's signed
// weights use the sign trick: |w| * (a * sign(w)) = w * a.
template <typename Block>
VS_AVX2_INLINE __m256i block_dot32(__m256i wq, const int8_t* aq) {
  const __m256i av = loadu256(aq);
  if constexpr (kOffsetShift<Block> < 0) {
    return dot_u8s8(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(av, wq));
  } else {
    return dot_u8s8(wq, av);
  }
}

// Lane j of the result = the sum of all 8 lanes of p[j].
VS_AVX2_INLINE __m256i reduce8(const __m256i* p) {
  const __m256i t0 = _mm256_hadd_epi32(p[0], p[1]), t1 = _mm256_hadd_epi32(p[2], p[3]);
  const __m256i t2 = _mm256_hadd_epi32(p[4], p[5]), t3 = _mm256_hadd_epi32(p[6], p[7]);
  const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
  // Each 128-bit half of u0 holds the half-sums of p[0..3] (u1: p[4..7]) over that half.
  return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
                          _mm256_permute2x128_si256(u0, u1, 0x31));
}

// kTail: the row's last group, n < 8 blocks (missing lanes are zero and nothing past the row
// is read).
template <typename Block, int C, bool kTail>
VS_AVX2_INLINE void group32(const Block* x, int64_t g, int n, const int8_t* const* aq,
                            const float* const* ad, const int32_t* const* as, __m256* acc) {
  __m256i wq[8];
  alignas(32) float dwf[8];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    if (!kTail || j < n) {
      wq[j] = unpack32(x[g + j]);
      dwf[j] = h2f(x[g + j].d);
    } else {
      wq[j] = _mm256_setzero_si256();
      dwf[j] = 0.0f;
    }
  }
  const __m256 dwv = _mm256_load_ps(dwf);
  __m256i mask = _mm256_set1_epi32(-1);
  if constexpr (kTail) {
    mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    __m256i p[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      p[j] = (!kTail || j < n) ? block_dot32<Block>(wq[j], aq[c] + 32 * (g + j))
                               : _mm256_setzero_si256();
    }
    __m256i sums = reduce8(p);
    __m256 da;
    if constexpr (kTail) {
      da = _mm256_maskload_ps(ad[c] + g, mask);
    } else {
      da = _mm256_loadu_ps(ad[c] + g);
    }
    if constexpr (kOffsetShift<Block> >= 0) {
      const __m256i asum = kTail ? _mm256_maskload_epi32(as[c] + g, mask) : loadu256(as[c] + g);
      sums = _mm256_sub_epi32(sums, _mm256_slli_epi32(asum, kOffsetShift<Block>));
    }
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dwv, da), acc[c]);
  }
}

template <typename Block, int C>
void dot_a32(int64_t k, const void* w, const void* act, size_t stride, float* y) {
  const int64_t nb = k / kQK32;
  const int8_t* aq[C];
  const float* ad[C];
  const int32_t* as[C];
  for (int c = 0; c < C; ++c) {
    const auto* base = column<unsigned char>(act, stride, c);
    aq[c] = reinterpret_cast<const int8_t*>(base);
    ad[c] = reinterpret_cast<const float*>(base + 32 * nb);
    as[c] = reinterpret_cast<const int32_t*>(base + 36 * nb);
  }
  const auto* x = static_cast<const Block*>(w);
  __m256 acc[C];
  for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
  int64_t g = 0;
  if constexpr (C == 1) prefetch_ahead(x, static_cast<size_t>(nb) * sizeof(Block));
  for (; g + 8 <= nb; g += 8) group32<Block, C, false>(x, g, 8, aq, ad, as, acc);
  if (g < nb) group32<Block, C, true>(x, g, static_cast<int>(nb - g), aq, ad, as, acc);
  for (int c = 0; c < C; ++c) y[c] = hsum_ps(acc[c]);
}

template <int C>
void dot_q8_0(int64_t k, const void* w, const void* act, size_t stride, float* y) {
  dot_a32<BlockQ8_0, C>(k, w, act, stride, y);
}
template <int C>
void dot_q4_0(int64_t k, const void* w, const void* act, size_t stride, float* y) {
  dot_a32<BlockQ4_0, C>(k, w, act, stride, y);
}
template <int C>
void dot_q5_0(int64_t k, const void* w, const void* act, size_t stride, float* y) {
  dot_a32<BlockQ5_0, C>(k, w, act, stride, y);
}

// ---- K-quants ----

// Q4_K / Q5_K scales: the eight 6-bit (sc, m) pairs as 8 bytes each (same unpacking as
// kernels/quant/kscales.h, done on 32-bit words: byte j of each word is one sub-block).
VS_AVX2_INLINE void unpack_k_scales_u64(const uint8_t* s, uint64_t* sc, uint64_t* m) {
  uint32_t u[3];
  std::memcpy(u, s, sizeof u);
  const uint32_t sc_lo = u[0] & 0x3F3F3F3Fu;
  const uint32_t m_lo = u[1] & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (u[2] & 0x0F0F0F0Fu) | ((u[0] >> 2) & 0x30303030u);
  const uint32_t m_hi = ((u[2] >> 4) & 0x0F0F0F0Fu) | ((u[1] >> 2) & 0x30303030u);
  *sc = sc_lo | (static_cast<uint64_t>(sc_hi) << 32);
  *m = m_lo | (static_cast<uint64_t>(m_hi) << 32);
}

// Shuffle-mask tables (constant data, loaded not built): kBcast16[j] broadcasts int16 element j
// of each 128-bit lane to all 8 positions; kQ6Scales[v] gives Q6_K code vector v of a half its
// two scales, int16 element 2v in the low lane and 2v + 1 in the high lane.
struct alignas(32) Mask32 {
  uint8_t b[32];
};
constexpr Mask32 bcast16(int lo_elem, int hi_elem) {
  Mask32 m{};
  for (int i = 0; i < 16; i += 2) {
    m.b[i] = static_cast<uint8_t>(2 * lo_elem);
    m.b[i + 1] = static_cast<uint8_t>(2 * lo_elem + 1);
    m.b[16 + i] = static_cast<uint8_t>(2 * hi_elem);
    m.b[16 + i + 1] = static_cast<uint8_t>(2 * hi_elem + 1);
  }
  return m;
}
constexpr Mask32 kBcast16[8] = {bcast16(0, 0), bcast16(1, 1), bcast16(2, 2), bcast16(3, 3),
                                bcast16(4, 4), bcast16(5, 5), bcast16(6, 6), bcast16(7, 7)};
constexpr Mask32 kQ6Scales[4] = {bcast16(0, 1), bcast16(2, 3), bcast16(4, 5), bcast16(6, 7)};

VS_AVX2_INLINE __m256i load_mask(const Mask32& m) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(m.b));
}

template <int C, bool kFive>
void dot_qk_affine(int64_t k, const void* w, const void* act, size_t stride, float* y) {
  using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  const BlockQ8A256* a[C];
  for (int c = 0; c < C; ++c) a[c] = column<BlockQ8A256>(act, stride, c);
  const auto* x = static_cast<const Block*>(w);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[C];
  for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < k / kQKK; ++b) {
    const Block& xb = x[b];
    if constexpr (C == 1) prefetch_ahead(&xb, sizeof(Block));
    uint64_t sc8, m8;
    unpack_k_scales_u64(xb.scales, &sc8, &m8);
    // Scales as int16 in both 128-bit lanes, so a lane-local shuffle can broadcast any of them.
    const __m256i sc16 = _mm256_broadcastsi128_si256(
        _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc8))));
    // Mins duplicated per pair of 16-element sums: [m0, m0, m1, m1, ...] as int16.
    const __m128i m8v = _mm_cvtsi64_si128(static_cast<long long>(m8));
    const __m256i m16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8v, m8v));
    __m256i hbits;
    if constexpr (kFive) hbits = loadu256(xb.qh);

    __m256i isum[C];
    for (int c = 0; c < C; ++c) isum[c] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {  // 64-element chunks: sub-blocks 2j (low) and 2j + 1 (high)
      const __m256i q = loadu256(xb.qs + 32 * j);
      __m256i lo = _mm256_and_si256(q, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      if constexpr (kFive) {
        const __m256i t = _mm256_srli_epi16(hbits, 2 * j);
        const __m256i bit4 = _mm256_set1_epi8(0x10);
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(t, 4), bit4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(t, 3), bit4));
      }
      const __m256i sc_lo = _mm256_shuffle_epi8(sc16, load_mask(kBcast16[2 * j]));
      const __m256i sc_hi = _mm256_shuffle_epi8(sc16, load_mask(kBcast16[2 * j + 1]));
      for (int c = 0; c < C; ++c) {
        const int8_t* aq = a[c][b].qs + 64 * j;
        const __m256i plo = _mm256_maddubs_epi16(lo, loadu256(aq));
        const __m256i phi = _mm256_maddubs_epi16(hi, loadu256(aq + 32));
        isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(_mm256_madd_epi16(plo, sc_lo),
                                                             _mm256_madd_epi16(phi, sc_hi)));
      }
    }
    const float d = h2f(xb.d), dmin = h2f(xb.dmin);
    for (int c = 0; c < C; ++c) {
      const BlockQ8A256& ab = a[c][b];
      const __m256i msum = _mm256_madd_epi16(loadu256(ab.bsums), m16);
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_set1_ps(d * ab.d), acc[c]);
      acc[c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * ab.d), acc[c]);
    }
  }
  for (int c = 0; c < C; ++c) y[c] = hsum_ps(acc[c]);
}

template <int C>
void dot_q6_k(int64_t k, const void* w, const void* act, size_t stride, float* y) {
  const BlockQ8A256* a[C];
  for (int c = 0; c < C; ++c) a[c] = column<BlockQ8A256>(act, stride, c);
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  __m256 acc[C];
  for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < k / kQKK; ++b) {
    const BlockQ6_K& xb = x[b];
    if constexpr (C == 1) prefetch_ahead(&xb, sizeof(BlockQ6_K));
    const __m128i sc8 = loadu128(xb.scales);
    const __m256i sc_all = _mm256_cvtepi8_epi16(sc8);  // 16 scales as int16, for the -32 offset
    __m256i isum[C];
    for (int c = 0; c < C; ++c) isum[c] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i sch =
          _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(h == 0 ? sc8 : _mm_srli_si128(sc8, 8)));
      const __m256i ql0 = loadu256(xb.ql + 64 * h);
      const __m256i ql1 = loadu256(xb.ql + 64 * h + 32);
      const __m256i qh = loadu256(xb.qh + 32 * h);
      __m256i v[4];
      v[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4),
                             _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45));
      v[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                             _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45));
      v[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                             _mm256_and_si256(qh, bits45));
      v[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                             _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m256i scj = _mm256_shuffle_epi8(sch, load_mask(kQ6Scales[j]));
        for (int c = 0; c < C; ++c) {
          const __m256i p = _mm256_maddubs_epi16(v[j], loadu256(a[c][b].qs + 128 * h + 32 * j));
          isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(p, scj));
        }
      }
    }
    const float d = h2f(xb.d);
    for (int c = 0; c < C; ++c) {
      const BlockQ8A256& ab = a[c][b];
      const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(loadu256(ab.bsums), sc_all), 5);
      const __m256i total = _mm256_sub_epi32(isum[c], offset);
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_set1_ps(d * ab.d), acc[c]);
    }
  }
  for (int c = 0; c < C; ++c) y[c] = hsum_ps(acc[c]);
}

// ---- Column-count dispatch ----

// ncols in [1, kMaxCols]. Kernels that keep more state per column (float and K-quant types)
// take at most 4 columns at a time (more would spill registers); the 32-element block types take
// all 8, so a weight block is unpacked once per 8 tokens.
template <template <int> class K, int C, int MaxC>
VS_AVX2_INLINE void run_cols(int ncols, int64_t k, const void* w, const void* act, size_t stride,
                             float* y) {
  if constexpr (C < MaxC) {
    if (ncols > C) {
      run_cols<K, C + 1, MaxC>(ncols, k, w, act, stride, y);
      return;
    }
  }
  K<C>::run(k, w, act, stride, y);
}

template <template <int> class K, int MaxC = 4>
void by_cols(int64_t k, const void* w, const void* act, size_t stride, int ncols, float* y) {
  static_assert(MaxC <= kMaxCols);
  while (ncols > MaxC) {
    K<MaxC>::run(k, w, act, stride, y);
    act = static_cast<const unsigned char*>(act) + static_cast<size_t>(MaxC) * stride;
    y += MaxC;
    ncols -= MaxC;
  }
  run_cols<K, 1, MaxC>(ncols, k, w, act, stride, y);
}

template <int C>
struct F32K {
  static void run(int64_t k, const void* w, const void* a, size_t s, float* y) {
    dot_float<FloatKind::F32, C>(k, w, a, s, y);
  }
};
template <int C>
struct F16K {
  static void run(int64_t k, const void* w, const void* a, size_t s, float* y) {
    dot_float<FloatKind::F16, C>(k, w, a, s, y);
  }
};
template <int C>
struct BF16K {
  static void run(int64_t k, const void* w, const void* a, size_t s, float* y) {
    dot_float<FloatKind::BF16, C>(k, w, a, s, y);
  }
};
template <int C>
struct Q4_0K {
  static void run(int64_t k, const void* w, const void* a, size_t s, float* y) {
    dot_q4_0<C>(k, w, a, s, y);
  }
};
template <int C>
struct Q5_0K {
  static void run(int64_t k, const void* w, const void* a, size_t s, float* y) {
    dot_q5_0<C>(k, w, a, s, y);
  }
};
template <int C>
struct Q8_0K {
  static void run(int64_t k, const void* w, const void* a, size_t s, float* y) {
    dot_q8_0<C>(k, w, a, s, y);
  }
};
template <int C>
struct Q4_KK {
  static void run(int64_t k, const void* w, const void* a, size_t s, float* y) {
    dot_qk_affine<C, false>(k, w, a, s, y);
  }
};
template <int C>
struct Q5_KK {
  static void run(int64_t k, const void* w, const void* a, size_t s, float* y) {
    dot_qk_affine<C, true>(k, w, a, s, y);
  }
};
template <int C>
struct Q6_KK {
  static void run(int64_t k, const void* w, const void* a, size_t s, float* y) {
    dot_q6_k<C>(k, w, a, s, y);
  }
};

constexpr KernelTable kAvx2 = {
    "avx2",
    quantize_a32,
    quantize_a256,
    f16_to_f32_row,
    f32_to_f16_row,
    by_cols<F32K>,
    by_cols<F16K>,
    by_cols<BF16K>,
    by_cols<Q4_0K, 8>,
    by_cols<Q5_0K, 8>,
    by_cols<Q8_0K, 8>,
    by_cols<Q4_KK>,
    by_cols<Q5_KK>,
    by_cols<Q6_KK>,
};

}  // namespace

const KernelTable* avx2_kernels() {
  return &kAvx2;
}

}  // namespace vsynth::kernels::detail

#else  // built without AVX2 (non-x86 target): no AVX2 table

namespace vsynth::kernels::detail {
const KernelTable* avx2_kernels() {
  return nullptr;
}
}  // namespace vsynth::kernels::detail

#endif
