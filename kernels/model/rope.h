// Rotary position embedding tables and their application to q/k heads.
//
// For pair i of a head (i < rope_dims / 2) at position p the angle is
//   theta = p * freq_scale * base^(-2i / rope_dims)
// computed in fp32 the way ggml does (repeated multiplication by base^(-2/rope_dims)). NEOX pairs
// element i with i + rope_dims/2 (gemma3, qwen2); NORM pairs elements 2i and 2i+1 (llama). Dims
// past rope_dims are untouched.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/model/config.h"

namespace vsynth::kernels {

class Rope {
 public:
  Rope(RopeKind kind, int32_t rope_dims, float base, float freq_scale);

  // cos/sin for positions p0 .. p0+m-1: [m][rope_dims/2] each, into the given buffers.
  void angles(int32_t p0, int32_t m, std::vector<float>& cos, std::vector<float>& sin) const;

  // Rotates n_heads heads of head_dim floats for each of m tokens in x [m][n_heads][head_dim]
  // with the tables from angles().
  void apply(float* x, int32_t m, int32_t n_heads, int32_t head_dim, const std::vector<float>& cos,
             const std::vector<float>& sin) const;

 private:
  RopeKind kind_;
  int32_t dims_;
  float base_;
  float freq_scale_;
};

}  // namespace vsynth::kernels
