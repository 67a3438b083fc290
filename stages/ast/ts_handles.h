// RAII owners for tree-sitter's C objects (TSParser, TSTree, TSQuery, TSQueryCursor): each is
// a move-only unique_ptr with the matching ts_*_delete, so no path leaks or double-frees them.
#pragma once

#include <tree_sitter/api.h>

#include <memory>
#include <string_view>

namespace vsynth::stages::ast {

struct ParserDeleter {
  void operator()(TSParser* p) const noexcept { ts_parser_delete(p); }
};
struct TreeDeleter {
  void operator()(TSTree* t) const noexcept { ts_tree_delete(t); }
};
struct QueryDeleter {
  void operator()(TSQuery* q) const noexcept { ts_query_delete(q); }
};
struct QueryCursorDeleter {
  void operator()(TSQueryCursor* c) const noexcept { ts_query_cursor_delete(c); }
};

using ParserPtr = std::unique_ptr<TSParser, ParserDeleter>;
using TreePtr = std::unique_ptr<TSTree, TreeDeleter>;
using QueryPtr = std::unique_ptr<TSQuery, QueryDeleter>;
using QueryCursorPtr = std::unique_ptr<TSQueryCursor, QueryCursorDeleter>;

// A parser already set to `language`. Throws AstError when the library refuses the grammar
// (its ABI version is outside what the linked libtree-sitter loads), naming both versions.
ParserPtr make_parser(const TSLanguage* language, std::string_view language_name);

// A compiled query. Throws AstError naming the language, the byte offset into `source`, the
// kind of error (syntax, unknown node type, field, capture, structure) and the offending text.
QueryPtr make_query(const TSLanguage* language, std::string_view language_name,
                    std::string_view source);

// A deep copy of a tree (cheap: tree-sitter trees share their nodes by reference count), e.g.
// to keep the pre-edit tree for ts_tree_get_changed_ranges.
TreePtr copy_tree(const TSTree* tree);

}  // namespace vsynth::stages::ast
