// The syntax check: tree-sitter parses the program (read in place from its pieces, no copy)
// and every ERROR or MISSING node is a syntax issue, reported with its line and column and
// the offending line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stages/ast/language.h"
#include "stages/ast/syntax_errors.h"

namespace vsynth::stages::validation {

struct SyntaxReport {
  std::vector<ast::SyntaxIssue> issues;  // outermost first, at most `limit`
  // "candidate.py:3:12: missing `)`" followed by the line and a caret under the column; the
  // first issue only (what a retry needs), plus "(N more)" when there are others. Empty when
  // the tree is clean.
  std::string message;
};

SyntaxReport check_syntax(const ast::Language& language,
                          const std::vector<std::string_view>& pieces, std::string_view file_name,
                          std::size_t limit = 16);

}  // namespace vsynth::stages::validation
