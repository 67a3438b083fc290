// Small tree-sitter helpers shared by stages/context: field lookup, pre-order walks with a
// tree cursor (O(children) per level), comment detection, whitespace trimming.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <cstring>
#include <string_view>

#include "base/strings.h"

namespace vsynth::stages::context {

// The grammar's id for field `name`, remembered per (language, name pointer): tree-sitter
// finds it by comparing `name` with each field name of the grammar in turn, on every call.
// `name` must have static storage (a string literal), as every caller's has.
inline TSFieldId field_id(const TSLanguage* language, const char* name) {
  struct Entry {
    const TSLanguage* language = nullptr;
    const char* name = nullptr;
    TSFieldId id = 0;
  };
  thread_local Entry cache[64];
  const auto slot = ((reinterpret_cast<std::uintptr_t>(name) >> 2) ^
                     (reinterpret_cast<std::uintptr_t>(language) >> 4)) &
                    63u;
  Entry& e = cache[slot];
  if (e.language != language || e.name != name) {
    e = Entry{
        language, name,
        ts_language_field_id_for_name(language, name, static_cast<uint32_t>(std::strlen(name)))};
  }
  return e.id;
}

inline TSNode field(TSNode n, const char* name) {
  if (ts_node_is_null(n)) return n;
  return ts_node_child_by_field_id(n, field_id(ts_tree_language(n.tree), name));
}

// "" for a null node (an absent field): ts_node_type dereferences the node's tree, which a
// null node does not have. Callers compare the result, so absent and unmatched read alike.
inline std::string_view type_of(TSNode n) {
  if (ts_node_is_null(n)) return {};
  return ts_node_type(n);
}

// comment, line_comment, block_comment: every grammar here names its comments so.
inline bool is_comment(TSNode n) {
  return type_of(n).find("comment") != std::string_view::npos;
}

using base::is_space;  // base/strings.h
using base::trim;

// Owns a TSTreeCursor for one walk.
class TreeCursor {
 public:
  explicit TreeCursor(TSNode root) : c_(ts_tree_cursor_new(root)) {}
  ~TreeCursor() { ts_tree_cursor_delete(&c_); }
  TreeCursor(const TreeCursor&) = delete;
  TreeCursor& operator=(const TreeCursor&) = delete;
  TSTreeCursor* get() { return &c_; }

 private:
  TSTreeCursor c_;
};

// Pre-order walk of `root`'s subtree (named and anonymous nodes); `visit(node)` returns
// whether to descend into it.
template <class Visit>
void walk(TSNode root, Visit&& visit) {
  if (ts_node_is_null(root)) return;
  TreeCursor tc(root);
  TSTreeCursor* c = tc.get();
  for (;;) {
    if (visit(ts_tree_cursor_current_node(c)) && ts_tree_cursor_goto_first_child(c)) continue;
    for (;;) {
      if (ts_tree_cursor_goto_next_sibling(c)) break;
      if (!ts_tree_cursor_goto_parent(c)) return;
    }
  }
}

// Calls `visit(child, field_name_or_null)` for each named child of `n`, in order.
template <class Visit>
void for_each_named_child(TSNode n, Visit&& visit) {
  if (ts_node_is_null(n)) return;
  TreeCursor tc(n);
  TSTreeCursor* c = tc.get();
  if (!ts_tree_cursor_goto_first_child(c)) return;
  do {
    const TSNode child = ts_tree_cursor_current_node(c);
    if (ts_node_is_named(child)) visit(child, ts_tree_cursor_current_field_name(c));
  } while (ts_tree_cursor_goto_next_sibling(c));
}

// As above, through `c` reset to `n`: no cursor allocated per call (a hot loop's helpers share
// one). `visit` must not use `c`.
template <class Visit>
void for_each_named_child(TSTreeCursor* c, TSNode n, Visit&& visit) {
  if (ts_node_is_null(n)) return;
  ts_tree_cursor_reset(c, n);
  if (!ts_tree_cursor_goto_first_child(c)) return;
  do {
    const TSNode child = ts_tree_cursor_current_node(c);
    if (ts_node_is_named(child)) visit(child, ts_tree_cursor_current_field_name(c));
  } while (ts_tree_cursor_goto_next_sibling(c));
}

}  // namespace vsynth::stages::context
