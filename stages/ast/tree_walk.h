// Walking a tree-sitter tree with a cursor (O(children) per level, where ts_node_child(n, i)
// costs O(i)): an owned TSTreeCursor, a pre-order walk whose visitor chooses where to descend,
// and the named children of a node. The one tree walk of stages/ast and the capabilities
// that work on its parse (context, ...).
#pragma once

#include <tree_sitter/api.h>

namespace vsynth::stages::ast {

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
// whether to descend into it. Nothing for a null node.
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

}  // namespace vsynth::stages::ast
