#include "kernels/sampler/sampler_math.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

#include "kernels/cpu/cpu_path.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#define VSYNTH_SAMPLER_AVX2 1
#define VSYNTH_AVX2 __attribute__((target("avx2")))  // no "fma": the same roundings as SSE2
#define VSYNTH_AVX512 __attribute__((target("avx512f")))
#endif

namespace vsynth::kernels::sampler_math {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kLog2e = 1.44269504088896341f;
// 2^f = e^(f ln 2): Taylor terms (ln 2)^k / k!, k = 6..0; error < 1.2e-7 on [-0.5, 0.5].
constexpr float kC6 = 1.5403530393381609e-4f, kC5 = 1.3333558146428443e-3f,
                kC4 = 9.6181291076284772e-3f, kC3 = 5.5504108664821580e-2f,
                kC2 = 2.4022650695910071e-1f, kC1 = 6.9314718055994531e-1f;

inline float exp_scalar(float x) {
  x = x < -87.0f ? -87.0f : x;  // also maps -inf to -87
  const float t = x * kLog2e;
  // n = round(t) without libm: truncate t - 0.5 toward zero, then fix up (t <= 0 here).
  const float shifted = t - 0.5f;
  int32_t n = static_cast<int32_t>(shifted);
  n -= static_cast<float>(n) > shifted ? 1 : 0;
  n += 1;
  const float f = t - static_cast<float>(n);  // in [-0.5, 0.5]
  float p = kC6;
  p = p * f + kC5;
  p = p * f + kC4;
  p = p * f + kC3;
  p = p * f + kC2;
  p = p * f + kC1;
  p = p * f + 1.0f;
  return p * std::bit_cast<float>(static_cast<int32_t>((n + 127) << 23));
}

#if defined(__SSE2__)
// The same computation on four lanes (SSE2 is part of every x86-64 CPU).
inline __m128 exp4(__m128 x) {
  x = _mm_max_ps(x, _mm_set1_ps(-87.0f));  // -inf -> -87 as well
  const __m128 t = _mm_mul_ps(x, _mm_set1_ps(kLog2e));
  const __m128 shifted = _mm_sub_ps(t, _mm_set1_ps(0.5f));
  __m128i n = _mm_cvttps_epi32(shifted);
  const __m128 nf = _mm_cvtepi32_ps(n);
  n = _mm_add_epi32(n, _mm_castps_si128(_mm_cmpgt_ps(nf, shifted)));  // -1 where nf > shifted
  n = _mm_add_epi32(n, _mm_set1_epi32(1));
  const __m128 f = _mm_sub_ps(t, _mm_cvtepi32_ps(n));
  __m128 p = _mm_set1_ps(kC6);
  p = _mm_add_ps(_mm_mul_ps(p, f), _mm_set1_ps(kC5));
  p = _mm_add_ps(_mm_mul_ps(p, f), _mm_set1_ps(kC4));
  p = _mm_add_ps(_mm_mul_ps(p, f), _mm_set1_ps(kC3));
  p = _mm_add_ps(_mm_mul_ps(p, f), _mm_set1_ps(kC2));
  p = _mm_add_ps(_mm_mul_ps(p, f), _mm_set1_ps(kC1));
  p = _mm_add_ps(_mm_mul_ps(p, f), _mm_set1_ps(1.0f));
  const __m128i bits = _mm_slli_epi32(_mm_add_epi32(n, _mm_set1_epi32(127)), 23);
  return _mm_mul_ps(p, _mm_castsi128_ps(bits));
}

inline float hsum(__m128 v) {
  alignas(16) float a[4];
  _mm_store_ps(a, v);
  return (a[0] + a[1]) + (a[2] + a[3]);
}
#endif

#if defined(VSYNTH_SAMPLER_AVX2)
// The SSE2 loops' arithmetic on eight lanes, lane by lane the same operations (no FMA), so the
// results are bit-identical on every CPU path; the SIMD paths (both have AVX2) take these.
bool use_avx2() {
  return active_cpu_path() != CpuPath::Scalar;
}

VSYNTH_AVX2 inline __m256 exp8(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));  // -inf -> -87 as well
  const __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(kLog2e));
  const __m256 shifted = _mm256_sub_ps(t, _mm256_set1_ps(0.5f));
  __m256i n = _mm256_cvttps_epi32(shifted);
  const __m256 nf = _mm256_cvtepi32_ps(n);
  n = _mm256_add_epi32(n, _mm256_castps_si256(_mm256_cmp_ps(nf, shifted, _CMP_GT_OS)));
  n = _mm256_add_epi32(n, _mm256_set1_epi32(1));
  const __m256 f = _mm256_sub_ps(t, _mm256_cvtepi32_ps(n));
  __m256 p = _mm256_set1_ps(kC6);
  p = _mm256_add_ps(_mm256_mul_ps(p, f), _mm256_set1_ps(kC5));
  p = _mm256_add_ps(_mm256_mul_ps(p, f), _mm256_set1_ps(kC4));
  p = _mm256_add_ps(_mm256_mul_ps(p, f), _mm256_set1_ps(kC3));
  p = _mm256_add_ps(_mm256_mul_ps(p, f), _mm256_set1_ps(kC2));
  p = _mm256_add_ps(_mm256_mul_ps(p, f), _mm256_set1_ps(kC1));
  p = _mm256_add_ps(_mm256_mul_ps(p, f), _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

// sum_exp's blocks: the low four lanes are the SSE2 loop's a0, the high four its a1.
VSYNTH_AVX2 double sum_exp_avx2(const float* x, std::size_t n, float shift, float scale,
                                std::size_t& i) {
  const __m256 vs = _mm256_set1_ps(shift), vk = _mm256_set1_ps(scale);
  const __m256 ninf = _mm256_set1_ps(kNegInf);
  double total = 0.0;
  while (i + 8 <= n) {
    __m256 a = _mm256_setzero_ps();
    const std::size_t end = i + std::min<std::size_t>(1024, (n - i) / 8 * 8);
    for (; i < end; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      const __m256 e = _mm256_andnot_ps(_mm256_cmp_ps(v, ninf, _CMP_EQ_OQ),
                                        exp8(_mm256_mul_ps(_mm256_sub_ps(v, vs), vk)));
      a = _mm256_add_ps(a, e);
    }
    total += hsum(_mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1)));
  }
  return total;
}

