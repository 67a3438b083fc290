// Small string helpers, ASCII only and locale-free: whitespace tests, trimming, lowercasing.
#pragma once

#include <string>
#include <string_view>

namespace vsynth::base {

// C's whitespace in the "C" locale: space, \t, \n, \v, \f, \r.
constexpr bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

constexpr std::string_view trim_right(std::string_view s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

constexpr std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return trim_right(s);
}

// s with A-Z made a-z; every other byte (UTF-8 included) as it was.
std::string ascii_lower(std::string_view s);

}  // namespace vsynth::base
