// Whole-vocabulary reductions for the sampler: SSE2 loops (every x86-64 CPU) with fixed-width
// blocks and no libm calls, and on the SIMD CPU paths the same arithmetic lane by lane on 8-lane
// AVX2, so the results have the same bits everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vsynth::kernels::sampler_math {

// exp(x) for x <= 0 (clamped at -87, where it is ~1e-38), relative error < 2e-7: 2^(x log2 e)
// split into 2^n (exponent bits) times a degree-6 polynomial for 2^f, f in [-0.5, 0.5].
float exp_nonpos(float x);

// max over x[0, n); -inf for n == 0. NaNs are ignored.
float max_of(const float* x, std::size_t n);

// The first i with x[i] == v, or n when there is none (v not NaN).
std::size_t first_index_of(const float* x, std::size_t n, float v);

// sum over i of exp((x[i] - shift) * scale) for x[i] <= shift, scale > 0; -inf entries add 0.
double sum_exp(const float* x, std::size_t n, float shift, float scale);

struct Scored {
  float logit;
  int32_t id;
};
// Scored order: higher logit first, then lower id.
inline bool better(const Scored& a, const Scored& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// The k best entries of x[0, n) in Scored order (best first) into `out`; -inf and NaN skipped.
// One pass with a k-entry heap; SSE2 compares eight logits at a time against the heap's worst,
// so only the few that beat it are touched.
void top_k(const float* x, std::size_t n, std::size_t k, std::vector<Scored>& out);

// Entries of x[0, n) that are neither -inf nor NaN.
std::size_t count_finite(const float* x, std::size_t n);

}  // namespace vsynth::kernels::sampler_math
