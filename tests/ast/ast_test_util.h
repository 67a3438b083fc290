// Helpers for tests/ast: sample files with cursor markers, and a full tree dump to compare an
// incrementally re-parsed tree with a fresh parse.
#pragma once

#include <tree_sitter/api.h>

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

namespace vsynth::stages::ast::test {

// A sample from tests/ast/data with its `<@name>` cursor markers removed; `cursors` maps each
// name to the byte offset where its marker stood.
struct Sample {
  std::string path;
  std::string source;
  std::map<std::string, uint32_t> cursors;
  uint32_t at(const std::string& name) const {
    auto it = cursors.find(name);
    if (it == cursors.end()) throw std::runtime_error(path + " has no <@" + name + "> marker");
    return it->second;
  }
};

inline Sample load_sample(const std::string& file_name) {
  Sample s;
  s.path = std::string(VSYNTH_SOURCE_DIR) + "/tests/ast/data/" + file_name;
  std::ifstream in(s.path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + s.path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string raw = buf.str();
  for (std::size_t i = 0; i < raw.size();) {
    if (raw.compare(i, 2, "<@") == 0) {
      const std::size_t close = raw.find('>', i);
      if (close == std::string::npos) throw std::runtime_error("unclosed marker in " + s.path);
      s.cursors[raw.substr(i + 2, close - i - 2)] = static_cast<uint32_t>(s.source.size());
      i = close + 1;
    } else {
      s.source.push_back(raw[i++]);
    }
  }
  return s;
}

// Every node (named or not) with its field, byte range, points and MISSING/ERROR flags, in
// pre-order: two trees with equal dumps have the same structure at the same positions.
inline std::string dump_tree(TSNode root) {
  std::string out;
  TSTreeCursor c = ts_tree_cursor_new(root);
  int depth = 0;
  for (;;) {
    const TSNode n = ts_tree_cursor_current_node(&c);
    const char* field = ts_tree_cursor_current_field_name(&c);
    out += std::string(static_cast<std::size_t>(depth) * 2, ' ');
    if (field) out += std::string(field) + ": ";
    out += ts_node_type(n);
    out += ts_node_is_named(n) ? "" : "(anon)";
    out += ts_node_is_missing(n) ? "(MISSING)" : "";
    const TSPoint s = ts_node_start_point(n), e = ts_node_end_point(n);
    out += " [" + std::to_string(ts_node_start_byte(n)) + "," +
           std::to_string(ts_node_end_byte(n)) + ") " + std::to_string(s.row) + ":" +
           std::to_string(s.column) + "-" + std::to_string(e.row) + ":" + std::to_string(e.column) +
           "\n";
    if (ts_tree_cursor_goto_first_child(&c)) {
      ++depth;
      continue;
    }
    bool done = false;
    while (!ts_tree_cursor_goto_next_sibling(&c)) {
      if (!ts_tree_cursor_goto_parent(&c)) {
        done = true;
        break;
      }
      --depth;
    }
    if (done) break;
  }
  ts_tree_cursor_delete(&c);
  return out;
}

// Structural sanity of a tree: every child lies inside its parent, siblings do not overlap and
// come in order, and nothing extends past the source.
inline bool consistent(TSNode node, uint32_t source_size) {
  if (ts_node_start_byte(node) > ts_node_end_byte(node) || ts_node_end_byte(node) > source_size) {
    return false;
  }
  uint32_t prev_end = ts_node_start_byte(node);
  for (uint32_t i = 0, n = ts_node_child_count(node); i < n; ++i) {
    const TSNode child = ts_node_child(node, i);
    if (ts_node_start_byte(child) < prev_end || ts_node_end_byte(child) > ts_node_end_byte(node)) {
      return false;
    }
    if (!consistent(child, source_size)) return false;
    prev_end = ts_node_end_byte(child);
  }
  return true;
}

}  // namespace vsynth::stages::ast::test
