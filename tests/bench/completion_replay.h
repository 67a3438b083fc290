// The pure pieces of the completion benchmark (bench_completion.cpp): the edit session it
// replays on a real file and the quality proxy it scores completions with. No model, no
// pipeline: tests/bench/completion_replay_test.cpp pins them down.
//
// The replay: K cursor positions at the start of real statement lines (after the line's
// indentation), chosen by a seed; at each one the user types the line's first characters one
// keystroke at a time and asks for a completion after each. The file the model sees is the file
// as the user sees it then: everything before the cursor's line, the line's indentation and the
// characters typed so far (the cursor), then the rest of the file after that line. The rest of
// the real line is what a perfect completion's first line would be.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vsynth::bench {

// 1 - Levenshtein(a, b) / max(|a|, |b|) over bytes; 1 when both are empty.
double edit_similarity(std::string_view a, std::string_view b);

// The text up to its first '\n' (all of it when there is none), trailing spaces, tabs and '\r'
// removed.
std::string first_line(std::string_view text);

// Lines of `text` (0-based) where a replay may put its cursor: a statement line whose text
// after the indentation holds at least `min_chars` bytes, is not a comment (`comment`: the
// language's line-comment leader, e.g. "#" or "//"; also "/*", "*" and "*/" lines), does not
// open or continue a string or docstring (it starts with no quote), is not only closing
// brackets, and lies outside a triple-quoted block. Ascending.
std::vector<uint32_t> statement_lines(std::string_view text, std::string_view comment,
                                      uint32_t min_chars);

// `k` of `lines` (all of them when there are not k), picked by `seed` with a fixed generator
// (splitmix64), the same on every platform and standard library; ascending.
std::vector<uint32_t> pick_lines(const std::vector<uint32_t>& lines, uint32_t k, uint64_t seed);

// One completion request of the replay.
struct ReplayRequest {
  uint32_t line = 0;    // 0-based line of the cursor
  uint32_t typed = 0;   // characters typed at the line's start (after its indentation)
  std::string visible;  // the file as the user sees it (see the header)
  uint32_t cursor = 0;  // byte offset of the cursor in `visible`
  uint32_t column = 0;  // 0-based byte column of the cursor
  std::string target;   // the rest of the real line after the typed characters, trimmed
  uint32_t lines_in_file = 0;
};

// The request after `typed` keystrokes on `line` of `text`. Throws std::out_of_range when the
// line does not exist or has fewer than `typed` characters after its indentation.
ReplayRequest make_request(std::string_view text, uint32_t line, uint32_t typed);

// The naive baseline's prompt: the lines of `visible` within `radius` lines of the cursor's
// line (the cursor's line itself up to the cursor in `prefix`, the rest of it and the lines
// after it in `suffix`).
struct Window {
  std::string prefix, suffix;
};
Window line_window(std::string_view visible, uint32_t cursor, uint32_t radius);

}  // namespace vsynth::bench
