#include "kernels/tokenizer/unicode.h"

#include <algorithm>
#include <array>

namespace vsynth::kernels::unicode {

namespace {

// Run-length class table, (first code point << 3) | class, sorted.
constexpr uint32_t kRuns[] = {
#include "kernels/tokenizer/unicode_ranges.inc"
};

CpClass lookup_runs(char32_t cp) {
  // The last run whose first code point is <= cp.
  const uint32_t key = (static_cast<uint32_t>(cp) << 3) | 7u;
  const auto* it = std::upper_bound(std::begin(kRuns), std::end(kRuns), key);
  return static_cast<CpClass>(*(it - 1) & 7u);
}

// Latin-1 fast path: most code is ASCII.
const std::array<CpClass, 256>& latin1_classes() {
  static const std::array<CpClass, 256> table = [] {
    std::array<CpClass, 256> t{};
    for (char32_t c = 0; c < 256; ++c) t[c] = lookup_runs(c);
    return t;
  }();
  return table;
}

// The two tables of the GPT-2 mapping, built once.
struct Gpt2Tables {
  std::array<char32_t, 256> byte_to_cp{};
  std::array<int16_t, 324> cp_to_byte{};  // every mapped code point is < 256 + 68
};

const Gpt2Tables& gpt2_tables() {
  static const Gpt2Tables t = [] {
    Gpt2Tables g;
    g.cp_to_byte.fill(-1);
    auto printable = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = printable(b) ? static_cast<char32_t>(b) : next++;
      g.byte_to_cp[static_cast<size_t>(b)] = cp;
      g.cp_to_byte[cp] = static_cast<int16_t>(b);
    }
    return g;
  }();
  return t;
}

}  // namespace

CpClass cp_class(char32_t cp) {
  if (cp < 256) return latin1_classes()[cp];
  if (cp > 0x10FFFF) return CpClass::Unassigned;
  return lookup_runs(cp);
}

bool is_whitespace(char32_t cp) {
  // The White_Space property (PropList.txt): 25 code points.
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

char32_t decode_utf8(std::string_view s, size_t& offset) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(offset);
  size_t len = 0;
  char32_t cp = 0;
  if (b0 < 0x80) {
    ++offset;
    return b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1Fu;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0Fu;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07u;
  } else {
    ++offset;  // continuation byte or 0xF8..0xFF as a lead
    return kReplacement;
  }
  if (offset + len > s.size()) {
    ++offset;
    return kReplacement;
  }
  for (size_t i = 1; i < len; ++i) {
    const uint8_t b = byte(offset + i);
    if ((b & 0xC0) != 0x80) {
      ++offset;
      return kReplacement;
    }
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if (cp > 0x10FFFF) {
    ++offset;
    return kReplacement;
  }
  offset += len;
  return cp;
}

std::vector<char32_t> decode_utf8(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t off = 0;
  while (off < s.size()) out.push_back(decode_utf8(s, off));
  return out;
}

char32_t decode_utf8_strict(std::string_view s, size_t& offset) {
  const size_t start = offset;
  const char32_t cp = decode_utf8(s, offset);
  const size_t len = offset - start;
  // Smallest code point each length may encode; a longer form of a smaller value is overlong.
  constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (len > 1 && (cp < kMin[len] || (cp >= 0xD800 && cp <= 0xDFFF))) {
    offset = start + 1;
    return kReplacement;
  }
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  const auto put = [&](uint32_t v) { out.push_back(static_cast<char>(v)); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | (cp >> 6));
    put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  } else if (cp <= 0x10FFFF) {
    put(0xF0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3F));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  } else {
    append_utf8(out, kReplacement);
  }
}

std::string to_utf8(char32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

char32_t byte_to_gpt2(uint8_t b) {
  return gpt2_tables().byte_to_cp[b];
}

int gpt2_to_byte(char32_t cp) {
  const auto& t = gpt2_tables().cp_to_byte;
  return cp < t.size() ? t[cp] : -1;
}

}  // namespace vsynth::kernels::unicode
