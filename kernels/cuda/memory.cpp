#include "kernels/cuda/memory.h"

#include <cstdio>
#include <utility>

#include "kernels/cuda/check.h"

namespace vsynth::kernels::cuda {

namespace {

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

constexpr size_t kAlign = 256;

}  // namespace

DeviceArena::DeviceArena(size_t capacity, std::string name) : name_(std::move(name)) {
  if (capacity == 0) return;
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, capacity);
  if (err != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw CudaError("cannot reserve " + mib(capacity) + " of device memory for " + name_ + ": " +
                    cudaGetErrorName(err) + "; the device has " + mib(free_b) + " free of " +
                    mib(total_b) +
                    " (lower context_length / kv_pool_tokens, or use kv_cache: int8)");
  }
  base_ = static_cast<std::byte*>(p);
  capacity_ = capacity;
}

DeviceArena::~DeviceArena() {
  release();
}

DeviceArena::DeviceArena(DeviceArena&& o) noexcept
    : name_(std::move(o.name_)),
      base_(std::exchange(o.base_, nullptr)),
      capacity_(std::exchange(o.capacity_, 0)),
      used_(std::exchange(o.used_, 0)),
      by_purpose_(std::move(o.by_purpose_)) {}

DeviceArena& DeviceArena::operator=(DeviceArena&& o) noexcept {
  if (this != &o) {
    release();
    name_ = std::move(o.name_);
    base_ = std::exchange(o.base_, nullptr);
    capacity_ = std::exchange(o.capacity_, 0);
    used_ = std::exchange(o.used_, 0);
    by_purpose_ = std::move(o.by_purpose_);
  }
  return *this;
}

void DeviceArena::release() noexcept {
  if (base_ != nullptr) cudaFree(base_);
  base_ = nullptr;
  capacity_ = used_ = 0;
  by_purpose_.clear();
}

void* DeviceArena::allocate(size_t bytes, const std::string& purpose) {
  const size_t padded = (bytes + kAlign - 1) / kAlign * kAlign;
  if (padded > capacity_ - used_) {
    throw CudaError("device arena '" + name_ + "' is full: " + purpose + " needs " + mib(padded) +
                    ", " + mib(capacity_ - used_) + " left (" + report() + ")");
  }
  void* p = base_ + used_;
  used_ += padded;
  by_purpose_[purpose] += padded;
  return p;
}

std::string DeviceArena::report() const {
  std::string s;
  for (const auto& [k, v] : by_purpose_) {
    if (!s.empty()) s += ", ";
    s += k + " " + mib(v);
  }
  if (!s.empty()) s += "; ";
  return s + mib(used_) + " of " + mib(capacity_) + " used";
}

DeviceBuffer::DeviceBuffer(size_t bytes, const char* purpose) : OwnedBytes(bytes) {
  if (bytes == 0) return;
  const cudaError_t err = cudaMalloc(&p_, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    p_ = nullptr;
    throw CudaError(std::string("cannot allocate ") + mib(bytes) + " of device memory for " +
                    purpose + ": " + cudaGetErrorName(err));
  }
}

Stream::Stream() {
  VSYNTH_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}
Stream::~Stream() {
  if (s_ != nullptr) cudaStreamDestroy(s_);
}
void Stream::synchronize() const {
  VSYNTH_CUDA_CHECK(cudaStreamSynchronize(s_));
}

Event::Event() {
  VSYNTH_CUDA_CHECK(cudaEventCreate(&e_));
}
Event::~Event() {
  if (e_ != nullptr) cudaEventDestroy(e_);
}
void Event::record(cudaStream_t s) {
  VSYNTH_CUDA_CHECK(cudaEventRecord(e_, s));
}
void Event::synchronize() const {
  VSYNTH_CUDA_CHECK(cudaEventSynchronize(e_));
}
float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0.0f;
  VSYNTH_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
  return ms;
}

PinnedBuffer::PinnedBuffer(size_t bytes) : OwnedBytes(bytes) {
  if (bytes > 0) VSYNTH_CUDA_CHECK(cudaMallocHost(&p_, bytes));
}

GraphExec::~GraphExec() {
  reset();
}
void GraphExec::reset() noexcept {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  exec_ = nullptr;
}
void GraphExec::end_capture(cudaStream_t s) {
  cudaGraph_t g = nullptr;
  VSYNTH_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  reset();
  const cudaError_t err = cudaGraphInstantiate(&exec_, g, 0);
  cudaGraphDestroy(g);
  VSYNTH_CUDA_CHECK(err);
}
void GraphExec::launch(cudaStream_t s) const {
  VSYNTH_CUDA_CHECK(cudaGraphLaunch(exec_, s));
}

}  // namespace vsynth::kernels::cuda
