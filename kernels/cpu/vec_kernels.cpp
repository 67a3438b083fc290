#include "kernels/cpu/vec_kernels.h"

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_path.h"
#include "kernels/quant/fp16.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VSYNTH_VEC_AVX2 1
#endif

namespace vsynth::kernels::vec {

namespace {

// ---------------------------------------------------------------------------------------------
// Portable versions

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoef = 0.044715f;

void scores_scalar(const float* Q, int R, size_t ldq, const float* K, int T, size_t ldk, int d,
                   float* S, size_t lds) {
  for (int r = 0; r < R; ++r) {
    const float* q = Q + static_cast<size_t>(r) * ldq;
    for (int j = 0; j < T; ++j) {
      const float* k = K + static_cast<size_t>(j) * ldk;
      float acc = 0.0f;
      for (int c = 0; c < d; ++c) acc += q[c] * k[c];
      S[static_cast<size_t>(r) * lds + static_cast<size_t>(j)] = acc;
    }
  }
}

void accumulate_scalar(float* A, int R, size_t lda, const float* P, size_t ldp, const float* V,
                       int T, size_t ldv, int d) {
  for (int r = 0; r < R; ++r) {
    float* a = A + static_cast<size_t>(r) * lda;
    for (int j = 0; j < T; ++j) {
      const float p = P[static_cast<size_t>(r) * ldp + static_cast<size_t>(j)];
      if (p == 0.0f) continue;
      const float* v = V + static_cast<size_t>(j) * ldv;
      for (int c = 0; c < d; ++c) a[c] += p * v[c];
    }
  }
}

void scores_i8_scalar(const float* Q, int R, size_t ldq, const int8_t* K, int T, size_t ldk,
                      const float* kscale, int d, float* qs, float* S, size_t lds) {
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < d; ++c) qs[r * d + c] = Q[static_cast<size_t>(r) * ldq + c] * kscale[c];
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < T; ++j) {
      const int8_t* k = K + static_cast<size_t>(j) * ldk;
      float acc = 0.0f;
      for (int c = 0; c < d; ++c) acc += qs[r * d + c] * static_cast<float>(k[c]);
      S[static_cast<size_t>(r) * lds + static_cast<size_t>(j)] = acc;
    }
  }
}

// ps[j] = P[r][j] * vscale[j]: row r of the probabilities with V's per-token scales folded in.
inline void scaled_probabilities(const float* P, size_t ldp, int r, const float* vscale, int T,
                                 float* ps) {
  for (int j = 0; j < T; ++j)
    ps[j] = P[static_cast<size_t>(r) * ldp + static_cast<size_t>(j)] * vscale[j];
}

void accumulate_i8_scalar(float* A, int R, size_t lda, const float* P, size_t ldp, const int8_t* V,
                          int T, size_t ldv, const float* vscale, int d, float* ps) {
  for (int r = 0; r < R; ++r) {
    float* a = A + static_cast<size_t>(r) * lda;
    scaled_probabilities(P, ldp, r, vscale, T, ps);
    for (int j = 0; j < T; ++j) {
      if (ps[j] == 0.0f) continue;
      const int8_t* v = V + static_cast<size_t>(j) * ldv;
      for (int c = 0; c < d; ++c) a[c] += ps[j] * static_cast<float>(v[c]);
    }
  }
}

float exp_sum_scalar(const float* x, float sub, float* y, int n) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    y[i] = std::exp(x[i] - sub);
    sum += y[i];
  }
  return sum;
}

void i8_to_f32_scalar(const int8_t* x, const float* per, float s, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]) * (per ? per[i] : s);
}

// GELU (tanh form) the way ggml's CPU backend computes it for GEGLU, so that logits can be
// compared with llama.cpp closely: x is rounded to fp16, looked up in a table of fp16 results
// (gelu computed in fp32), and the lookup multiplies the gate in fp32; |x| >= 10 bypasses the
// table (0 below -10, x above 10).
const std::vector<float>& gelu_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t i = 0; i < 65536; ++i) {
      const float x = fp16_to_fp32(static_cast<uint16_t>(i));
      const float g = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kGeluCoef * x * x)));
      t[i] = fp16_to_fp32(fp32_to_fp16(g));
    }
    return t;
  }();
  return table;
}

void gelu_mul_scalar(float* g, const float* u, int n) {
  const float* table = gelu_table().data();
  for (int i = 0; i < n; ++i) {
    const float x = g[i];
    if (x <= -10.0f) {
      g[i] = 0.0f;
    } else if (x >= 10.0f) {
      g[i] = x * u[i];
    } else {
      g[i] = table[fp32_to_fp16(x)] * u[i];
    }
  }
}

