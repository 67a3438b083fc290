#include "kernels/model/rope.h"

#include <cmath>

namespace vsynth::kernels {

Rope::Rope(RopeKind kind, int32_t rope_dims, float base, float freq_scale)
    : kind_(kind), dims_(rope_dims) {
  inv_freq_.resize(static_cast<size_t>(rope_dims / 2));
  for (int32_t i = 0; i < rope_dims / 2; ++i) {
    inv_freq_[static_cast<size_t>(i)] =
        static_cast<double>(freq_scale) *
        std::pow(static_cast<double>(base), -2.0 * i / static_cast<double>(rope_dims));
  }
}

void Rope::angles(int32_t p0, int32_t m, std::vector<float>& cos, std::vector<float>& sin) const {
  const size_t half = inv_freq_.size();
  cos.resize(static_cast<size_t>(m) * half);
  sin.resize(static_cast<size_t>(m) * half);
  for (int32_t t = 0; t < m; ++t) {
    const double p = static_cast<double>(p0 + t);
    for (size_t i = 0; i < half; ++i) {
      const double th = p * inv_freq_[i];
      cos[static_cast<size_t>(t) * half + i] = static_cast<float>(std::cos(th));
      sin[static_cast<size_t>(t) * half + i] = static_cast<float>(std::sin(th));
    }
  }
}

void Rope::apply(float* x, int32_t m, int32_t n_heads, int32_t head_dim,
                 const std::vector<float>& cos, const std::vector<float>& sin) const {
  const size_t half = inv_freq_.size();
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
