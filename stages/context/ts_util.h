// Small tree-sitter helpers shared by stages/context: field lookup by cached id, node types,
// comment detection, whitespace trimming; and the tree walk of stages/ast (tree_walk.h) under
// context's names.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <cstring>
#include <string_view>

#include "base/strings.h"
#include "stages/ast/tree_walk.h"

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

// The tree walk (stages/ast/tree_walk.h).
using ast::for_each_named_child;
using ast::TreeCursor;
using ast::walk;

}  // namespace vsynth::stages::context