void silu_mul_scalar(float* g, const float* u, int n) {
  for (int i = 0; i < n; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void scale_mul_scalar(const float* x, float s, const float* w, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] = x[i] * s * (w ? w[i] : 1.0f);
}

void add_scalar(float* y, const float* x, int n) {
  for (int i = 0; i < n; ++i) y[i] += x[i];
}

constexpr Kernels kScalar = {
    .scores = scores_scalar,
    .accumulate = accumulate_scalar,
    .scores_i8 = scores_i8_scalar,
    .accumulate_i8 = accumulate_i8_scalar,
    .exp_sum = exp_sum_scalar,
    .i8_to_f32 = i8_to_f32_scalar,
    .gelu_mul = gelu_mul_scalar,
    .silu_mul = silu_mul_scalar,
    .scale_mul = scale_mul_scalar,
    .add = add_scalar,
};

// ---------------------------------------------------------------------------------------------
// AVX2 + FMA versions

#ifdef VSYNTH_VEC_AVX2
#define VSYNTH_AVX2 __attribute__((target("avx2,fma,f16c")))

VSYNTH_AVX2 inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// exp(x) for x in about [-87, 88]; lanes below -87 (and -inf) give 0. Cephes' expf polynomial
// after reduction by ln 2 (relative error ~1e-7).
VSYNTH_AVX2 inline __m256 exp256(__m256 x) {
  const __m256 zero_mask = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 x2 = _mm256_mul_ps(x, x);
  p = _mm256_fmadd_ps(p, x2, _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  const __m256 r = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(zero_mask, r);
}

// Eight lanes of a key or value row as floats: fp32 as is, int8 converted (the scales are
// folded in elsewhere).
VSYNTH_AVX2 inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
VSYNTH_AVX2 inline __m256 load8(const int8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// S[r + i][j] = q_i . K[j] for the four query rows q_i = q0 + i * ldq and the T key rows of K
// (d a multiple of 8): each key vector is loaded once for four FMAs. Keys go in pairs, so eight
// independent FMA chains are in flight (four, one key at a time, waited on the FMA latency:
// ~1 FMA per cycle of the two the core can issue); each (row, key) sum still adds its products
// in dimension order in one chain, so the result is the same whatever the pairing.
template <class E>
VSYNTH_AVX2 inline void scores_4rows(const float* q0, size_t ldq, const E* K, int T, size_t ldk,
                                     int d, float* S, size_t lds) {
  const float* q1 = q0 + ldq;
  const float* q2 = q1 + ldq;
  const float* q3 = q2 + ldq;
  int j = 0;
  for (; j + 2 <= T; j += 2) {
    const E* k0 = K + static_cast<size_t>(j) * ldk;
    const E* k1 = k0 + ldk;
    __m256 a[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) a[i] = _mm256_setzero_ps();
    for (int c = 0; c < d; c += 8) {
      const __m256 kv0 = load8(k0 + c), kv1 = load8(k1 + c);
      const __m256 x0 = _mm256_loadu_ps(q0 + c), x1 = _mm256_loadu_ps(q1 + c);
      const __m256 x2 = _mm256_loadu_ps(q2 + c), x3 = _mm256_loadu_ps(q3 + c);
      a[0] = _mm256_fmadd_ps(x0, kv0, a[0]);
      a[1] = _mm256_fmadd_ps(x1, kv0, a[1]);
      a[2] = _mm256_fmadd_ps(x2, kv0, a[2]);
      a[3] = _mm256_fmadd_ps(x3, kv0, a[3]);
      a[4] = _mm256_fmadd_ps(x0, kv1, a[4]);
      a[5] = _mm256_fmadd_ps(x1, kv1, a[5]);
      a[6] = _mm256_fmadd_ps(x2, kv1, a[6]);
      a[7] = _mm256_fmadd_ps(x3, kv1, a[7]);
    }
    float* s = S + static_cast<size_t>(j);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      s[i * lds] = hsum(a[i]);
      s[i * lds + 1] = hsum(a[4 + i]);
    }
  }
  for (; j < T; ++j) {
    const E* k = K + static_cast<size_t>(j) * ldk;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int c = 0; c < d; c += 8) {
      const __m256 kv = load8(k + c);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q0 + c), kv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q1 + c), kv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q2 + c), kv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q3 + c), kv, a3);
    }
    float* s = S + static_cast<size_t>(j);
    s[0] = hsum(a0);
    s[lds] = hsum(a1);
    s[2 * lds] = hsum(a2);
    s[3 * lds] = hsum(a3);
  }
}

