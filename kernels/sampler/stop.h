// Stop strings and stream hold-back for text decoded token by token.
//
// A stop string may span several tokens ("\ndef" from "\n" + "def") or end in the middle of one
// ("x = 1\n\n\nclass" where the stop is "\n\n"); the text ends right before the earliest match.
// While streaming, bytes that might still become a stop string, and an unfinished UTF-8
// sequence (a byte-fallback token emits one byte of a character), are held back until the next
// token decides them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vsynth::kernels {

// Bytes at the end of `text` that begin a UTF-8 sequence not yet complete (0 to 3). Invalid
// bytes count as complete: they will never become valid, holding them back helps no one.
std::size_t incomplete_utf8_tail(std::string_view text);

class StopStrings {
 public:
  StopStrings() = default;
  // Empty strings are ignored (they would match everywhere).
  explicit StopStrings(std::vector<std::string> stops);

  bool empty() const { return stops_.empty(); }
  const std::vector<std::string>& strings() const { return stops_; }

  struct Match {
    std::size_t pos = std::string_view::npos;  // byte offset of the match in the text
    std::size_t which = 0;                     // index into strings()
    bool found() const { return pos != std::string_view::npos; }
  };
  // The earliest match in `text` that ends after byte `old_size` (text before the newest
  // piece was already searched). Ties at one position go to the longest stop string.
  Match find(std::string_view text, std::size_t old_size) const;

  // Length of the longest suffix of `text` that is a proper prefix of some stop string: the
  // bytes a stream must hold back because the next token may complete a match.
  std::size_t partial_suffix(std::string_view text) const;

 private:
  std::vector<std::string> stops_;
  std::size_t max_len_ = 0;
};

}  // namespace vsynth::kernels
