// Helpers for the CUDA tests: skipping cleanly without a GPU, device buffers from host vectors,
// poisoned outputs, error norms.
#pragma once

#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "tests/test_skip.h"

namespace vsynth::kernels::cuda::test {

// True when a device is usable; otherwise marks the test case skipped with the reason (ctest
// reports it as skipped: tests/test_skip.h) and the caller returns: `if (!have_gpu()) return;`.
// GPU tests also carry the ctest label `gpu`, which the default suite excludes.
inline bool have_gpu() {
  static const DeviceQuery q = query_devices();
  if (q.devices.empty()) {
    vsynth::test::skip("no usable CUDA device: " + q.reason);
    return false;
  }
  return true;
}

// A device copy of a host vector, freed at scope exit.
template <typename T>
class Dev {
 public:
  explicit Dev(const std::vector<T>& h) : n_(h.size()) {
    VSYNTH_CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(1, n_) * sizeof(T)));
    if (n_ > 0) VSYNTH_CUDA_CHECK(cudaMemcpy(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  // n elements of poison: every byte 0xFF (NaN for floats), so an element a kernel forgets to
  // write shows up as NaN in the comparison.
  explicit Dev(size_t n) : n_(n) {
    VSYNTH_CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(1, n_) * sizeof(T)));
    VSYNTH_CUDA_CHECK(cudaMemset(p_, 0xFF, std::max<size_t>(1, n_) * sizeof(T)));
  }
  ~Dev() { cudaFree(p_); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  T* get() const { return static_cast<T*>(p_); }
  std::vector<T> host() const {
    VSYNTH_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> h(n_);
    if (n_ > 0) VSYNTH_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

// max |a - b| / max |b| (NaN anywhere in a: infinity, so poisoned outputs fail).
inline double rel_err(const std::vector<float>& a, const std::vector<double>& b) {
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num = std::max(num, std::fabs(a[i] - b[i]));
    den = std::max(den, std::fabs(b[i]));
  }
  return num / den;
}
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  return rel_err(a, std::vector<double>(b.begin(), b.end()));
}

// Fresh random inputs every run (the seed is printed on failure through INFO).
inline uint32_t fresh_seed() {
  static std::random_device rd;
  return rd();
}

inline std::vector<float> uniform(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace vsynth::kernels::cuda::test