// a[c .. c + 64) += sum_j p[j] * V[j][c .. c + 64), skipping zero weights: eight accumulators
// stay in registers across the T value rows. The loops over them are unrolled (pragma): GCC kept
// them as loops, so acc lived on the stack and every FMA waited on a store and a reload of its
// accumulator (prefill +10-13% at 512 tokens, +18-24% at 2048 once unrolled).
template <class E>
VSYNTH_AVX2 inline void accumulate_64cols(float* a, const float* p, const E* V, int T, size_t ldv,
                                          int c) {
  __m256 acc[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_loadu_ps(a + c + 8 * i);
  for (int j = 0; j < T; ++j) {
    if (p[j] == 0.0f) continue;
    const __m256 pj = _mm256_set1_ps(p[j]);
    const E* v = V + static_cast<size_t>(j) * ldv + c;
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) acc[i] = _mm256_fmadd_ps(pj, load8(v + 8 * i), acc[i]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(a + c + 8 * i, acc[i]);
}

VSYNTH_AVX2 void scores_avx2(const float* Q, int R, size_t ldq, const float* K, int T, size_t ldk,
                             int d, float* S, size_t lds) {
  if (d % 8 != 0) {
    scores_scalar(Q, R, ldq, K, T, ldk, d, S, lds);
    return;
  }
  int r = 0;
  for (; r + 4 <= R; r += 4) {
    scores_4rows(Q + static_cast<size_t>(r) * ldq, ldq, K, T, ldk, d,
                 S + static_cast<size_t>(r) * lds, lds);
  }
  for (; r < R; ++r) {
    const float* q = Q + static_cast<size_t>(r) * ldq;
    for (int j = 0; j < T; ++j) {
      const float* k = K + static_cast<size_t>(j) * ldk;
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
      int c = 0;
      for (; c + 16 <= d; c += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), _mm256_loadu_ps(k + c), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + c + 8), _mm256_loadu_ps(k + c + 8), a1);
      }
      for (; c < d; c += 8)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), _mm256_loadu_ps(k + c), a0);
      S[static_cast<size_t>(r) * lds + static_cast<size_t>(j)] = hsum(_mm256_add_ps(a0, a1));
    }
  }
}

VSYNTH_AVX2 void accumulate_avx2(float* A, int R, size_t lda, const float* P, size_t ldp,
                                 const float* V, int T, size_t ldv, int d) {
  if (d % 8 != 0) {
    accumulate_scalar(A, R, lda, P, ldp, V, T, ldv, d);
    return;
  }
  // Column chunks outer, rows inner: one chunk of V (T x 64 floats, 8 KiB for a 32-token
  // block) stays in L1 while every row passes over it; rows outer streamed all of V (32 KiB at
  // head dim 256, the whole L1) once per row from L2. Each output element still sums its terms
  // in key order, so the result does not depend on R.
  int c = 0;
  for (; c + 64 <= d; c += 64) {
    for (int r = 0; r < R; ++r) {
      accumulate_64cols(A + static_cast<size_t>(r) * lda, P + static_cast<size_t>(r) * ldp, V, T,
                        ldv, c);
    }
  }
  for (int r = 0; r < R; ++r) {
    float* a = A + static_cast<size_t>(r) * lda;
    const float* p = P + static_cast<size_t>(r) * ldp;
    for (int cc = c; cc < d; cc += 8) {
      __m256 acc = _mm256_loadu_ps(a + cc);
      for (int j = 0; j < T; ++j) {
        acc = _mm256_fmadd_ps(_mm256_set1_ps(p[j]),
                              _mm256_loadu_ps(V + static_cast<size_t>(j) * ldv + cc), acc);
      }
      _mm256_storeu_ps(a + cc, acc);
    }
  }
}

