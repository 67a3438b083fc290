#include "kernels/cuda/gemm.h"

#include <cublas_v2.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/check.h"

namespace vsynth::kernels::cuda {

namespace {
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // cuBLAS's recommendation for Hopper
}

Gemm::Gemm(DeviceArena& arena, int64_t max_w_elems, int64_t max_x_elems)
    : wcap_(max_w_elems), xcap_(max_x_elems) {
  wbuf_ = arena.allocate_n<uint16_t>(static_cast<size_t>(max_w_elems), "gemm fp16 weights");
  xbuf_ = arena.allocate_n<uint16_t>(static_cast<size_t>(max_x_elems), "gemm fp16 inputs");
  void* ws = arena.allocate(kWorkspaceBytes, "cublas workspace");
  cublasHandle_t h = nullptr;
  VSYNTH_CUBLAS_CHECK(cublasCreate(&h));
  handle_ = h;
  VSYNTH_CUBLAS_CHECK(cublasSetWorkspace(h, ws, kWorkspaceBytes));
  VSYNTH_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
}

Gemm::~Gemm() {
  if (handle_ != nullptr) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

void Gemm::run(const DeviceWeight& w, const float* X, int m, float* Y, cudaStream_t s) {
  if (m <= 0) return;
  if (static_cast<int64_t>(m) * w.cols > xcap_ || w.cols > wcap_) {
    throw CudaError("gemm: " + std::to_string(m) + " x " + std::to_string(w.cols) +
                    " inputs exceed the scratch of " + std::to_string(xcap_) + " fp16 values");
  }
  auto* h = static_cast<cublasHandle_t>(handle_);
  VSYNTH_CUBLAS_CHECK(cublasSetStream(h, s));
  f32_to_f16(X, static_cast<int64_t>(m) * w.cols, xbuf_, s);
  const int64_t slab = std::max<int64_t>(1, wcap_ / w.cols);
  const float alpha = 1.0f, beta = 0.0f;
  for (int64_t r0 = 0; r0 < w.rows; r0 += slab) {
    const int64_t n = std::min(slab, w.rows - r0);
    dequantize_f16(w, r0, n, wbuf_, s);
    // Column-major view: C (n x m, ldc = w.rows) = A^T (n x cols) . B (cols x m), where A is the
    // row-major slab [n][cols] seen as a cols x n column-major matrix and B is X [m][cols].
    VSYNTH_CUBLAS_CHECK(
        cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), m, static_cast<int>(w.cols),
                     &alpha, wbuf_, CUDA_R_16F, static_cast<int>(w.cols), xbuf_, CUDA_R_16F,
                     static_cast<int>(w.cols), &beta, Y + r0, CUDA_R_32F, static_cast<int>(w.rows),
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace vsynth::kernels::cuda
