#include "kernels/gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/gguf/reader.h"

namespace vsynth::kernels {

namespace {
[[noreturn]] void fail(const std::filesystem::path& path, const char* what, int err) {
  throw GgufError("gguf: " + path.string() + ": cannot " + what + ": " + std::strerror(err));
}

// Closes the descriptor on every path out of the constructor.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) fail(path, "open", errno);
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) fail(path, "stat", errno);
  if (!S_ISREG(st.st_mode)) {
    throw GgufError("gguf: " + path.string() + ": not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0) return;  // the parser reports the empty file with the usual message
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) fail(path, "mmap", errno);
  data_ = static_cast<const std::byte*>(p);
}

MappedFile::~MappedFile() {
  release();
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::drop_pages(std::span<const std::byte> range) const noexcept {
  if (data_ == nullptr || range.data() < data_ || range.data() + range.size() > data_ + size_) {
    return;
  }
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto lo = reinterpret_cast<std::uintptr_t>(range.data());
  const auto hi = lo + range.size();
  const std::uintptr_t first = (lo + page - 1) / page * page, last = hi / page * page;
  if (first >= last) return;
  // Read-only MAP_PRIVATE pages never written stay backed by the file: dropping them loses
  // nothing. Failure only means they stay resident.
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void MappedFile::release() noexcept {
  if (data_ != nullptr) {
    // munmap takes a non-const pointer; the mapping was created read-only and is never written.
    ::munmap(const_cast<std::byte*>(data_), size_);
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace vsynth::kernels