// GCC 12's 512-bit intrinsics pass _mm512_undefined_*() as the unused merge source, which its
// -Wmaybe-uninitialized reports once inlined (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// 512-bit mul, add and sub with the rounding given explicitly: the compiler cannot fuse them into
// an FMA (GCC contracts a * b + c in C++ by default, and avx512f brings FMA), so they round as
// SSE2's do.
VSYNTH_AVX512 inline __m512 mul16(__m512 a, __m512 b) {
  return _mm512_mul_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
VSYNTH_AVX512 inline __m512 add16(__m512 a, __m512 b) {
  return _mm512_add_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
VSYNTH_AVX512 inline __m512 sub16(__m512 a, __m512 b) {
  return _mm512_sub_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// The AVX512 path's sum_exp: exp8's operations on 16 lanes, lane by lane the same (the -1 where
// nf > shifted as a masked subtract; -inf lanes zeroed by a mask), and each 16 values' low and
// then high 8 added into the 8 lanes of sum_exp_avx2's accumulator, in its order: the same bits,
// at about half the exp instructions (the greedy sampler's largest part, bench_sampler).
VSYNTH_AVX512 inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));  // -inf -> -87 as well
  const __m512 t = mul16(x, _mm512_set1_ps(kLog2e));
  const __m512 shifted = sub16(t, _mm512_set1_ps(0.5f));
  __m512i n = _mm512_cvttps_epi32(shifted);
  const __m512 nf = _mm512_cvtepi32_ps(n);
  n = _mm512_mask_sub_epi32(n, _mm512_cmp_ps_mask(nf, shifted, _CMP_GT_OS), n,
                            _mm512_set1_epi32(1));
  n = _mm512_add_epi32(n, _mm512_set1_epi32(1));
  const __m512 f = sub16(t, _mm512_cvtepi32_ps(n));
  __m512 p = _mm512_set1_ps(kC6);
  for (const float c : {kC5, kC4, kC3, kC2, kC1, 1.0f}) p = add16(mul16(p, f), _mm512_set1_ps(c));
  const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23);
  return mul16(p, _mm512_castsi512_ps(bits));
}

