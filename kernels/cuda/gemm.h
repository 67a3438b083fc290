// Prefill GEMM: Y[m][w.rows] = X[m][w.cols] . W^T for m > kGemvMaxRows rows, on tensor cores
// through cuBLAS: X is rounded to fp16, W is dequantized to fp16 a slab of rows at a time into a
// scratch buffer (kernels/cuda/ops.h, dequantize_f16), and cublasGemmEx multiplies with fp32
// accumulation into fp32 Y. Dequantizing costs one extra pass over the weight per call, which
// prefill amortises over its m tokens; decode never comes here (gemv reads the quantized bytes).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/memory.h"
#include "kernels/cuda/ops.h"

namespace vsynth::kernels::cuda {

class Gemm {
 public:
  // Scratch from `arena`: max_w_elems fp16 for a weight slab, max_x_elems fp16 for X, and the
  // cuBLAS workspace. Call on the device the arena lives on.
  Gemm(DeviceArena& arena, int64_t max_w_elems, int64_t max_x_elems);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // m * w.cols must fit in max_x_elems (CudaError otherwise); any w.rows works (slabs).
  void run(const DeviceWeight& w, const float* X, int m, float* Y, cudaStream_t s);

 private:
  void* handle_ = nullptr;  // cublasHandle_t
  uint16_t* wbuf_ = nullptr;
  uint16_t* xbuf_ = nullptr;
  int64_t wcap_ = 0, xcap_ = 0;
};

}  // namespace vsynth::kernels::cuda
