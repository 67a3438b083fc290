#include "stages/ast/syntax_errors.h"

#include <fmt/format.h>

#include <string_view>

namespace vsynth::stages::ast {

std::string SyntaxIssue::describe() const {
  if (missing) return fmt::format("{}:{}: missing `{}`", start.row + 1, start.column + 1, what);
  return fmt::format("{}:{}-{}:{}: syntax error", start.row + 1, start.column + 1, end.row + 1,
                     end.column + 1);
}

std::vector<SyntaxIssue> syntax_issues(const ParsedFile& file, std::size_t limit) {
  std::vector<SyntaxIssue> out;
  const TSNode root = file.root();
  if (!ts_node_has_error(root)) return out;
  // Deleted on every path out, including a throwing push_back.
  struct Cursor {
    TSTreeCursor c;
    ~Cursor() { ts_tree_cursor_delete(&c); }
  } owned{ts_tree_cursor_new(root)};
  TSTreeCursor& cursor = owned.c;
  bool done = false;
  while (!done) {
    const TSNode node = ts_tree_cursor_current_node(&cursor);
    const bool missing = ts_node_is_missing(node);
    const bool error = !missing && std::string_view(ts_node_type(node)) == "ERROR";
    if (missing || error) {
      out.push_back(SyntaxIssue{missing, missing ? ts_node_type(node) : "ERROR",
                                ts_node_start_byte(node), ts_node_end_byte(node),
                                ts_node_start_point(node), ts_node_end_point(node)});
      if (limit != 0 && out.size() >= limit) break;
    }
    // An ERROR node's own children may hold more issues, so descend into any flagged node.
    if (ts_node_has_error(node) && ts_tree_cursor_goto_first_child(&cursor)) continue;
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        done = true;
        break;
      }
    }
  }
  return out;
}

}  // namespace vsynth::stages::ast
