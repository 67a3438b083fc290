// Helpers shared by the quantized-kernel tests: random data, quantized matrices, CPU path loops.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_path.h"
#include "kernels/dtype.h"
#include "kernels/quant/quantize.h"

namespace vsynth::kernels::test {

inline const std::vector<DType>& all_types() {
  static const std::vector<DType> types = {DType::F32,  DType::F16,  DType::BF16,
                                           DType::Q4_0, DType::Q5_0, DType::Q8_0,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K};
  return types;
}

inline const std::vector<DType>& quant_types() {
  static const std::vector<DType> types = {DType::Q4_0, DType::Q5_0, DType::Q8_0,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K};
  return types;
}

inline std::string name_of(DType t) {
  return std::string(dtype_info(t)->name);
}

inline bool is_k_quant(DType t) {
  return t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K;
}

// Normal(0, sigma) values, with sigma itself varying per 32-element stretch (real weight rows are
// not homogeneous; uneven magnitudes exercise the per-block and per-sub-block scales).
inline std::vector<float> random_values(int64_t n, uint32_t seed, bool uneven = true) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> mag(0.05f, 2.0f);
  std::vector<float> v(static_cast<size_t>(n));
  float sigma = 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    if (uneven && i % 32 == 0) sigma = mag(rng);
    v[static_cast<size_t>(i)] = sigma * normal(rng);
  }
  return v;
}

// A rows x cols matrix quantized row by row, and its exact decoded values.
struct QuantMatrix {
  DType type;
  int64_t rows, cols;
  size_t row_bytes;
  std::vector<uint8_t> data;
  std::vector<float> decoded;  // rows * cols, what the kernels see as the weights
  std::string name;            // for WeightView::name (which only views it)
};

inline QuantMatrix make_matrix(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  QuantMatrix m{t, rows, cols, row_size(t, cols), {}, {}, "test." + name_of(t)};
  const std::vector<float> src = random_values(rows * cols, seed);
  // Pad by 32 bytes so vector loads near the end stay inside the allocation in any case.
  m.data.resize(m.row_bytes * static_cast<size_t>(rows) + 32);
  m.decoded.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(t, src.data() + r * cols, cols,
                 m.data.data() + static_cast<size_t>(r) * m.row_bytes);
    dequantize_row(t, m.data.data() + static_cast<size_t>(r) * m.row_bytes,
                   m.decoded.data() + r * cols, cols);
  }
  return m;
}

// Every CPU path this machine can run (scalar always, AVX2 when the CPU has it).
inline std::vector<CpuPath> available_paths() {
  std::vector<CpuPath> paths{CpuPath::Scalar};
  if (cpu_path_available(CpuPath::Avx2)) paths.push_back(CpuPath::Avx2);
  if (cpu_path_available(CpuPath::Avx512Vnni)) paths.push_back(CpuPath::Avx512Vnni);
  return paths;
}

// Sets a CPU path for a scope and restores the previous one.
class ScopedCpuPath {
 public:
  explicit ScopedCpuPath(CpuPath p) : saved_(active_cpu_path()) { set_cpu_path(p); }
  ~ScopedCpuPath() { set_cpu_path(saved_); }
  ScopedCpuPath(const ScopedCpuPath&) = delete;
  ScopedCpuPath& operator=(const ScopedCpuPath&) = delete;

 private:
  CpuPath saved_;
};

// Worst-case error of a quantized-domain dot product against the exact sum(w[i] * x[i]) over
// the decoded weights w and the original float input x (both in double).
//
// Weight-quantized types: the only approximation is the input's 8-bit quantization. Per block of
// B elements (B = 32 for Q4_0/Q5_0/Q8_0, 256 for the K-quants) x[i] becomes q[i] * da with
// da = max|x| / 127 and q = round(x[i] / da), so |x[i] - q[i] da| <= da / 2 (plus the rounding
// of 127 / max|x|, of x[i] times it and of the stored da, a few 127 ulp(1) * da, under 1e-4 da).
// The dot error is then at most sum over blocks of (da / 2) * sum|w[i]|. On top comes float
// rounding of the per-block terms and their sum: each term (dw * da) * isum carries ~3 roundings
// and the sum of nb terms ~nb more, bounded by (nb + 8) * 2^-23 * sum|w[i] x[i]| (generous: isum is
// exact).
//
// Float weight types: no input quantization; only float rounding of a k-term sum kept in 8-16
// partial sums, bounded by (k / 8 + 16) * 2^-23 * sum|w x| (again generous).
inline double dot_error_bound(DType t, const float* w, const float* x, int64_t k) {
  double abs_wx = 0;
  for (int64_t i = 0; i < k; ++i) abs_wx += std::fabs(static_cast<double>(w[i]) * x[i]);
  const double ulp = std::ldexp(1.0, -23);
  if (t == DType::F32 || t == DType::F16 || t == DType::BF16) {
    return (static_cast<double>(k) / 8 + 16) * ulp * abs_wx + 1e-30;
  }
  const int64_t B = is_k_quant(t) ? 256 : 32;
  double bound = 0;
  for (int64_t b = 0; b < k; b += B) {
    double amax = 0, abs_w = 0;
    for (int64_t i = b; i < b + B; ++i) {
      amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
      abs_w += std::fabs(static_cast<double>(w[i]));
    }
    bound += (amax / 127) * (0.5 + 1e-4) * abs_w;
  }
  return bound + (static_cast<double>(k / B) + 8) * ulp * abs_wx + 1e-30;
}

inline double dot_exact(const float* w, const float* x, int64_t k) {
  double s = 0;
  for (int64_t i = 0; i < k; ++i) s += static_cast<double>(w[i]) * x[i];
  return s;
}

}  // namespace vsynth::kernels::test
