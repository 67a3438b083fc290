// Arena: owns every byte a job produces downstream of its source.
//
// Stages write text once (a prompt, a candidate, a compiler message) and hand out
// std::string_views into it; views stay valid for the arena's lifetime because chunks are
// never moved or freed before the arena is. Appends are thread-safe (an async validator may
// store output while another facet is read), reads need no lock.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace vsynth::graph {

class Arena {
 public:
  explicit Arena(std::size_t chunk_bytes = 4096) : chunk_bytes_(chunk_bytes) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Copies `text` into the arena; the returned view is stable until the arena dies.
  std::string_view store(std::string_view text);

  // Total bytes stored (not counting chunk slack).
  std::size_t bytes() const;

 private:
  char* allocate(std::size_t n);  // caller holds mu_

  std::size_t chunk_bytes_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  std::size_t used_ = 0;      // bytes used in the last chunk
  std::size_t capacity_ = 0;  // size of the last chunk
  std::size_t total_ = 0;
};

}  // namespace vsynth::graph
