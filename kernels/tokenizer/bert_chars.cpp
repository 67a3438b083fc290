#include "kernels/tokenizer/bert_chars.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace vsynth::kernels::bert {

namespace {

struct CpRange {
  char32_t first, last;  // inclusive
};
// cp -> Pool[offset .. offset + len)
struct CpMapping {
  char32_t cp;
  uint32_t offset, len;
};
// [first, last] -> value
struct CpValue {
  char32_t first, last;
  uint8_t value;
};

#include "kernels/tokenizer/bert_tables.inc"

template <size_t N>
bool in_ranges(const CpRange (&ranges)[N], char32_t cp) {
  // The last range whose first code point is <= cp.
  const auto* it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                    [](char32_t c, const CpRange& r) { return c < r.first; });
  return it != std::begin(ranges) && cp <= (it - 1)->last;
}

template <size_t N>
uint8_t value_in(const CpValue (&runs)[N], char32_t cp) {
  const auto* it = std::upper_bound(std::begin(runs), std::end(runs), cp,
                                    [](char32_t c, const CpValue& r) { return c < r.first; });
  return it != std::begin(runs) && cp <= (it - 1)->last ? (it - 1)->value : uint8_t{0};
}

template <size_t N, size_t M>
bool append_mapped(const CpMapping (&map)[N], const char32_t (&pool)[M], char32_t cp,
                   std::u32string& out) {
  const auto* it = std::lower_bound(std::begin(map), std::end(map), cp,
                                    [](const CpMapping& m, char32_t c) { return m.cp < c; });
  if (it == std::end(map) || it->cp != cp) return false;
  out.append(pool + it->offset, it->len);
  return true;
}

// Hangul syllables decompose algorithmically (the Unicode standard, section 3.12), so the table
// leaves their 11172 code points out.
constexpr char32_t kHangulFirst = 0xAC00, kHangulLast = 0xD7A3;

}  // namespace

bool is_removed(char32_t cp) {
  return in_ranges(kBertRemoved, cp);
}
bool is_clean_space(char32_t cp) {
  return in_ranges(kBertSpace, cp);
}
bool is_chinese(char32_t cp) {
  return in_ranges(kBertChinese, cp);
}
bool is_punct(char32_t cp) {
  return in_ranges(kBertPunct, cp);
}
bool is_split_space(char32_t cp) {
  return in_ranges(kBertSplitSpace, cp);
}

void append_nfd(char32_t cp, std::u32string& out) {
  if (cp >= kHangulFirst && cp <= kHangulLast) {
    const char32_t s = cp - kHangulFirst;  // 19 leads x 21 vowels x 28 tails (0: none)
    out.push_back(0x1100 + s / 588);
    out.push_back(0x1161 + (s % 588) / 28);
    if (s % 28 != 0) out.push_back(0x11A7 + s % 28);
    return;
  }
  if (!append_mapped(kBertNfd, kBertNfdPool, cp, out)) out.push_back(cp);
}

uint8_t combining_class(char32_t cp) {
  return cp < 0x300 ? uint8_t{0} : value_in(kBertCcc, cp);
}

bool is_nonspacing(char32_t cp) {
  return in_ranges(kBertNonspacing, cp);
}

void append_lower(char32_t cp, std::u32string& out) {
  if (!append_mapped(kBertLower, kBertLowerPool, cp, out)) out.push_back(cp);
}

}  // namespace vsynth::kernels::bert
