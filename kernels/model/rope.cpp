#include "kernels/model/rope.h"

#include <cmath>

namespace vsynth::kernels {

Rope::Rope(RopeKind kind, int32_t rope_dims, float base, float freq_scale)
    : kind_(kind), dims_(rope_dims), base_(base), freq_scale_(freq_scale) {}

void Rope::angles(int32_t p0, int32_t m, std::vector<float>& cos, std::vector<float>& sin) const {
  // As ggml computes them (so that logits can be compared with llama.cpp closely): in fp32,
  // theta_0 = p and theta_{i+1} = theta_i * base^(-2/dims), scaled by freq_scale, cosf/sinf.
  const size_t half = static_cast<size_t>(dims_ / 2);
  const float theta_scale = std::pow(base_, -2.0f / static_cast<float>(dims_));
  cos.resize(static_cast<size_t>(m) * half);
  sin.resize(static_cast<size_t>(m) * half);
  for (int32_t t = 0; t < m; ++t) {
    float theta = static_cast<float>(p0 + t);
    for (size_t i = 0; i < half; ++i) {
      const float th = freq_scale_ * theta;
      cos[static_cast<size_t>(t) * half + i] = std::cos(th);
      sin[static_cast<size_t>(t) * half + i] = std::sin(th);
      theta *= theta_scale;
    }
  }
}

void Rope::apply(float* x, int32_t m, int32_t n_heads, int32_t head_dim,
                 const std::vector<float>& cos, const std::vector<float>& sin) const {
  const size_t half = static_cast<size_t>(dims_ / 2);
  for (int32_t t = 0; t < m; ++t) {
    const float* c = cos.data() + static_cast<size_t>(t) * half;
    const float* s = sin.data() + static_cast<size_t>(t) * half;
    for (int32_t h = 0; h < n_heads; ++h) {
      float* v = x + (static_cast<size_t>(t) * n_heads + h) * head_dim;
      if (kind_ == RopeKind::Neox) {
        for (size_t i = 0; i < half; ++i) {
          const float a = v[i], b = v[i + half];
          v[i] = a * c[i] - b * s[i];
          v[i + half] = a * s[i] + b * c[i];
        }
      } else {
        for (size_t i = 0; i < half; ++i) {
          const float a = v[2 * i], b = v[2 * i + 1];
          v[2 * i] = a * c[i] - b * s[i];
          v[2 * i + 1] = a * s[i] + b * c[i];
        }
      }
    }
  }
}

}  // namespace vsynth::kernels