VSYNTH_AVX2 void scores_i8_avx2(const float* Q, int R, size_t ldq, const int8_t* K, int T,
                                size_t ldk, const float* kscale, int d, float* qs, float* S,
                                size_t lds) {
  if (d % 8 != 0) {
    scores_i8_scalar(Q, R, ldq, K, T, ldk, kscale, d, qs, S, lds);
    return;
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < d; c += 8) {
      _mm256_storeu_ps(qs + r * d + c,
                       _mm256_mul_ps(_mm256_loadu_ps(Q + static_cast<size_t>(r) * ldq + c),
                                     _mm256_loadu_ps(kscale + c)));
    }
  }
  int r = 0;
  for (; r + 4 <= R; r += 4) {
    scores_4rows(qs + static_cast<size_t>(r) * d, static_cast<size_t>(d), K, T, ldk, d,
                 S + static_cast<size_t>(r) * lds, lds);
  }
  for (; r < R; ++r) {
    const float* q = qs + static_cast<size_t>(r) * d;
    for (int j = 0; j < T; ++j) {
      const int8_t* k = K + static_cast<size_t>(j) * ldk;
      __m256 a0 = _mm256_setzero_ps();
      for (int c = 0; c < d; c += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), load8(k + c), a0);
      S[static_cast<size_t>(r) * lds + static_cast<size_t>(j)] = hsum(a0);
    }
  }
}

VSYNTH_AVX2 void accumulate_i8_avx2(float* A, int R, size_t lda, const float* P, size_t ldp,
                                    const int8_t* V, int T, size_t ldv, const float* vscale, int d,
                                    float* ps) {
  if (d % 64 != 0) {
    accumulate_i8_scalar(A, R, lda, P, ldp, V, T, ldv, vscale, d, ps);
    return;
  }
  for (int r = 0; r < R; ++r) {
    float* a = A + static_cast<size_t>(r) * lda;
    scaled_probabilities(P, ldp, r, vscale, T, ps);
    for (int c = 0; c < d; c += 64) accumulate_64cols(a, ps, V, T, ldv, c);
  }
}

VSYNTH_AVX2 float exp_sum_avx2(const float* x, float sub, float* y, int n) {
  const __m256 s = _mm256_set1_ps(sub);
  __m256 acc = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  for (; i < n; ++i) {
    y[i] = std::exp(x[i] - sub);
    sum += y[i];
  }
  return sum;
}

VSYNTH_AVX2 void i8_to_f32_avx2(const int8_t* x, const float* per, float s, float* y, int n) {
  int i = 0;
  const __m256 sv = _mm256_set1_ps(s);
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_mul_ps(load8(x + i), per ? _mm256_loadu_ps(per + i) : sv));
  }
  for (; i < n; ++i) y[i] = static_cast<float>(x[i]) * (per ? per[i] : s);
}

VSYNTH_AVX2 void gelu_mul_avx2(float* g, const float* u, int n) {
  const float* table = gelu_table().data();
  const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(g + i);
    const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
    const __m256 t = _mm256_i32gather_ps(table, _mm256_cvtepu16_epi32(h), 4);
    __m256 r = _mm256_blendv_ps(t, x, _mm256_cmp_ps(x, hi, _CMP_GE_OQ));
    r = _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LE_OQ), r);
    _mm256_storeu_ps(g + i, _mm256_mul_ps(r, _mm256_loadu_ps(u + i)));
  }
  gelu_mul_scalar(g + i, u + i, n - i);
}

VSYNTH_AVX2 void silu_mul_avx2(float* g, const float* u, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(g + i);
    const __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), x));
    const __m256 s = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    _mm256_storeu_ps(g + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
  }
  silu_mul_scalar(g + i, u + i, n - i);
}

VSYNTH_AVX2 void scale_mul_avx2(const float* x, float s, const float* w, float* y, int n) {
  const __m256 sv = _mm256_set1_ps(s);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), sv);
    if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < n; ++i) y[i] = x[i] * s * (w ? w[i] : 1.0f);
}

VSYNTH_AVX2 void add_avx2(float* y, const float* x, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
  }
  for (; i < n; ++i) y[i] += x[i];
}

constexpr Kernels kAvx2 = {
    .scores = scores_avx2,
    .accumulate = accumulate_avx2,
    .scores_i8 = scores_i8_avx2,
    .accumulate_i8 = accumulate_i8_avx2,
    .exp_sum = exp_sum_avx2,
    .i8_to_f32 = i8_to_f32_avx2,
    .gelu_mul = gelu_mul_avx2,
    .silu_mul = silu_mul_avx2,
    .scale_mul = scale_mul_avx2,
    .add = add_avx2,
};
#endif

}  // namespace

const Kernels& vec_kernels_scalar() {
  return kScalar;
}

const Kernels& vec_kernels() {
#ifdef VSYNTH_VEC_AVX2
  if (active_cpu_path() != CpuPath::Scalar) return kAvx2;  // both SIMD paths have AVX2
#endif
  return kScalar;
}

}  // namespace vsynth::kernels::vec
