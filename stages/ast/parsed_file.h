// ParsedFile: one source file's text and its tree-sitter tree, kept in step under edits.
//
// Positions follow tree-sitter: bytes are 0-based offsets into the UTF-8 source; a TSPoint is a
// 0-based row and a 0-based column counted in bytes (not characters) from the start of the row.
// Rows end at '\n' ("\r\n" leaves the '\r' as the row's last column).
//
// An edit (apply_edit) tells the old tree what changed (ts_tree_edit with exact byte and point
// coordinates) and re-parses with it, so tree-sitter reuses every untouched subtree. TSNodes
// taken from the file before an edit are invalid afterwards; take them again from root().
// A new version can also be made from a file left untouched (the next-version constructor):
// that is what a cache shared between requests does, since other requests still read the old
// version's tree.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stages/ast/language.h"
#include "stages/ast/ts_handles.h"

namespace vsynth::stages::ast {

// The single edit that turns one text into another: bytes [start, old_end) of the old text
// become bytes [start, new_end) of the new one. Found as the common prefix and the common
// suffix (they never overlap), so a one-line change gives a one-line edit.
struct TextEdit {
  uint32_t start = 0, old_end = 0, new_end = 0;
  bool empty() const { return start == old_end && start == new_end; }
};
TextEdit diff_texts(std::string_view old_text, std::string_view new_text);

class ParsedFile {
 public:
  // Parses `source` as `language`. `path` is only used in messages. Throws AstError when the
  // source is over 4 GiB or tree-sitter gives no tree.
  ParsedFile(std::string path, const Language& language, std::string source);
  // The language from the path's extension (Language::for_path; throws for an unknown one).
  static ParsedFile from_path(std::string path, std::string source);
  // The next version of `base` (same path and language) with text `source`, parsed
  // incrementally from a copy of base's tree edited by diff_texts(base.source(), source):
  // subtrees outside the edit are shared, not re-parsed. `base` is not changed (its tree may
  // be read by other threads meanwhile). `edit`, when given, receives the edit applied.
  ParsedFile(const ParsedFile& base, std::string source, TextEdit* edit = nullptr);

  ParsedFile(ParsedFile&&) noexcept = default;
  ParsedFile& operator=(ParsedFile&&) noexcept = default;

  const std::string& path() const { return path_; }
  const Language& language() const { return *language_; }
  std::string_view source() const { return source_; }
  const TSTree* tree() const { return tree_.get(); }
  TSNode root() const { return ts_tree_root_node(tree_.get()); }

  // The source text a node spans (a view into source(); valid until the next edit).
  std::string_view text(TSNode node) const;
  // True when the tree holds an ERROR or MISSING node anywhere.
  bool has_errors() const;

  // Rows: a file of N '\n' has N + 1 rows (the last may be empty).
  uint32_t row_count() const { return static_cast<uint32_t>(row_starts_.size()); }
  // Bytes in row `row`, without its '\n'. Precondition: row < row_count().
  uint32_t row_length(uint32_t row) const;
  // Byte offset -> point. Precondition: byte <= source().size().
  TSPoint point_at(uint32_t byte) const;
  // Point -> byte offset. Throws AstError (file, point, valid range) when the row or column is
  // outside the file.
  uint32_t byte_at(TSPoint point) const;

  // Replaces source bytes [start_byte, old_end_byte) with `new_text` and re-parses
  // incrementally. Returns the ranges of the new tree whose syntactic structure changed
  // (ts_tree_get_changed_ranges): what a caller must re-examine. Throws AstError naming the
  // file, the bad range and the valid one when the range is outside the source or reversed.
  std::vector<TSRange> apply_edit(uint32_t start_byte, uint32_t old_end_byte,
                                  std::string_view new_text);

 private:
  void index_rows();
  void parse(const TSTree* old_tree);

  std::string path_;
  const Language* language_;
  std::string source_;
  std::vector<uint32_t> row_starts_;  // byte offset of each row's first byte
  ParserPtr parser_;
  TreePtr tree_;
};

// True when `tree` holds an ERROR or MISSING node anywhere (validation's syntax check).
bool has_errors(const TSTree* tree);

}  // namespace vsynth::stages::ast
