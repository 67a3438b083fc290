// Source positions for spec errors: 1-based line/column, a caret line, and "did you mean".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "solvers/error.h"

namespace vsynth::solvers {

// A SpecError whose message reads
//   "<prefix>: <message> at column C; <hint>\n  <source line>\n  <spaces>^"
// (with "line L, column C" when the text has several lines). `offset` is a byte offset into
// `text`; `hint` may be empty.
SpecError spec_error(std::string_view prefix, std::string_view message, std::string_view text,
                     size_t offset, std::string_view hint = {});

// The candidate closest to `name` by edit distance (transpositions count once), if it is close
// enough to be a plausible typo; empty otherwise.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace vsynth::solvers
