#include "tools/vsynth/report/id_filter.h"

#include "base/hash.h"
#include "base/mix.h"

namespace vsynth::cli::report {

namespace {

constexpr unsigned kLogBits = 25;  // 32 Mi bits = 4 MiB
constexpr unsigned kHashes = 7;

// 64-bit FNV-1a, then split into two halves for double hashing (Kirsch-Mitzenmacher).
uint64_t fnv1a(std::string_view s) {
  // A final mix so that the two halves are independent enough for short ids.
  return base::fmix64_half(base::fnv1a64(s, base::kFnv1a64ShortOffset));
}

template <class F>
void for_each_bit(std::string_view id, F&& f) {
  const uint64_t h = fnv1a(id);
  const uint64_t a = h & 0xffffffffull, b = (h >> 32) | 1;
  for (unsigned i = 0; i < kHashes; ++i) f((a + i * b) & ((uint64_t{1} << kLogBits) - 1));
}

}  // namespace

IdFilter::IdFilter() : bits_((uint64_t{1} << kLogBits) / 64, 0) {}

void IdFilter::add(std::string_view id) {
  for_each_bit(id, [&](uint64_t bit) { bits_[bit / 64] |= uint64_t{1} << (bit % 64); });
  ++added_;
}

bool IdFilter::may_contain(std::string_view id) const {
  bool all = true;
  for_each_bit(id, [&](uint64_t bit) { all = all && (bits_[bit / 64] >> (bit % 64) & 1); });
  return all;
}

}  // namespace vsynth::cli::report
