#include "kernels/cpu/huge_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace vsynth::kernels {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;  // x86-64's transparent huge page: 2 MiB

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// The bytes a buffer of n maps.
size_t mapped_bytes(size_t n) {
  return round_up(n, static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
}

}  // namespace

bool huge_pages_wanted(std::string_view env_value) {
  if (env_value.empty() || env_value == "1") return true;
  if (env_value == "0") return false;
  throw std::invalid_argument(
      "VSYNTH_HUGE_PAGES='" + std::string(env_value) +
      "' is not valid; use 1 (the default: huge pages for the regrouped weights) or "
      "0 (small pages)");
}

HugeBuffer HugeBuffer::allocate(size_t bytes, bool huge_pages) {
  HugeBuffer b;
  if (bytes == 0) return b;
  const size_t mapped = mapped_bytes(bytes);
  // Phase 1: map 2 MiB more than needed, then unmap the head before the first 2 MiB boundary
  // and the tail past the buffer, leaving `mapped` bytes that start on a boundary.
  void* raw = ::mmap(nullptr, mapped + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start, kHugePage);
  if (aligned > start) ::munmap(raw, aligned - start);
  const uintptr_t end = start + mapped + kHugePage;
  if (end > aligned + mapped) {
    ::munmap(reinterpret_cast<void*>(aligned + mapped), end - (aligned + mapped));
  }
  b.data_ = reinterpret_cast<std::byte*>(aligned);
  b.size_ = bytes;
  // Phase 2: the advice, before any page is touched, so that the first write of each 2 MiB
  // faults in a huge page (a partial last 2 MiB keeps small pages). Failure is not an error:
  // the memory works the same with small pages.
  if (huge_pages && mapped >= kHugePage) {
    b.advised_ = ::madvise(b.data_, mapped, MADV_HUGEPAGE) == 0;
  }
  return b;
}

HugeBuffer::~HugeBuffer() {
  release();
}

HugeBuffer::HugeBuffer(HugeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      advised_(std::exchange(other.advised_, false)) {}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    advised_ = std::exchange(other.advised_, false);
  }
  return *this;
}

void HugeBuffer::release() noexcept {
  if (data_ != nullptr) ::munmap(data_, mapped_bytes(size_));
  data_ = nullptr;
  size_ = 0;
  advised_ = false;
}

}  // namespace vsynth::kernels
