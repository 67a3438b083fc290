#include "kernels/encoder/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/cpu_path.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VSYNTH_ENC_AVX2 1
#define VSYNTH_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace vsynth::kernels::encoder_detail {

namespace {

// Tokens per micro-tile: 6 x 2 accumulator vectors + 2 weight vectors + 1 broadcast fit the
// 16 AVX2 registers.
constexpr int64_t kTileTokens = 6;
// Panels of one group: a group (cols x 16 x 4 bytes a panel) stays in L2 while every micro-tile
// of the token range passes over it; ~128 KiB.
constexpr int64_t kGroupBytes = 128 * 1024;

int64_t group_panels(const Panels& p) {
  const int64_t bytes = p.cols * kPanel * int64_t{sizeof(float)};
  return std::max<int64_t>(1, kGroupBytes / std::max<int64_t>(1, bytes));
}

// Writes a 16-wide tile row: all of it, or its first `valid` elements.
void store_row(float* y, const float* tile, int64_t valid) {
  std::memcpy(y, tile, size_t(valid) * sizeof(float));
}

// ---- erf: Eigen's single-precision rational approximation (odd numerator of degree 13, even
// denominator of degree 8, inputs clamped to [-4, 4], beyond which erf is +-1 in floats) ----

constexpr float kA1 = -1.60960333262415e-02f, kA3 = -2.95459980854025e-03f,
                kA5 = -7.34990630326855e-04f, kA7 = -5.69250639462346e-05f,
                kA9 = -2.10102402082508e-06f, kA11 = 2.77068142495902e-08f,
                kA13 = -2.72614225801306e-10f;
constexpr float kB0 = -1.42647390514189e-02f, kB2 = -7.37332916720468e-03f,
                kB4 = -1.68282697438203e-03f, kB6 = -2.13374055278905e-04f,
                kB8 = -1.45660718464996e-05f;
constexpr float kRsqrt2 = 0.70710678118654752f;

// ---- Portable versions (std::fma: the same roundings as the FMA instructions) ----

template <int M>
void tile_scalar(const float* wp, int64_t k, const float* x, size_t ldx, float* y, size_t ldy,
                 const float* bias, int64_t valid) {
  float acc[M][kPanel] = {};
  for (int64_t j = 0; j < k; ++j) {
    const float* w = wp + j * kPanel;
    for (int i = 0; i < M; ++i) {
      const float b = x[size_t(i) * ldx + size_t(j)];
      for (int64_t r = 0; r < kPanel; ++r) acc[i][r] = std::fma(w[r], b, acc[i][r]);
    }
  }
  for (int i = 0; i < M; ++i) {
    if (bias != nullptr) {
      for (int64_t r = 0; r < kPanel; ++r) acc[i][r] = acc[i][r] + bias[r];
    }
    store_row(y + size_t(i) * ldy, acc[i], valid);
  }
}

float erf_scalar(float v) {
  const float x = std::min(4.0f, std::max(-4.0f, v));
  const float x2 = x * x;
  float p = std::fma(x2, kA13, kA11);
  p = std::fma(x2, p, kA9);
  p = std::fma(x2, p, kA7);
  p = std::fma(x2, p, kA5);
  p = std::fma(x2, p, kA3);
  p = std::fma(x2, p, kA1);
  p = x * p;
  float q = std::fma(x2, kB8, kB6);
  q = std::fma(x2, q, kB4);
  q = std::fma(x2, q, kB2);
  q = std::fma(x2, q, kB0);
  return p / q;
}

void gelu_scalar(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float e = erf_scalar(x[i] * kRsqrt2);
    x[i] = (0.5f * x[i]) * (1.0f + e);
  }
}

// ---- AVX2 + FMA versions ----

#ifdef VSYNTH_ENC_AVX2

// The i loops are unrolled (pragmas: GCC does not at -O2 by itself), so that the 12
// accumulators live in registers.
template <int M>
VSYNTH_AVX2 void tile_avx2(const float* wp, int64_t k, const float* x, size_t ldx, float* y,
                           size_t ldy, const float* bias, int64_t valid) {
  __m256 acc[M][2];
#pragma GCC unroll 6
  for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t j = 0; j < k; ++j) {
    const __m256 w0 = _mm256_loadu_ps(wp + j * kPanel), w1 = _mm256_loadu_ps(wp + j * kPanel + 8);
#pragma GCC unroll 6
    for (int i = 0; i < M; ++i) {
      const __m256 b = _mm256_broadcast_ss(x + size_t(i) * ldx + size_t(j));
      acc[i][0] = _mm256_fmadd_ps(w0, b, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(w1, b, acc[i][1]);
    }
  }
  if (bias != nullptr) {
    const __m256 b0 = _mm256_loadu_ps(bias), b1 = _mm256_loadu_ps(bias + 8);
#pragma GCC unroll 6
    for (int i = 0; i < M; ++i) {
      acc[i][0] = _mm256_add_ps(acc[i][0], b0);
      acc[i][1] = _mm256_add_ps(acc[i][1], b1);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < M; ++i) {
    float* out = y + size_t(i) * ldy;
    if (valid == kPanel) {
      _mm256_storeu_ps(out, acc[i][0]);
      _mm256_storeu_ps(out + 8, acc[i][1]);
    } else {
      alignas(32) float t[kPanel];
      _mm256_store_ps(t, acc[i][0]);
      _mm256_store_ps(t + 8, acc[i][1]);
      store_row(out, t, valid);
    }
  }
}

VSYNTH_AVX2 __m256 erf_avx2(__m256 v) {
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(4.0f), _mm256_max_ps(_mm256_set1_ps(-4.0f), v));
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_fmadd_ps(x2, _mm256_set1_ps(kA13), _mm256_set1_ps(kA11));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(kA9));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(kA7));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(kA5));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(kA3));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(kA1));
  p = _mm256_mul_ps(x, p);
  __m256 q = _mm256_fmadd_ps(x2, _mm256_set1_ps(kB8), _mm256_set1_ps(kB6));
  q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(kB4));
  q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(kB2));
  q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(kB0));
  return _mm256_div_ps(p, q);
}

