#include "stages/ast/anchor.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "base/strings.h"
#include "stages/ast/error.h"
#include "stages/ast/tree_walk.h"

namespace vsynth::stages::ast {

// ---------------------------------------------------------------------------------- Cursor --

Cursor Cursor::at_one_based(uint32_t line, uint32_t column) {
  if (line == 0 || column == 0) {
    throw AstError(
        fmt::format("cursor line {}, column {} is not 1-based: lines and columns "
                    "start at 1 (use Cursor::at for 0-based rows and columns)",
                    line, column));
  }
  return Cursor(Kind::OneBased, line, column, 0);
}

std::string Cursor::describe() const {
  switch (kind_) {
    case Kind::Point:
      return fmt::format("row {}, column {} (0-based)", row_, column_);
    case Kind::OneBased:
      return fmt::format("line {}, column {} (1-based)", row_, column_);
    case Kind::Byte:
      break;
  }
  return fmt::format("byte offset {}", byte_);
}

uint32_t Cursor::resolve(const ParsedFile& file) const {
  const auto size = static_cast<uint32_t>(file.source().size());
  if (kind_ == Kind::Byte) {
    if (byte_ > size) {
      throw AstError(
          fmt::format("{}: cursor at {} is outside the file: valid byte offsets are "
                      "0..{} (the file has {} bytes)",
                      file.path(), describe(), size, size));
    }
    return byte_;
  }
  // Both point conventions are checked in the caller's own numbering.
  const uint32_t base = kind_ == Kind::OneBased ? 1 : 0;
  const char* what = kind_ == Kind::OneBased ? "line" : "row";
  const uint32_t row = row_ - base;
  if (row >= file.row_count()) {
    throw AstError(fmt::format(
        "{}: cursor at {} is outside the file: valid {}s are {}..{} (the "
        "file has {} {}s)",
        file.path(), describe(), what, base, file.row_count() - 1 + base, file.row_count(), what));
  }
  const uint32_t column = column_ - base;
  const uint32_t len = file.row_length(row);
  if (column > len) {
    throw AstError(
        fmt::format("{}: cursor at {} is past the end of {} {}: valid columns are "
                    "{}..{} ({} {} has {} bytes; columns count bytes)",
                    file.path(), describe(), what, row_, base, len + base, what, row_, len));
  }
  return file.byte_at(TSPoint{row, column});
}

const char* to_string(ScopeKind kind) {
  switch (kind) {
    case ScopeKind::Function:
      return "function";
    case ScopeKind::Class:
      return "class";
    case ScopeKind::Namespace:
      return "namespace";
  }
  return "scope";
}

// ---------------------------------------------------------------------------------- helpers --

namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f';
}

Span span_of(TSNode n) {
  return Span{ts_node_start_byte(n), ts_node_end_byte(n), ts_node_start_point(n),
              ts_node_end_point(n)};
}

TSNode field(TSNode n, std::string_view name) {
  return ts_node_child_by_field_name(n, name.data(), static_cast<uint32_t>(name.size()));
}

// Whether the last leaf of `n` is an identifier: the cursor right after `n` is then at the end
// of a word being typed.
bool ends_with_identifier(const Language& lang, TSNode n) {
  for (uint32_t count = ts_node_child_count(n); count > 0; count = ts_node_child_count(n)) {
    n = ts_node_child(n, count - 1);
  }
  return lang.is_identifier(n);
}

