// The set of task ids a results file holds, as a Bloom filter of fixed size: a 1 GB results
// file's ids fit in it as well as ten, so checking a trace against the results (is it from
// this run?) costs bounded memory. A "no" is certain; a "yes" is wrong with a probability
// that stays under 1% up to ~4 million ids (4 MiB of bits, 7 hashes).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace vsynth::cli::report {

class IdFilter {
 public:
  IdFilter();
  void add(std::string_view id);
  bool may_contain(std::string_view id) const;
  uint64_t added() const { return added_; }

 private:
  std::vector<uint64_t> bits_;  // 2^25 bits
  uint64_t added_ = 0;
};

}  // namespace vsynth::cli::report