VSYNTH_AVX512 double sum_exp_avx512(const float* x, std::size_t n, float shift, float scale,
                                    std::size_t& i) {
  const __m512 vs = _mm512_set1_ps(shift), vk = _mm512_set1_ps(scale);
  const __m512 ninf = _mm512_set1_ps(kNegInf);
  double total = 0.0;
  while (i + 8 <= n) {
    __m256 a = _mm256_setzero_ps();
    const std::size_t end = i + std::min<std::size_t>(1024, (n - i) / 8 * 8);
    // 16 values at a time; a block's last 8 (its length is a multiple of 8) as 16 lanes whose
    // high 8 are loaded as zeros and not added.
    while (i < end) {
      const bool whole = end - i >= 16;
      const __mmask16 load = whole ? 0xFFFF : 0x00FF;
      const __m512 v = _mm512_maskz_loadu_ps(load, x + i);
      const __mmask16 finite =
          load & static_cast<__mmask16>(~_mm512_cmp_ps_mask(v, ninf, _CMP_EQ_OQ));
      const __m512 e = _mm512_maskz_mov_ps(finite, exp16(mul16(sub16(v, vs), vk)));
      a = _mm256_add_ps(a, _mm512_castps512_ps256(e));
      if (whole) {
        a = _mm256_add_ps(a, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
      }
      i += whole ? 16 : 8;
    }
    total += hsum(_mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1)));
  }
  return total;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

bool use_avx512() {
  return active_cpu_path() == CpuPath::Avx512Vnni;
}

// max_of's lanes: the low four are the SSE2 loop's m0, the high four its m1.
VSYNTH_AVX2 __m128 max_of_avx2(const float* x, std::size_t n, std::size_t& i) {
  __m256 m = _mm256_set1_ps(kNegInf);
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
  return _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
}
#endif

}  // namespace

float exp_nonpos(float x) {
  return exp_scalar(x);
}

float max_of(const float* x, std::size_t n) {
  std::size_t i = 0;
  float r = kNegInf;
#if defined(__SSE2__)
  __m128 m;
#if defined(VSYNTH_SAMPLER_AVX2)
  if (use_avx2()) {
    m = max_of_avx2(x, n, i);
  } else
#endif
  {
    __m128 m0 = _mm_set1_ps(kNegInf), m1 = m0;
    for (; i + 8 <= n; i += 8) {
      // max_ps(a, b) returns b when either is NaN: keep the running max in b's place.
      m0 = _mm_max_ps(_mm_loadu_ps(x + i), m0);
      m1 = _mm_max_ps(_mm_loadu_ps(x + i + 4), m1);
    }
    m = _mm_max_ps(m0, m1);
  }
  alignas(16) float a[4];
  _mm_store_ps(a, m);
  for (float v : a) r = v > r ? v : r;
#endif
  for (; i < n; ++i) r = x[i] > r ? x[i] : r;
  return r;
}

std::size_t first_index_of(const float* x, std::size_t n, float v) {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128 vv = _mm_set1_ps(v);
  for (; i + 8 <= n; i += 8) {
    const int hit = _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(x + i), vv)) |
                    _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(x + i + 4), vv)) << 4;
    if (hit != 0) return i + static_cast<std::size_t>(std::countr_zero(static_cast<unsigned>(hit)));
  }
