#include "stages/validation/syntax_check.h"

#include <fmt/format.h>

#include <cstdint>

#include "stages/ast/ts_handles.h"
#include "stages/validation/error.h"

namespace vsynth::stages::validation {

namespace {

// The program as tree-sitter's reader sees it: a run of pieces.
struct Pieces {
  const std::vector<std::string_view>* pieces;

  static const char* read(void* payload, uint32_t byte, TSPoint, uint32_t* bytes_read) {
    const auto* self = static_cast<const Pieces*>(payload);
    std::size_t offset = byte;
    for (std::string_view p : *self->pieces) {
      if (offset < p.size()) {
        *bytes_read = static_cast<uint32_t>(p.size() - offset);
        return p.data() + offset;
      }
      offset -= p.size();
    }
    *bytes_read = 0;
    return "";
  }

  // The text of the row that holds byte `at`, at most `max` bytes of it.
  std::string row_text(uint32_t at, std::size_t max = 160) const {
    std::string before, after;  // the row before and after `at`
    std::size_t pos = 0;
    bool found = false;
    for (std::string_view p : *pieces) {
      for (std::size_t i = 0; i < p.size(); ++i, ++pos) {
        const char ch = p[i];
        if (pos < at) {
          if (ch == '\n')
            before.clear();
          else if (before.size() < 4096)
            before += ch;
        } else {
          found = true;
          if (ch == '\n' || after.size() >= max) return before + after;
          after += ch;
        }
      }
    }
    (void)found;
    return before + after;
  }
};

}  // namespace

SyntaxReport check_syntax(const ast::Language& language,
                          const std::vector<std::string_view>& pieces, std::string_view file_name,
                          std::size_t limit) {
  std::size_t total = 0;
  for (std::string_view p : pieces) total += p.size();
  if (total > UINT32_MAX) {
    throw ValidationError(
        fmt::format("{}: {} bytes; tree-sitter parses at most {}", file_name, total, UINT32_MAX));
  }
  ast::ParserPtr parser = ast::make_parser(language.ts(), language.name());
  Pieces input{&pieces};
  ast::TreePtr tree(
      ts_parser_parse(parser.get(), nullptr, TSInput{&input, &Pieces::read, TSInputEncodingUTF8}));
  if (!tree) throw ValidationError(fmt::format("{}: tree-sitter returned no tree", file_name));

  SyntaxReport report;
  const TSNode root = ts_tree_root_node(tree.get());
  if (!ts_node_has_error(root)) return report;
  // Walk only into subtrees flagged as holding an error (as ast::syntax_issues does).
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  struct CursorGuard {
    TSTreeCursor* c;
    ~CursorGuard() { ts_tree_cursor_delete(c); }
  } guard{&cursor};
  bool done = false;
  while (!done) {
    const TSNode node = ts_tree_cursor_current_node(&cursor);
    const bool missing = ts_node_is_missing(node);
    const bool error = !missing && std::string_view(ts_node_type(node)) == "ERROR";
    if (missing || error) {
      report.issues.push_back(ast::SyntaxIssue{missing, missing ? ts_node_type(node) : "ERROR",
                                               ts_node_start_byte(node), ts_node_end_byte(node),
                                               ts_node_start_point(node), ts_node_end_point(node)});
      if (limit != 0 && report.issues.size() >= limit) break;
    }
    if (ts_node_has_error(node) && ts_tree_cursor_goto_first_child(&cursor)) continue;
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        done = true;
        break;
      }
    }
  }
  if (report.issues.empty()) {  // has_error without a node we can name: say where the root is
    report.message = fmt::format("{}: syntax error", file_name);
    return report;
  }
  const ast::SyntaxIssue& first = report.issues.front();
  const std::string line = input.row_text(first.start_byte);
  report.message =
      fmt::format("{}:{}\n    {}\n    {}^", file_name, first.describe(), line,
                  std::string(std::min<std::size_t>(first.start.column, line.size()), ' '));
  if (report.issues.size() > 1) {
    report.message += fmt::format("\n({} more syntax issue{})", report.issues.size() - 1,
                                  report.issues.size() > 2 ? "s" : "");
  }
  return report;
}

}  // namespace vsynth::stages::validation
