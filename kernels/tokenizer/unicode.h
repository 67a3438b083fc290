// Unicode helpers for the tokenizers: UTF-8 decoding the way llama.cpp does it, a coarse
// general-category class per code point, White_Space, and GPT-2's byte <-> code point mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vsynth::kernels::unicode {

// Coarse general category, the grouping regexes use for \p{N}, \p{L}, \p{Z}, \p{M}, \p{P},
// \p{S}, \p{C}. Numbers are fixed by scripts/gen_unicode_tables.py.
enum class CpClass : uint8_t {
  Unassigned = 0,   // Cn
  Number = 1,       // Nd Nl No
  Letter = 2,       // Lu Ll Lt Lm Lo
  Separator = 3,    // Zs Zl Zp
  Mark = 4,         // Mn Mc Me
  Punctuation = 5,  // Pc Pd Ps Pe Pi Pf Po
  Symbol = 6,       // Sm Sc Sk So
  Control = 7,      // Cc Cf Cs Co
};

inline constexpr char32_t kReplacement = 0xFFFD;

// Class of a code point (Unassigned above U+10FFFF).
CpClass cp_class(char32_t cp);
inline bool is_letter(char32_t cp) {
  return cp_class(cp) == CpClass::Letter;
}
inline bool is_number(char32_t cp) {
  return cp_class(cp) == CpClass::Number;
}

// Unicode White_Space property (what \s means in the tokenizers' regexes).
bool is_whitespace(char32_t cp);

// Bytes in the UTF-8 sequence a lead byte announces, from its high nibble only (1 for ASCII and
// stray continuation bytes, 2 for 0xC0-0xDF, 3 for 0xE0-0xEF, 4 for 0xF0-0xFF). SentencePiece
// splitting uses this unchecked length, like llama.cpp, so invalid input splits the same way.
inline size_t utf8_lead_len(uint8_t lead) {
  constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

// Decodes the code point at `offset` and advances past it. A malformed sequence (bad lead byte,
// missing continuation byte, value above U+10FFFF) yields U+FFFD and advances by one byte.
// Overlong forms and surrogates are accepted as llama.cpp accepts them.
char32_t decode_utf8(std::string_view s, size_t& offset);
std::vector<char32_t> decode_utf8(std::string_view s);

// The same with the Unicode standard's well-formedness rules (what Python and Rust decode):
// overlong forms, surrogates and values above U+10FFFF are malformed too, each malformed byte
// one U+FFFD.
char32_t decode_utf8_strict(std::string_view s, size_t& offset);

void append_utf8(std::string& out, char32_t cp);
std::string to_utf8(char32_t cp);

// GPT-2 byte-level BPE alphabet: every byte maps to a printable code point (printable Latin-1
// bytes to themselves, the other 68 to U+0100.. in byte order).
char32_t byte_to_gpt2(uint8_t b);
// The byte a GPT-2 alphabet code point stands for, or -1.
int gpt2_to_byte(char32_t cp);

}  // namespace vsynth::kernels::unicode
