// Anonymous memory for weights the engine streams every step (the regrouped matrices), aligned
// to 2 MiB and asked to be backed by transparent huge pages (madvise MADV_HUGEPAGE), so that a
// decode step's weight stream crosses a 2 MiB page where it would cross 512 small ones: fewer
// TLB misses, and the hardware prefetchers (which stop at a 4 KiB page boundary) run on. Where
// the kernel gives no huge pages (THP "never", no THP support) the memory is the same with
// small pages; the bytes, and so every result, are the same either way. Measured gain:
// docs/performance.md, "Weights on huge pages".
#pragma once

#include <cstddef>
#include <string_view>

namespace vsynth::kernels {

// Whether VSYNTH_HUGE_PAGES=env_value asks for huge pages (for A/B runs): empty or "1" yes, "0"
// no. Throws std::invalid_argument for any other value, naming the valid ones.
bool huge_pages_wanted(std::string_view env_value);

class HugeBuffer {
 public:
  HugeBuffer() = default;
  // `bytes` zero bytes (a fresh anonymous mapping), 2 MiB aligned; huge pages asked for when
  // huge_pages is true. Throws std::bad_alloc when the memory cannot be mapped.
  static HugeBuffer allocate(size_t bytes, bool huge_pages = true);

  ~HugeBuffer();
  HugeBuffer(HugeBuffer&& other) noexcept;
  HugeBuffer& operator=(HugeBuffer&& other) noexcept;
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  // Whether the kernel accepted the huge-page advice (false: small pages, or none asked for).
  bool advised() const { return advised_; }

 private:
  void release() noexcept;

  std::byte* data_ = nullptr;
  size_t size_ = 0;  // bytes asked for (mapped: rounded up to the page size)
  bool advised_ = false;
};

}  // namespace vsynth::kernels