// Root-to-leaf chain of nodes at byte `b` (see the rule in anchor.h). Children are walked with
// a tree cursor: O(children) per level, never O(children^2).
std::vector<TSNode> path_to(const Language& lang, std::string_view src, TSNode root, uint32_t b) {
  // A node that ends with the '\n' just before the cursor ended on the row above: the cursor
  // starts a new row and is not "right after" it.
  const bool at_row_start = b == 0 || src[b - 1] == '\n';
  std::vector<TSNode> path{root};
  TreeCursor tc(root);
  TSTreeCursor* c = tc.get();
  while (ts_tree_cursor_goto_first_child(c)) {
    TSNode inside{}, touching{};
    bool have_inside = false, have_touching = false;
    do {
      const TSNode child = ts_tree_cursor_current_node(c);
      const uint32_t s = ts_node_start_byte(child), e = ts_node_end_byte(child);
      if (s > b) break;
      if (e == s) continue;  // zero-width (a MISSING token): holds no cursor
      if (b < e) {
        inside = child;
        have_inside = true;
        break;
      }
      if (e == b && !at_row_start) {
        touching = child;
        have_touching = true;
      }
    } while (ts_tree_cursor_goto_next_sibling(c));
    TSNode next;
    if (have_touching && (!have_inside || ends_with_identifier(lang, touching))) {
      next = touching;
    } else if (have_inside) {
      next = inside;
    } else {
      break;
    }
    path.push_back(next);
    ts_tree_cursor_reset(c, next);
  }
  return path;
}

struct ScopeHit {
  ScopeKind kind;
  const KindRule* rule;
};

std::optional<ScopeHit> scope_of(const Language& lang, TSNode n) {
  if (const KindRule* r = lang.function_rule(n)) return ScopeHit{ScopeKind::Function, r};
  if (const KindRule* r = lang.class_rule(n)) return ScopeHit{ScopeKind::Class, r};
  if (const KindRule* r = lang.namespace_rule(n)) return ScopeHit{ScopeKind::Namespace, r};
  return std::nullopt;
}

std::size_t count_scopes(const Language& lang, const std::vector<TSNode>& path) {
  return static_cast<std::size_t>(std::count_if(
      path.begin(), path.end(), [&](TSNode n) { return scope_of(lang, n).has_value(); }));
}

uint32_t line_indent(const ParsedFile& file, uint32_t row) {
  const std::string_view src = file.source();
  const uint32_t start = file.byte_at(TSPoint{row, 0});
  uint32_t k = start;
  while (k < src.size() && (src[k] == ' ' || src[k] == '\t')) ++k;
  return k - start;
}

// Python: a cursor on a blank line indented by `indent` bytes belongs to the definitions (on
// the path to the last code before it) whose header line is indented less. Returns that path
// cut after its innermost such definition, or nothing when the rule does not apply.
std::optional<std::vector<TSNode>> indentation_path(const ParsedFile& file, uint32_t b) {
  const std::string_view src = file.source();
  const TSPoint p = file.point_at(b);
  const uint32_t row_start = b - p.column;
  const uint32_t row_end = row_start + file.row_length(p.row);
  for (uint32_t i = row_start; i < row_end; ++i) {
    if (!is_blank(src[i])) return std::nullopt;  // not a blank line
  }
  const uint32_t indent = p.column;
  if (indent == 0) return std::nullopt;
  uint32_t prev = row_start;  // last code byte before the cursor's line
  while (prev > 0 && is_blank(src[prev - 1])) --prev;
  if (prev == 0) return std::nullopt;
  const Language& lang = file.language();
  std::vector<TSNode> path = path_to(lang, src, file.root(), prev - 1);
  std::size_t keep = 0;  // path[0..keep] survives
  for (std::size_t i = 1; i < path.size(); ++i) {
    if (!scope_of(lang, path[i])) continue;
    // The header's line indentation, not the node's column: `@dec` lines, `async def`.
    if (line_indent(file, ts_node_start_point(path[i]).row) >= indent) break;
    keep = i;
  }
  path.resize(keep + 1);
  return path;
}

NodeInfo info_of(TSNode n, std::string_view name) {
  return NodeInfo{n, ts_node_type(n), name, span_of(n)};
}

// The receiver type of a Go method: the first identifier inside the receiver's `type` field.
std::optional<NodeInfo> owner_of(const ParsedFile& file, TSNode fn, const KindRule& rule) {
  if (rule.owner_field.empty()) return std::nullopt;
  const TSNode owner = field(fn, rule.owner_field);
  if (ts_node_is_null(owner)) return std::nullopt;
  const Language& lang = file.language();
  TSNode type{};
  bool found_type = false;
  walk(owner, [&](TSNode n) {
    if (found_type) return false;
    const TSNode t = field(n, "type");
    if (!ts_node_is_null(t)) {
      type = t;
      found_type = true;
      return false;
    }
    return true;
  });
  const TSNode search = found_type ? type : owner;
  std::optional<NodeInfo> result;
  walk(search, [&](TSNode n) {
    if (result) return false;
    if (lang.is_identifier(n)) {
      result = info_of(n, file.text(n));
      return false;
    }
    return true;
  });
  return result;
}

}  // namespace

