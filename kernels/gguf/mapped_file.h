// A read-only memory mapping of a whole file (RAII): the bytes stay valid until the object dies.
//
// The descriptor is closed right after mmap (the mapping keeps the file alive). A file truncated
// by someone else while it is mapped makes later reads fault (SIGBUS); model files are not
// expected to change under a running process.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

namespace vsynth::kernels {

class MappedFile {
 public:
  // Maps `path`; throws GgufError ("gguf: <path>: cannot ...: <reason>") when it cannot.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }

  // Drops the whole pages inside `range` (a part of bytes()) from this process's resident set
  // (madvise MADV_DONTNEED): for data the process will not read again, e.g. weights it copied
  // into another layout. Harmless for this read-only file mapping: a later read maps the pages
  // again from the file. Ranges outside the mapping are ignored.
  void drop_pages(std::span<const std::byte> range) const noexcept;

 private:
  void release() noexcept;

  const std::byte* data_ = nullptr;  // nullptr for an empty file (mmap of 0 bytes is invalid)
  std::size_t size_ = 0;
};

}  // namespace vsynth::kernels
