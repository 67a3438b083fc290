// Where a tree is broken: every ERROR node (text the grammar could not place) and MISSING node
// (a token the parser invented to recover, e.g. a `;`), in source order. Validation turns them
// into messages like "main.c:3:12: missing `;`".
#pragma once

#include <tree_sitter/api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "stages/ast/parsed_file.h"

namespace vsynth::stages::ast {

struct SyntaxIssue {
  bool missing = false;  // MISSING (an absent token) rather than ERROR (unplaceable text)
  std::string what;      // missing: the absent node's type (";"); error: "ERROR"
  uint32_t start_byte = 0, end_byte = 0;
  TSPoint start{}, end{};  // 0-based row, byte column

  // "3:12: missing `;`" / "3:1-3:9: syntax error" with 1-based rows and columns, as editors
  // and compilers print them.
  std::string describe() const;
};

// At most `limit` issues (0: no limit), outermost first. Descends only into subtrees that
// tree-sitter flags as containing an error, so a clean tree costs one root check.
std::vector<SyntaxIssue> syntax_issues(const ParsedFile& file, std::size_t limit = 0);

}  // namespace vsynth::stages::ast
