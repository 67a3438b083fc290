// Error checking for CUDA runtime and cuBLAS calls: every failure becomes a CudaError whose
// message names the call, the file:line it was made at, and the runtime's own error name and text.
//
//   VSYNTH_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream));
//   VSYNTH_CUBLAS_CHECK(cublasGemmEx(...));
//   VSYNTH_CUDA_CHECK_LAUNCH();   // after a <<<...>>> launch: reports bad launch configurations
//
// Usable from .cpp (host compiler) and .cu (nvcc) files alike.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "kernels/model/config.h"

namespace vsynth::kernels::cuda {

// Every CUDA backend failure: a runtime or cuBLAS error (with the call and file:line), no device
// when one is required, device memory exhausted (with the arena's accounting). Derives from
// EngineError so callers of the engine API catch one type for either backend.
class CudaError : public EngineError {
 public:
  using EngineError::EngineError;
};

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* expr, const char* file, int line);
[[noreturn]] void throw_cublas_error(int status, const char* expr, const char* file, int line);

}  // namespace vsynth::kernels::cuda

#define VSYNTH_CUDA_CHECK(expr)                                                               \
  do {                                                                                        \
    const cudaError_t vsynth_cuda_err_ = (expr);                                              \
    if (vsynth_cuda_err_ != cudaSuccess) {                                                    \
      ::vsynth::kernels::cuda::throw_cuda_error(vsynth_cuda_err_, #expr, __FILE__, __LINE__); \
    }                                                                                         \
  } while (0)

// cublasStatus_t is an enum; compared as int so this header needs no cuBLAS include.
#define VSYNTH_CUBLAS_CHECK(expr)                                                                \
  do {                                                                                           \
    const int vsynth_cublas_st_ = static_cast<int>(expr);                                        \
    if (vsynth_cublas_st_ != 0) {                                                                \
      ::vsynth::kernels::cuda::throw_cublas_error(vsynth_cublas_st_, #expr, __FILE__, __LINE__); \
    }                                                                                            \
  } while (0)

// A kernel launch reports configuration errors (too many threads, too much shared memory) only
// through cudaGetLastError; execution errors surface at the next synchronising call.
#define VSYNTH_CUDA_CHECK_LAUNCH() VSYNTH_CUDA_CHECK(cudaGetLastError())
