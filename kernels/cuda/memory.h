// Device memory and the handles around it, all RAII (move-only; destructors never throw):
//
//   DeviceArena  one cudaMalloc'd region carved by a bump allocator, with the bytes of each
//                named purpose ("weights", "kv", "scratch") accounted and reported. The engine
//                takes weights, KV blocks and activation scratch from arenas sized at load time,
//                so a step never allocates and running out is one clear error at load.
//   Stream       a non-blocking stream (does not synchronise with the legacy default stream)
//   Event        a timing event (cudaEventDefault) or a plain sync point
//   PinnedBuffer page-locked host memory: asynchronous copies and graph memcpy nodes need it
//   GraphExec    an instantiated CUDA graph (a captured decode step)
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace vsynth::kernels::cuda {

class DeviceArena {
 public:
  DeviceArena() = default;
  // Reserves `capacity` bytes on the current device (CudaError naming the request, the purpose
  // and the device's free memory when that fails).
  DeviceArena(size_t capacity, std::string name);
  ~DeviceArena();
  DeviceArena(DeviceArena&& o) noexcept;
  DeviceArena& operator=(DeviceArena&& o) noexcept;
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // `bytes` from the arena, aligned to 256 bytes (what cudaMalloc guarantees, enough for any
  // vector load). Throws CudaError when the arena is full, with its accounting.
  void* allocate(size_t bytes, const std::string& purpose);
  template <typename T>
  T* allocate_n(size_t n, const std::string& purpose) {
    return static_cast<T*>(allocate(n * sizeof(T), purpose));
  }

  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }
  // Bytes handed out per purpose (alignment padding included).
  const std::map<std::string, size_t>& by_purpose() const { return by_purpose_; }
  // "weights 291.2 MiB, kv 64.0 MiB, scratch 12.5 MiB; 367.7 of 400.0 MiB used"
  std::string report() const;

 private:
  void release() noexcept;
  std::string name_;
  std::byte* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
  std::map<std::string, size_t> by_purpose_;
};

// `n_` bytes at `p_` owned alone (moved, never copied) and given back with Free: what
// DeviceBuffer (cudaFree) and PinnedBuffer (cudaFreeHost) share; they allocate.
template <cudaError_t (*Free)(void*)>
class OwnedBytes {
 public:
  OwnedBytes() = default;
  ~OwnedBytes() {
    if (p_ != nullptr) Free(p_);
  }
  OwnedBytes(OwnedBytes&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  OwnedBytes& operator=(OwnedBytes&& o) noexcept {
    if (this != &o) {
      if (p_ != nullptr) Free(p_);
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  OwnedBytes(const OwnedBytes&) = delete;
  OwnedBytes& operator=(const OwnedBytes&) = delete;
  void* data() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t size() const { return n_; }

 protected:
  explicit OwnedBytes(size_t bytes) : n_(bytes) {}
  void* p_ = nullptr;
  size_t n_ = 0;
};

// One cudaMalloc'd buffer (per-sequence block tables and logits: allocated when a sequence is
// made, freed with it).
class DeviceBuffer : public OwnedBytes<cudaFree> {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, const char* purpose);
};

class Stream {
 public:
  Stream();  // on the current device
  ~Stream();
  Stream(Stream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void synchronize() const;

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s);
  void synchronize() const;
  // Milliseconds from `start` to this event (both recorded and complete).
  float elapsed_ms_since(const Event& start) const;

 private:
  cudaEvent_t e_ = nullptr;
};

class PinnedBuffer : public OwnedBytes<cudaFreeHost> {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes);
};

class GraphExec {
 public:
  GraphExec() = default;
  ~GraphExec();
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  bool ready() const { return exec_ != nullptr; }
  // Ends the capture begun with cudaStreamBeginCapture on `s` and instantiates it.
  void end_capture(cudaStream_t s);
  void launch(cudaStream_t s) const;
  void reset() noexcept;

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace vsynth::kernels::cuda