// -------------------------------------------------------------------------------- naming --

std::string_view definition_name(const ParsedFile& file, TSNode node, const KindRule& rule) {
  return definition_name(file, node, rule, std::nullopt);
}

std::string_view definition_name(const ParsedFile& file, TSNode node, const KindRule& rule,
                                 std::optional<TSNode> parent) {
  const Language& lang = file.language();
  std::string_view name;
  switch (rule.name_from) {
    case NameFrom::Field:
      name = file.text(field(node, rule.field));
      break;
    case NameFrom::FirstNamedChild:
      name = file.text(ts_node_named_child(node, 0));
      break;
    case NameFrom::Text:
      name = file.text(node);
      break;
    case NameFrom::DeclaratorChain: {
      // int *(*f)(int) / Foo::bar() const / ~Foo(): walk declarators to the name at the bottom.
      TSNode n = field(node, rule.field);
      for (int step = 0; step < 32 && !ts_node_is_null(n); ++step) {
        const TSNode inner = field(n, rule.field);
        if (!ts_node_is_null(inner)) {
          n = inner;
          continue;
        }
        const std::string_view type = ts_node_type(n);
        if (lang.is_identifier(n) || type == "qualified_identifier" || type == "destructor_name" ||
            type == "operator_name" || type == "template_function" || type == "template_method" ||
            type == "operator_cast") {
          name = file.text(n);
          break;
        }
        n = ts_node_named_child(n, 0);  // reference_declarator, parenthesized_declarator...
      }
      break;
    }
    case NameFrom::None:
      break;
  }
  name = base::trim(name);
  if (name.empty() && rule.name_from != NameFrom::Text) {
    // `const f = () => 1`: the parent names the anonymous function. (ts_node_parent walks down
    // from the root, O(depth x siblings), hence the parent when the caller knows it.)
    const TSNode p = parent ? *parent : ts_node_parent(node);
    const std::string_view f = lang.naming_field(p);
    if (!f.empty()) {
      const TSNode named = field(p, f);
      if (!ts_node_is_null(named) && !ts_node_eq(named, node)) name = base::trim(file.text(named));
    }
  }
  return name;
}

// ---------------------------------------------------------------------------------- anchor --
//
// anchor() runs five phases, in this order, each below: the path to the cursor (path_to), the
// node at the cursor, the scopes around it, the module, and one walk of the tree that finds
// the imports visible at the cursor and the identifiers near it.

namespace {

// The path the scopes come from: the cursor's own path, unless indentation places the cursor
// deeper (Python).
std::vector<TSNode> scope_path(const ParsedFile& file, const std::vector<TSNode>& path,
                               uint32_t b) {
  const Language& lang = file.language();
  if (lang.indent_scoped()) {
    if (auto by_indent = indentation_path(file, b);
        by_indent && count_scopes(lang, *by_indent) > count_scopes(lang, path)) {
      return std::move(*by_indent);
    }
  }
  return path;
}

// Smallest named node: the deepest named one on the path (the root is named).
NodeInfo smallest_named(const std::vector<TSNode>& path) {
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    if (ts_node_is_named(*it)) return info_of(*it, {});
  }
  return {};
}

