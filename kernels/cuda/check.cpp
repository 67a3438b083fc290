#include "kernels/cuda/check.h"

#include <cublas_api.h>

namespace vsynth::kernels::cuda {

void throw_cuda_error(cudaError_t code, const char* expr, const char* file, int line) {
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + expr +
                  " failed: " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")");
}

void throw_cublas_error(int status, const char* expr, const char* file, int line) {
  const auto st = static_cast<cublasStatus_t>(status);
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + expr +
                  " failed: " + cublasGetStatusName(st) + " (" + cublasGetStatusString(st) + ")");
}

}  // namespace vsynth::kernels::cuda
