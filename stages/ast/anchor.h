// Anchoring: where a cursor sits in a parsed file, in the terms later stages need: the
// smallest named node at the cursor, the enclosing function/method and class/struct/impl, every
// enclosing scope, the module (and its package), the imports visible there, and the identifiers
// used near the cursor within the enclosing function, nearest first.
//
// Cursor convention: a cursor sits *between* bytes. Cursor::at(row, column) is 0-based with
// the column counted in bytes, tree-sitter's own convention; Cursor::at_one_based(line,
// column) takes editor-style 1-based numbers (column still in bytes); Cursor::at_byte(offset)
// is a 0-based byte offset. The end of a line (column == its length) and the end of the file
// (offset == size) are valid cursors. Anything outside throws AstError naming the file, the
// cursor in the caller's own convention and the valid range.
//
// Which node is "at" the cursor: the deepest node that contains it (start <= cursor < end);
// when the cursor sits right after an identifier (`foo|(` or `obj.na|`) the identifier wins,
// since that is the word being typed; when it sits right after a node and before whitespace
// (end of a line) that node counts, unless the node ended with the previous row. In Python,
// where a block's node stops at its last statement, a cursor on a blank line that the tree
// leaves outside the block belongs by indentation to the definitions (on the path to the last
// code above it) whose header line is indented less than the cursor's column; the smallest node
// is still the one the tree puts there (a class block, the module).
//
// Everything returned points into the ParsedFile (TSNodes, string_views into its source): it
// is valid until that file is edited or destroyed.
#pragma once

#include <tree_sitter/api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stages/ast/parsed_file.h"

namespace vsynth::stages::ast {

class Cursor {
 public:
  static Cursor at(uint32_t row, uint32_t column) { return Cursor(Kind::Point, row, column, 0); }
  // Throws AstError when line or column is 0.
  static Cursor at_one_based(uint32_t line, uint32_t column);
  static Cursor at_byte(uint32_t offset) { return Cursor(Kind::Byte, 0, 0, offset); }

  // The byte offset in `file`; throws AstError (file, cursor, valid range) when outside.
  uint32_t resolve(const ParsedFile& file) const;
  // "line 3, column 5 (1-based)", "row 2, column 4 (0-based)", "byte offset 120".
  std::string describe() const;

 private:
  enum class Kind { Point, OneBased, Byte };
  Cursor(Kind kind, uint32_t row, uint32_t column, uint32_t byte)
      : kind_(kind), row_(row), column_(column), byte_(byte) {}
  Kind kind_;
  uint32_t row_, column_;  // as the caller gave them (1-based for OneBased)
  uint32_t byte_;
};

struct Span {
  uint32_t start_byte = 0, end_byte = 0;
  TSPoint start{}, end{};  // 0-based row, byte column
};

struct NodeInfo {
  TSNode node{};          // in the file's tree
  std::string_view type;  // grammar node type ("function_definition"); static storage
  std::string_view name;  // what it defines or imports; "" when anonymous or not applicable
  Span span;
};

enum class ScopeKind { Function, Class, Namespace };
const char* to_string(ScopeKind kind);

struct Scope {
  ScopeKind kind = ScopeKind::Function;
  NodeInfo info;
};

struct Reference {
  std::string_view name;  // the identifier's text
  std::string_view type;  // "identifier", "field_identifier", ...
  Span span;              // its occurrence nearest the cursor
  uint32_t distance = 0;  // bytes between the cursor and that occurrence; 0 when touching
};

struct Anchor {
  uint32_t byte = 0;  // the resolved cursor
  TSPoint point{};
  NodeInfo node;                            // smallest named node at the cursor
  std::optional<NodeInfo> function;         // innermost enclosing function/method/lambda
  std::optional<NodeInfo> enclosing_class;  // innermost class/struct/impl/trait; for a Go
                                            // method with no such node, its receiver type
  NodeInfo module;                          // the root; name = declared package, if any
  std::vector<Scope> scopes;                // every enclosing definition, innermost first
  // Imports visible at the cursor, in source order: those outside every function, class and
  // namespace (including under #ifdef, `if`, `try`), plus those inside the ones enclosing the
  // cursor. An import inside another function is left out.
  std::vector<NodeInfo> imports;
  std::vector<Reference> identifiers;  // distinct names, nearest first
};

struct AnchorOptions {
  // At most this many distinct identifiers (0: all). They are searched in the enclosing
  // function, else the enclosing class, else the whole file.
  std::size_t max_identifiers = 32;
};

Anchor anchor(const ParsedFile& file, const Cursor& cursor, const AnchorOptions& options = {});

// The name a definition node carries under `rule` (see KindRule), or "". Pass `parent` when
// known: finding it costs a walk down from the root (anonymous functions are named by it).
std::string_view definition_name(const ParsedFile& file, TSNode node, const KindRule& rule);
std::string_view definition_name(const ParsedFile& file, TSNode node, const KindRule& rule,
                                 std::optional<TSNode> parent);

}  // namespace vsynth::stages::ast
