#include "graph/arena.h"

#include <algorithm>
#include <cstring>

namespace vsynth::graph {

char* Arena::allocate(std::size_t n) {
  if (chunks_.empty() || capacity_ - used_ < n) {
    // Large texts get a chunk of their own so small ones do not waste the slack.
    const std::size_t size = std::max(n, chunk_bytes_);
    chunks_.push_back(std::make_unique<char[]>(size));
    capacity_ = size;
    used_ = 0;
  }
  char* p = chunks_.back().get() + used_;
  used_ += n;
  total_ += n;
  return p;
}

std::string_view Arena::store(std::string_view text) {
  if (text.empty()) return {};
  std::lock_guard lock(mu_);
  char* p = allocate(text.size());
  std::memcpy(p, text.data(), text.size());
  return {p, text.size()};
}

std::size_t Arena::bytes() const {
  std::lock_guard lock(mu_);
  return total_;
}

}  // namespace vsynth::graph