// Fills a.scopes (innermost first), a.function and a.enclosing_class from `path`. Returns
// whether a class node is on the path (else the class may be a Go method's receiver).
bool add_scopes(const ParsedFile& file, const std::vector<TSNode>& path, Anchor& a) {
  const Language& lang = file.language();
  bool class_on_path = false;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const std::optional<ScopeHit> hit = scope_of(lang, *it);
    if (!hit) continue;
    const std::optional<TSNode> parent =
        it + 1 != path.rend() ? std::optional<TSNode>(*(it + 1)) : std::nullopt;
    NodeInfo info = info_of(*it, definition_name(file, *it, *hit->rule, parent));
    if (hit->kind == ScopeKind::Function && !a.function) {
      a.function = info;
      if (!a.enclosing_class) a.enclosing_class = owner_of(file, *it, *hit->rule);
    }
    if (hit->kind == ScopeKind::Class && !class_on_path) {
      a.enclosing_class = info;  // an enclosing class node beats a receiver
      class_on_path = true;
    }
    a.scopes.push_back(Scope{hit->kind, info});
  }
  return class_on_path;
}

// The module and its declared package (Go's `package main`, Java's `package a.b;`), from the
// top-level children only, through a cursor: ts_node_named_child(root, i) costs O(i).
NodeInfo module_of(const ParsedFile& file) {
  const Language& lang = file.language();
  const TSNode root = file.root();
  NodeInfo module = info_of(root, {});
  if (lang.nodes().packages.empty()) return module;
  walk(root, [&](TSNode n) {
    if (!module.name.empty()) return false;
    if (const KindRule* r = lang.package_rule(n)) module.name = definition_name(file, n, *r);
    return ts_node_eq(n, root);
  });
  return module;
}

// A mark of the imports-and-identifiers walk: the depth of the node where a search's state
// changed, forgotten when the walk climbs back to that depth (it left the node's subtree).
struct DepthMark {
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t at = kNone;
  bool set() const { return at != kNone; }
  void climbed_to(uint32_t depth) {
    if (at != kNone && depth <= at) at = kNone;
  }
};

// Imports visible at the cursor: the walk skips the bodies of definitions that do not enclose
// it (an import inside another function is not in scope here) and descends into everything
// else (#ifdef blocks, Python `try:`/`if:` at module level, the enclosing namespace). Below a
// node it does not descend into, the search is off while the walk goes on for the identifiers.
class ImportSearch {
 public:
  // `enclosing`: the scopes around the cursor.
  ImportSearch(const ParsedFile& file, const std::vector<Scope>& enclosing)
      : file_(file), enclosing_(enclosing) {}
  bool on() const { return !off_.set(); }
  void off_below(uint32_t depth) { off_.at = depth; }
  void climbed_to(uint32_t depth) { off_.climbed_to(depth); }
  // Takes `n` when it is an import; whether the search needs n's children.
  bool visit(TSNode n, std::vector<NodeInfo>& out) const {
    const Language& lang = file_.language();
    if (const KindRule* r = lang.import_rule(n)) {
      out.push_back(info_of(n, definition_name(file_, n, *r)));
      return false;
    }
    if (scope_of(lang, n) && !encloses_cursor(n)) return false;
    // A statement whose grammar holds no import, parsed without error: nothing to find.
    return !(lang.is_import_free(n) && !ts_node_has_error(n));
  }

 private:
  bool encloses_cursor(TSNode n) const {
    return std::any_of(enclosing_.begin(), enclosing_.end(),
                       [&](const Scope& sc) { return ts_node_eq(sc.info.node, n); });
  }
  const ParsedFile& file_;
  const std::vector<Scope>& enclosing_;
  DepthMark off_;
};