#endif
  for (; i < n; ++i) {
    if (x[i] == v) return i;
  }
  return n;
}

double sum_exp(const float* x, std::size_t n, float shift, float scale) {
  double total = 0.0;
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128 vs = _mm_set1_ps(shift), vk = _mm_set1_ps(scale), ninf = _mm_set1_ps(kNegInf);
#if defined(VSYNTH_SAMPLER_AVX2)
  if (use_avx512()) {
    total = sum_exp_avx512(x, n, shift, scale, i);
  } else if (use_avx2()) {
    total = sum_exp_avx2(x, n, shift, scale, i);
  }
#endif
  // Float partial sums over blocks of 1024 (~1e-7 relative error), blocks summed in double.
  while (i + 8 <= n) {
    __m128 a0 = _mm_setzero_ps(), a1 = _mm_setzero_ps();
    const std::size_t end = i + std::min<std::size_t>(1024, (n - i) / 8 * 8);
    for (; i < end; i += 8) {
      const __m128 x0 = _mm_loadu_ps(x + i), x1 = _mm_loadu_ps(x + i + 4);
      // -inf entries (banned tokens) contribute exactly 0.
      const __m128 e0 =
          _mm_andnot_ps(_mm_cmpeq_ps(x0, ninf), exp4(_mm_mul_ps(_mm_sub_ps(x0, vs), vk)));
      const __m128 e1 =
          _mm_andnot_ps(_mm_cmpeq_ps(x1, ninf), exp4(_mm_mul_ps(_mm_sub_ps(x1, vs), vk)));
      a0 = _mm_add_ps(a0, e0);
      a1 = _mm_add_ps(a1, e1);
    }
    total += hsum(_mm_add_ps(a0, a1));
  }
#endif
  for (; i < n; ++i) {
    if (x[i] != kNegInf) total += exp_scalar((x[i] - shift) * scale);
  }
  return total;
}

void top_k(const float* x, std::size_t n, std::size_t k, std::vector<Scored>& out) {
  out.clear();
  if (k == 0) return;
  out.reserve(std::min(k, n));
  auto cmp = [](const Scored& a, const Scored& b) { return better(a, b); };  // front = worst
  // Ids arrive in increasing order, so an entry equal to the heap's worst never beats it:
  // a strict > against the worst logit is the whole test.
  auto offer = [&](std::size_t i) {
    const Scored c{x[i], static_cast<int32_t>(i)};
    if (!(c.logit > kNegInf)) return;
    if (out.size() < k) {
      out.push_back(c);
      std::push_heap(out.begin(), out.end(), cmp);
    } else if (c.logit > out.front().logit) {
      std::pop_heap(out.begin(), out.end(), cmp);
      out.back() = c;
      std::push_heap(out.begin(), out.end(), cmp);
    }
  };
  std::size_t i = 0;
#if defined(__SSE2__)
  for (; i + 8 <= n; i += 8) {
    const float worst = out.size() < k ? kNegInf : out.front().logit;
    const __m128 w = _mm_set1_ps(worst);
    unsigned bits = static_cast<unsigned>(_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(x + i), w))) |
                    static_cast<unsigned>(_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(x + i + 4), w)))
                        << 4;
    if (out.size() < k) bits = 0xFF;  // still filling: offer everything
    while (bits) {
      offer(i + static_cast<std::size_t>(std::countr_zero(bits)));
      bits &= bits - 1;
    }
  }
#endif
  for (; i < n; ++i) offer(i);
  std::sort_heap(out.begin(), out.end(), cmp);
}

std::size_t count_finite(const float* x, std::size_t n) {
  std::size_t c = 0;
  for (std::size_t i = 0; i < n; ++i) c += x[i] > kNegInf ? 1 : 0;
  return c;
}

}  // namespace vsynth::kernels::sampler_math
