// Which CUDA devices this process can use, and what they are. Never throws: with no driver, no
// device or a broken install the query reports zero devices and why, so `device: auto` can fall
// back to the CPU and `device: cuda` can say exactly what is missing.
//
//   DeviceQuery q = query_devices();
//   if (q.devices.empty()) std::puts(q.reason.c_str());   // "no CUDA device: ..."
//   int dev = require_device(-1);   // the first device, or CudaError with the reason
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vsynth::kernels::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;  // "NVIDIA H200"
  int sm_major = 0;  // compute capability, 9.0 for Hopper
  int sm_minor = 0;
  int sm_count = 0;         // streaming multiprocessors
  int64_t total_bytes = 0;  // device memory
  int64_t free_bytes = 0;   // free at query time
  int64_t l2_bytes = 0;
  int memory_bus_bits = 0;
  int64_t shared_per_block_optin = 0;  // bytes of shared memory a block may opt into
};

struct DeviceQuery {
  std::vector<DeviceInfo> devices;
  int driver_version = 0;   // e.g. 13000; 0 when no driver is installed
  int runtime_version = 0;  // the CUDA runtime this build links
  std::string reason;       // why `devices` is empty ("" when it is not)
};

// Queries the driver on every call. Reading free memory creates each device's primary context
// (a few hundred MiB of device memory and ~0.1 s per device, once per process).
DeviceQuery query_devices();

// One line per device ("cuda:0 NVIDIA H200, sm_90, 132 SMs, 139.8 GiB (139.2 GiB free)"), or the
// reason there is none.
std::string describe(const DeviceQuery& q);

// The device to run on: `index` (>= 0) or the first one (-1). Throws CudaError naming the
// reason when there is no usable device or the index is out of range; checks that the device's
// compute capability is one this build has kernels for (sm_80 and newer).
int require_device(int index = -1);

}  // namespace vsynth::kernels::cuda
