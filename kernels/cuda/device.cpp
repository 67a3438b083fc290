#include "kernels/cuda/device.h"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "kernels/cuda/check.h"

namespace vsynth::kernels::cuda {

DeviceQuery query_devices() {
  DeviceQuery q;
  cudaRuntimeGetVersion(&q.runtime_version);
  if (cudaDriverGetVersion(&q.driver_version) != cudaSuccess) q.driver_version = 0;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // the query's error is sticky for nothing else; clear it
    q.reason = std::string("no CUDA device: ") + cudaGetErrorName(err) + " (" +
               cudaGetErrorString(err) + ")" +
               (q.driver_version == 0 ? "; no NVIDIA driver is installed" : "");
    return q;
  }
  if (count == 0) {
    q.reason = "no CUDA device: the driver reports none";
    return q;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    DeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.sm_major = p.major;
    d.sm_minor = p.minor;
    d.sm_count = p.multiProcessorCount;
    d.total_bytes = static_cast<int64_t>(p.totalGlobalMem);
    d.l2_bytes = p.l2CacheSize;
    d.memory_bus_bits = p.memoryBusWidth;
    d.shared_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
    int prev = 0;
    size_t free_b = 0, total_b = 0;
    if (cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(i) == cudaSuccess &&
        cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
      d.free_bytes = static_cast<int64_t>(free_b);
    } else {
      cudaGetLastError();
    }
    cudaSetDevice(prev);
    q.devices.push_back(std::move(d));
  }
  if (q.devices.empty()) q.reason = "no CUDA device: none of the devices could be queried";
  return q;
}

std::string describe(const DeviceQuery& q) {
  if (q.devices.empty()) return q.reason;
  std::string s;
  for (const DeviceInfo& d : q.devices) {
    char line[256];
    std::snprintf(line, sizeof line, "cuda:%d %s, sm_%d%d, %d SMs, %.1f GiB (%.1f GiB free)\n",
                  d.index, d.name.c_str(), d.sm_major, d.sm_minor, d.sm_count,
                  static_cast<double>(d.total_bytes) / (1 << 30),
                  static_cast<double>(d.free_bytes) / (1 << 30));
    s += line;
  }
  return s;
}

int require_device(int index) {
  const DeviceQuery q = query_devices();
  if (q.devices.empty()) {
    throw CudaError("device: cuda was requested but " + q.reason +
                    " (use device: cpu or auto to run on the CPU)");
  }
  const int want = index < 0 ? q.devices.front().index : index;
  for (const DeviceInfo& d : q.devices) {
    if (d.index != want) continue;
    if (d.sm_major < 8) {
      throw CudaError("cuda:" + std::to_string(want) + " (" + d.name + ") has compute capability " +
                      std::to_string(d.sm_major) + "." + std::to_string(d.sm_minor) +
                      "; this build needs 8.0 or newer (sm_80, sm_90)");
    }
    return want;
  }
  throw CudaError("cuda:" + std::to_string(want) + " does not exist (" +
                  std::to_string(q.devices.size()) + " device(s): valid indices 0.." +
                  std::to_string(q.devices.size() - 1) + ")");
}

}  // namespace vsynth::kernels::cuda
