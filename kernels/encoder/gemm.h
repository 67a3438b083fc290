// The encoder's F32 matrix kernels (internal to kernels/encoder): a register-blocked GEMM over
// weights packed once into panels, and the exact-GELU row pass, both in a portable and an
// AVX2/FMA version (per-function target attributes; kernels/cpu/cpu_path.h's active path picks).
//
//   Panels p = pack_panels(W, rows, cols, ld);   // W [rows, cols] row-major, once
//   gemm(p, X, ldx, t0, t1, Y, ldy, bias);       // Y[t][r] = sum_k X[t][k] W[r][k] + bias[r]
//
// Every output element is one fused-multiply-add chain over k = 0, 1, ..., cols-1 in that order,
// started from 0, then + bias once: the same operations whatever the token range, the tile an
// element falls in, the thread or the code path (the portable version uses std::fma). So a
// token's row never depends on which other tokens share the call (the encoder's batch
// invariance) and the scalar and AVX2 paths give the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vsynth::kernels::encoder_detail {

// Output features in one panel: two 8-float AVX2 vectors.
constexpr int64_t kPanel = 16;

// W packed panel-major: panel q holds rows [16q, 16q + 16) k-major, element (r, k) at
// data[(q * cols + k) * 16 + r % 16]; rows past `rows` are zero.
struct Panels {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;  // [ceil(rows / 16) * cols * 16]
  int64_t panels() const { return (rows + kPanel - 1) / kPanel; }
};

// Packs W [rows, cols] (row r at w + r * ld) into panels; `scale` multiplies every element.
Panels pack_panels(const float* w, int64_t rows, int64_t cols, int64_t ld, float scale = 1.0f);
// The same into `out` (resized as needed): the attention's per-head keys and values.
void pack_panels_into(Panels& out, const float* w, int64_t rows, int64_t cols, int64_t ld,
                      float scale = 1.0f);
// Packs W^T, W being [cols, rows] (row k at w + k * ld): panel q holds W[k][16q + i] at
// (q * cols + k) * 16 + i. The attention's values (V [tokens, head_dim] as a head_dim-row matrix).
void pack_panels_transposed(Panels& out, const float* w, int64_t rows, int64_t cols, int64_t ld);

// Y[t * ldy + r] = sum_k X[t * ldx + k] * W[r][k] (+ bias[r] when bias is not null) for tokens
// t in [t0, t1) and every r < p.rows; single-threaded (callers split tokens across threads).
void gemm(const Panels& p, const float* X, size_t ldx, int64_t t0, int64_t t1, float* Y, size_t ldy,
          const float* bias);

// x[i] = 0.5 x (1 + erf(x / sqrt 2)) for i < n: BERT's exact GELU, erf by a rational
// approximation (within 1e-6 of the double-precision GELU, relative to max(1, |GELU|), on
// [-10, 10]; tests/kernels/encoder_gemm_test.cpp).
void gelu_erf(float* x, int64_t n);

}  // namespace vsynth::kernels::encoder_detail
