// Small fp32 vector kernels for the forward pass and attention (internal to kernels/): score
// tiles, weighted row sums, exp, int8 decoding, activations, scaling and adds.
//
// Two implementations: portable C++ and AVX2/FMA/F16C (compiled with per-function target
// attributes, so this file needs no special flags). vec_kernels() returns the one matching
// kernels/cpu/cpu_path.h's active path.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vsynth::kernels::vec {

struct Kernels {
  // S[r*lds + j] = sum_c Q[r*ldq + c] * K[j*ldk + c]  for r < R, j < T, c < d.
  void (*scores)(const float* Q, int R, size_t ldq, const float* K, int T, size_t ldk, int d,
                 float* S, size_t lds);
  // A[r*lda + c] += sum_j P[r*ldp + j] * V[j*ldv + c]  for r < R, c < d, j < T.
  void (*accumulate)(float* A, int R, size_t lda, const float* P, size_t ldp, const float* V, int T,
                     size_t ldv, int d);
  // scores with int8 keys: S[r*lds + j] = sum_c Q[r*ldq + c] * kscale[c] * K[j*ldk + c];
  // qscratch holds R*d floats (Q times the per-channel scales).
  void (*scores_i8)(const float* Q, int R, size_t ldq, const int8_t* K, int T, size_t ldk,
                    const float* kscale, int d, float* qscratch, float* S, size_t lds);
  // accumulate with int8 values: A[r*lda + c] += sum_j P[r*ldp + j] * vscale[j] * V[j*ldv + c];
  // pscratch holds T floats.
  void (*accumulate_i8)(float* A, int R, size_t lda, const float* P, size_t ldp, const int8_t* V,
                        int T, size_t ldv, const float* vscale, int d, float* pscratch);
  // y[i] = exp(x[i] - sub) (0 for x[i] = -inf); returns the sum of y.
  float (*exp_sum)(const float* x, float sub, float* y, int n);
  // y[i] = x[i] * (per ? per[i] : s).
  void (*i8_to_f32)(const int8_t* x, const float* per, float s, float* y, int n);
  // g[i] = gelu_tanh(g[i]) * u[i] (ggml's fp16-table GELU)   /   g[i] = silu(g[i]) * u[i].
  void (*gelu_mul)(float* g, const float* u, int n);
  void (*silu_mul)(float* g, const float* u, int n);
  // y[i] = x[i] * s * w[i]   (RMSNorm's scale-and-weight step; w may be null).
  void (*scale_mul)(const float* x, float s, const float* w, float* y, int n);
  // y[i] += x[i]
  void (*add)(float* y, const float* x, int n);
};

// Whether every entry of k is set (tables use designated initializers; see kernel_table.h's
// kernel_table_gaps() for why a test, tests/kernels/quant_dot_test.cpp, asserts it, not a
// static_assert).
constexpr bool complete(const Kernels& k) {
  return k.scores != nullptr && k.accumulate != nullptr && k.scores_i8 != nullptr &&
         k.accumulate_i8 != nullptr && k.exp_sum != nullptr && k.i8_to_f32 != nullptr &&
         k.gelu_mul != nullptr && k.silu_mul != nullptr && k.scale_mul != nullptr &&
         k.add != nullptr;
}

const Kernels& vec_kernels();
const Kernels& vec_kernels_scalar();

}  // namespace vsynth::kernels::vec