// Identifiers within `scope` (the innermost function, else class, else the whole file), each
// name at its use nearest the cursor. Outside `scope` the search only leads the walk down the
// ancestors of `scope` (an `export` around a function is an import node the import search
// stops at); a mark holds the depth of `scope` while the walk is in it.
class IdentifierSearch {
 public:
  IdentifierSearch(const ParsedFile& file, TSNode scope, uint32_t cursor)
      : file_(file), scope_(scope), whole_file_(ts_node_eq(scope, file.root())), cursor_(cursor) {}
  // Takes `n` when it is an identifier inside `scope`; whether the search needs n's children.
  bool visit(TSNode n, uint32_t depth) {
    if (!inside_.set() && (whole_file_ ? depth == 0 : ts_node_eq(n, scope_))) inside_.at = depth;
    if (!inside_.set()) {
      // An ancestor of `scope` (or a node spanning the same bytes): the way to it.
      return !whole_file_ && ts_node_start_byte(n) <= ts_node_start_byte(scope_) &&
             ts_node_end_byte(scope_) <= ts_node_end_byte(n);
    }
    if (!file_.language().is_identifier(n)) return true;
    const Span s = span_of(n);
    const uint32_t d = cursor_ < s.start_byte ? s.start_byte - cursor_
                       : cursor_ > s.end_byte ? cursor_ - s.end_byte
                                              : 0;
    const std::string_view name = file_.text(n);
    auto [it, inserted] = nearest_.try_emplace(name, Reference{name, ts_node_type(n), s, d});
    if (!inserted && d < it->second.distance) it->second = Reference{name, ts_node_type(n), s, d};
    return false;
  }
  // Nearest first (ties: earlier first), at most `max` (0: all).
  std::vector<Reference> nearest(std::size_t max) const {
    std::vector<Reference> out;
    out.reserve(nearest_.size());
    for (const auto& [name, ref] : nearest_) out.push_back(ref);
    std::sort(out.begin(), out.end(), [](const Reference& x, const Reference& y) {
      return std::tie(x.distance, x.span.start_byte) < std::tie(y.distance, y.span.start_byte);
    });
    if (max != 0 && out.size() > max) out.resize(max);
    return out;
  }
  void climbed_to(uint32_t depth) { inside_.climbed_to(depth); }

 private:
  const ParsedFile& file_;
  const TSNode scope_;
  const bool whole_file_;
  const uint32_t cursor_;
  std::map<std::string_view, Reference> nearest_;
  DepthMark inside_;
};

// Moves `c` to the next node in pre-order that is not below the current one, keeping `depth`;
// false at the end of the tree.
bool next_not_below(TSTreeCursor* c, uint32_t& depth) {
  for (;;) {
    if (ts_tree_cursor_goto_next_sibling(c)) return true;
    if (!ts_tree_cursor_goto_parent(c)) return false;
    --depth;
  }
}

// Both searches in one pre-order walk of the tree: when the cursor has no enclosing function
// (a cut that leaves a bracket open puts the rest of the file in an ERROR node) both cover the
// whole file, and one walk costs half of two. The walk descends where either search needs it.
void find_imports_and_identifiers(const ParsedFile& file, ImportSearch& imports,
                                  IdentifierSearch& identifiers, std::vector<NodeInfo>& out) {
  TreeCursor tc(file.root());
  TSTreeCursor* c = tc.get();
  uint32_t depth = 0;
  for (;;) {
    const TSNode n = ts_tree_cursor_current_node(c);
    const bool imports_on = imports.on();
    const bool descend_imports = imports_on && imports.visit(n, out);
    const bool descend_ids = identifiers.visit(n, depth);
    if ((descend_imports || descend_ids) && ts_tree_cursor_goto_first_child(c)) {
      if (imports_on && !descend_imports) imports.off_below(depth);
      ++depth;
      continue;
    }
    if (!next_not_below(c, depth)) return;
    imports.climbed_to(depth);
    identifiers.climbed_to(depth);
  }
}

}  // namespace

Anchor anchor(const ParsedFile& file, const Cursor& cursor, const AnchorOptions& options) {
  Anchor a;
  a.byte = cursor.resolve(file);
  a.point = file.point_at(a.byte);
  const std::vector<TSNode> path = path_to(file.language(), file.source(), file.root(), a.byte);
  a.node = smallest_named(path);
  const bool class_on_path = add_scopes(file, scope_path(file, path, a.byte), a);
  a.module = module_of(file);
  const TSNode scope = a.function      ? a.function->node
                       : class_on_path ? a.enclosing_class->node
                                       : file.root();
  ImportSearch imports(file, a.scopes);
  IdentifierSearch identifiers(file, scope, a.byte);
  find_imports_and_identifiers(file, imports, identifiers, a.imports);
  a.identifiers = identifiers.nearest(options.max_identifiers);
  return a;
}

}  // namespace vsynth::stages::ast