// The tail (n % 8 elements) goes through masked loads and stores, so that no scalar arithmetic
// (which the compiler could contract differently) is involved.
VSYNTH_AVX2 __m256 gelu8_avx2(__m256 v) {
  const __m256 e = erf_avx2(_mm256_mul_ps(v, _mm256_set1_ps(kRsqrt2)));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v),
                       _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

VSYNTH_AVX2 void gelu_avx2(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu8_avx2(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) int32_t m[8];
    for (int64_t j = 0; j < 8; ++j) m[j] = i + j < n ? -1 : 0;
    const __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(m));
    _mm256_maskstore_ps(x + i, mask, gelu8_avx2(_mm256_maskload_ps(x + i, mask)));
  }
}

#endif

using TileFn = void (*)(const float*, int64_t, const float*, size_t, float*, size_t, const float*,
                        int64_t);

template <template <int> class Pick>
struct TileTable {
  TileFn fn[kTileTokens + 1] = {nullptr,     Pick<1>::fn, Pick<2>::fn, Pick<3>::fn,
                                Pick<4>::fn, Pick<5>::fn, Pick<6>::fn};
};
template <int M>
struct PickScalar {
  static constexpr TileFn fn = tile_scalar<M>;
};
#ifdef VSYNTH_ENC_AVX2
template <int M>
struct PickAvx2 {
  static constexpr TileFn fn = tile_avx2<M>;
};
#endif

bool use_avx2() {
#ifdef VSYNTH_ENC_AVX2
  return active_cpu_path() != CpuPath::Scalar;  // both SIMD paths have AVX2 + FMA
#else
  return false;
#endif
}

const TileFn* tile_table() {
  static const TileTable<PickScalar> scalar;
#ifdef VSYNTH_ENC_AVX2
  static const TileTable<PickAvx2> avx2;
  if (use_avx2()) return avx2.fn;
#endif
  return scalar.fn;
}

}  // namespace

void pack_panels_into(Panels& out, const float* w, int64_t rows, int64_t cols, int64_t ld,
                      float scale) {
  out.rows = rows;
  out.cols = cols;
  out.data.resize(size_t(out.panels() * cols * kPanel));
  // Written in order (16 source rows read side by side), each panel's padding rows zero.
  float* dst = out.data.data();
  for (int64_t q = 0; q < out.panels(); ++q) {
    const int64_t r0 = q * kPanel, m = std::min(kPanel, rows - r0);
    for (int64_t k = 0; k < cols; ++k, dst += kPanel) {
      for (int64_t i = 0; i < m; ++i) dst[i] = w[(r0 + i) * ld + k] * scale;
      for (int64_t i = m; i < kPanel; ++i) dst[i] = 0.0f;
    }
  }
}

Panels pack_panels(const float* w, int64_t rows, int64_t cols, int64_t ld, float scale) {
  Panels p;
  pack_panels_into(p, w, rows, cols, ld, scale);
  return p;
}

void pack_panels_transposed(Panels& out, const float* w, int64_t rows, int64_t cols, int64_t ld) {
  out.rows = rows;
  out.cols = cols;
  out.data.assign(size_t(out.panels() * cols * kPanel), 0.0f);
  for (int64_t q = 0; q < out.panels(); ++q) {
    const int64_t r0 = q * kPanel, m = std::min(kPanel, rows - r0);
    float* dst = out.data.data() + q * cols * kPanel;
    for (int64_t k = 0; k < cols; ++k) {
      std::memcpy(dst + k * kPanel, w + k * ld + r0, size_t(m) * sizeof(float));
    }
  }
}

void gemm(const Panels& p, const float* X, size_t ldx, int64_t t0, int64_t t1, float* Y, size_t ldy,
          const float* bias) {
  const TileFn* fn = tile_table();
  const int64_t panels = p.panels(), group = group_panels(p);
  float bias_tail[kPanel];
  for (int64_t g0 = 0; g0 < panels; g0 += group) {
    const int64_t g1 = std::min(panels, g0 + group);
    for (int64_t t = t0; t < t1; t += kTileTokens) {
      const int64_t m = std::min(kTileTokens, t1 - t);
      const float* x = X + size_t(t) * ldx;
      for (int64_t q = g0; q < g1; ++q) {
        const int64_t r0 = q * kPanel, valid = std::min(kPanel, p.rows - r0);
        const float* b = nullptr;
        if (bias != nullptr && valid == kPanel) {
          b = bias + r0;
        } else if (bias != nullptr) {
          std::fill_n(bias_tail, kPanel, 0.0f);
          std::copy_n(bias + r0, valid, bias_tail);
          b = bias_tail;
        }
        fn[m](p.data.data() + size_t(q * p.cols * kPanel), p.cols, x, ldx,
              Y + size_t(t) * ldy + size_t(r0), ldy, b, valid);
      }
    }
  }
}

void gelu_erf(float* x, int64_t n) {
#ifdef VSYNTH_ENC_AVX2
  if (use_avx2()) {
    gelu_avx2(x, n);
    return;
  }
#endif
  gelu_scalar(x, n);
}

}  // namespace vsynth::kernels::encoder_detail
