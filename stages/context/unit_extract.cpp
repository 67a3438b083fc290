#include "stages/context/unit_extract.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "stages/ast/anchor.h"
#include "stages/context/summarize.h"
#include "stages/context/ts_util.h"

namespace vsynth::stages::context {

namespace {

using ast::Language;
using ast::ParsedFile;

uint32_t start_row(TSNode n) {
  return ts_node_start_point(n).row;
}

bool is_any(std::string_view t, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), t) != names.end();
}

// Node types that lead a unit like a comment does: attributes and access labels.
bool is_leading_decoration(TSNode n) {
  return is_comment(n) || is_any(type_of(n), {"attribute_item", "inner_attribute_item",
                                              "access_specifier", "line_comment"});
}

// Fields of a body's children that are parts of the holder, not members (a #ifdef's name, an
// #if's condition).
bool is_holder_field(const char* f) {
  if (!f) return false;
  const std::string_view s = f;
  return s == "name" || s == "condition" || s == "parameters" || s == "type" || s == "declarator" ||
         s == "argument" || s == "path" || s == "operator";
}

bool is_anonymous_function(std::string_view t) {
  return is_any(t, {"lambda", "lambda_expression", "arrow_function", "closure_expression",
                    "func_literal", "function_expression", "function", "generator_function"});
}

bool is_preproc_block(std::string_view t) {
  return is_any(t,
                {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"});
}

// "a::b::run" -> "run", "Widget.run" -> "run".
std::string_view simple_name(std::string_view name) {
  const std::size_t p = name.find_last_of(":.");
  return p == std::string_view::npos ? name : name.substr(p + 1);
}

// Whether a child of `def` before `body` holds a syntax error. A block the parser found after
// an error (a signature left unclosed at the cursor) is not the definition's body: the text in
// between is, and it sits in the error. Such a definition is atomic at first and opened by
// rows when it must be (split_unit).
bool error_before(TSTreeCursor* cursor, TSNode def, TSNode body) {
  bool error = false;
  for_each_named_child(cursor, def, [&](TSNode c, const char*) {
    error |= ts_node_start_byte(c) < ts_node_start_byte(body) && ts_node_has_error(c);
  });
  return error;
}

struct Context {
  bool in_class = false;
  std::string_view class_name;
  bool module = false;  // at a module's top level (or in a branch of a module-level if / try)
};

// Python compound statements whose branches a module opens into containers (add_branches).
bool is_python_branching(std::string_view t) {
  return t == "if_statement" || t == "try_statement";
}

bool is_python_clause(std::string_view t) {
  return is_any(
      t, {"elif_clause", "else_clause", "except_clause", "except_group_clause", "finally_clause"});
}

// The block of a branching statement's own first branch or of one of its clauses.
TSNode branch_block(TSNode n) {
  TSNode b = field(n, "consequence");
  if (ts_node_is_null(b)) b = field(n, "body");
  if (!ts_node_is_null(b)) return b;
  for (uint32_t i = 0, k = ts_node_named_child_count(n); i < k; ++i) {
    const TSNode c = ts_node_named_child(n, i);
    if (type_of(c) == "block") return c;
  }
  return TSNode{};
}

struct Classified {
  UnitKind kind = UnitKind::Statement;
  TSNode def{};   // the definition inside wrappers (decorators, export, template, typedef)
  TSNode body{};  // a container's member holder; null: atomic
  std::string_view name;
};

class Extractor {
 public:
  Extractor(const ParsedFile& file, uint32_t file_index, graph::Arena& arena,
            const ExtractOptions& options, std::vector<Unit>& units)
      : file_(file),
        lang_(file.language()),
        style_(style_for(file.language().name())),
        file_index_(file_index),
        arena_(arena),
        options_(options),
        units_(units),
        scan_(file.root()) {}

  // Members of `holder`, appended as units with `parent`; returns the last row they cover
  // (or `covered` when there are none).
  int64_t members(TSNode holder, int32_t parent, int64_t covered, const Context& ctx);

  // Splits an existing unit into header + members (see split_unit).
  bool split(uint32_t index);

 private:
  // split(), by the node's block body: its statements are the members.
  bool split_body(uint32_t index, TSNode node);
  // split(), by rows, when there is no usable body (a syntax error at the cursor left the
  // block unclosed, or members share the header's or the closing brace's row).
  bool split_rows(uint32_t index, TSNode node);
  uint32_t row_start(uint32_t row) const { return file_.byte_at(TSPoint{row, 0}); }
  std::string_view indent_of(uint32_t row) const;
  bool blank_rows(int64_t first, int64_t last) const;
  std::string_view store(const std::string& s) {
    return s.empty() ? std::string_view() : arena_.store(s);
  }

  Classified classify(TSNode node, const Context& ctx) const;
  std::string_view decl_name(TSNode node) const;
  // The first member of a holder (named, not a holder field, not a Python docstring), and the
  // last.
  std::optional<TSNode> first_member(TSNode holder, bool skip_docstring) const;
  std::optional<TSNode> last_member(TSNode holder) const;
  int32_t add_unit(TSNode node, uint32_t first_row, int32_t parent, const Context& ctx,
                   int64_t& covered);
  // A Python module-level `if` / `try` whose branches define functions or classes (a
  // fallback definition, `if TYPE_CHECKING:`): one container per branch, the statement's own
  // first, then each clause (elif, else, except, finally) after it at the same level, whose
  // members are the branch's statements; so a definition in a branch is a unit, a candidate
  // and a name the index keeps, as one at the top level is. -1 (nothing added) when no branch
  // defines anything or a branch's block starts on its header's row.
  int32_t add_branches(TSNode node, uint32_t first_row, int32_t parent, const Context& ctx,
                       int64_t& covered);
  bool branches_define(TSNode node) const;
  int32_t add_branch(TSNode node, TSNode block, uint32_t first_row, int32_t parent,
                     const Context& ctx, int64_t& covered);
  void extend(int32_t index, uint32_t last_row, uint32_t node_end);

  const ParsedFile& file_;
  const Language& lang_;
  const LangStyle& style_;
  uint32_t file_index_;
  graph::Arena& arena_;
  const ExtractOptions& options_;
  std::vector<Unit>& units_;
  bool descend_ = false;  // members(): open children that share a covered row (split_rows)
  // For the helpers that look at one node's children and call nothing that walks (decl_name,
  // first_member, last_member, error_before): one cursor, reset per use, not one allocated per
  // node; decl_name's breadth-first levels likewise. members() recurses and keeps its own.
  mutable TreeCursor scan_;
  mutable std::vector<TSNode> level_, next_;
};

std::string_view Extractor::indent_of(uint32_t row) const {
  const std::string_view src = file_.source();
  const uint32_t start = row_start(row);
  uint32_t k = start;
  while (k < src.size() && (src[k] == ' ' || src[k] == '\t')) ++k;
  return src.substr(start, k - start);
}

bool Extractor::blank_rows(int64_t first, int64_t last) const {
  const std::string_view src = file_.source();
  for (int64_t r = first; r <= last; ++r) {
    const auto row = static_cast<uint32_t>(r);
    const uint32_t s = row_start(row), len = file_.row_length(row);
    for (uint32_t i = s; i < s + len; ++i) {
      if (!is_space(src[i])) return false;
    }
  }
  return true;
}

std::string_view Extractor::decl_name(TSNode node) const {
  // Breadth-first through the declaration's naming parts (never its value, type or body):
  // `static int t[3] = {..}` -> t, `X: int = 3` -> X, `const f = ...` -> f.
  std::vector<TSNode>& level = level_;
  std::vector<TSNode>& next = next_;
  level.assign(1, node);
  for (int depth = 0; depth < 5 && !level.empty(); ++depth) {
    // The first naming node of this level, in order; only then the next level's nodes (never
    // after the last level: nothing would look at them).
    for (TSNode n : level) {
      if (lang_.is_identifier(n)) return file_.text(n);
      const std::string_view t = type_of(n);
      if (t == "qualified_identifier" || t == "scoped_identifier") return file_.text(n);
    }
    if (depth == 4) break;
    next.clear();
    for (TSNode n : level) {
      for_each_named_child(scan_.get(), n, [&](TSNode c, const char* f) {
        if (f && is_any(f, {"value", "right", "type", "body", "parameters", "arguments", "size",
                            "default_value", "result"})) {
          return;
        }
        next.push_back(c);
      });
    }
    level.swap(next);
  }
  return {};
}

Classified Extractor::classify(TSNode node, const Context& ctx) const {
  Classified k;
  TSNode def = node;
  std::string_view typedef_name;
  for (int step = 0; step < 4; ++step) {
    const std::string_view t = type_of(def);
    TSNode inner{};
    if (t == "decorated_definition") {
      inner = field(def, "definition");
    } else if (t == "export_statement") {
      inner = field(def, "declaration");
    } else if (t == "template_declaration") {
      const uint32_t n = ts_node_named_child_count(def);
      if (n > 0) inner = ts_node_named_child(def, n - 1);
    } else if (t == "ambient_declaration") {
      if (ts_node_named_child_count(def) > 0) inner = ts_node_named_child(def, 0);
    } else if (t == "type_declaration") {  // Go: `type X struct {...}` with one spec
      if (ts_node_named_child_count(def) == 1) inner = ts_node_named_child(def, 0);
    } else if (t == "type_definition" || t == "declaration" || t == "field_declaration") {
      // C/C++: `typedef struct {...} t;` / `struct s {...} v;` define the struct.
      const TSNode type = field(def, "type");
      if (!ts_node_is_null(type) && lang_.class_rule(type)) {
        if (t == "type_definition") typedef_name = decl_name(field(def, "declarator"));
        if (ts_node_is_null(field(def, "declarator")) || t == "type_definition") inner = type;
      }
    }
    if (ts_node_is_null(inner)) break;
    def = inner;
  }
  k.def = def;
  const std::string_view t = type_of(def);

  if (const ast::KindRule* r = lang_.function_rule(def); r && !is_anonymous_function(t)) {
    k.name = ast::definition_name(file_, def, *r);
    const std::string_view simple = simple_name(k.name);
    const bool qualified = simple.size() != k.name.size();
    k.kind = ctx.in_class || t == "method_declaration" || qualified ? UnitKind::Method
                                                                    : UnitKind::Function;
    const std::string_view owner =
        qualified ? simple_name(k.name.substr(0, k.name.size() - simple.size() - 2))
                  : ctx.class_name;
    if (simple == "__init__" || simple == "constructor" || t == "constructor_declaration" ||
        (!owner.empty() && simple == owner) || (ctx.in_class && simple == "new") ||
        (lang_.name() == "go" && simple.size() > 3 && simple.substr(0, 3) == "New" &&
         std::isupper(static_cast<unsigned char>(simple[3])))) {
      k.kind = UnitKind::Constructor;
    }
    return k;
  }
  if (const ast::KindRule* r = lang_.class_rule(def)) {
    k.kind = UnitKind::Class;
    k.name = ast::definition_name(file_, def, *r);
    if (k.name.empty()) k.name = typedef_name;
    if (t == "type_spec") {  // Go: the struct's field list or the interface itself
      const TSNode type = field(def, "type");
      const std::string_view tt = ts_node_is_null(type) ? "" : type_of(type);
      if (tt == "struct_type" && ts_node_named_child_count(type) > 0) {
        k.body = ts_node_named_child(type, 0);
      } else if (tt == "interface_type") {
        k.body = type;
      } else {
        k.kind = UnitKind::Global;  // `type Celsius float64`
      }
    } else {
      k.body = field(def, "body");
    }
    return k;
  }
  if (const ast::KindRule* r = lang_.namespace_rule(def)) {
    k.kind = UnitKind::Namespace;
    k.name = ast::definition_name(file_, def, *r);
    k.body = field(def, "body");
    return k;
  }
  if (t == "linkage_specification") {
    k.kind = UnitKind::Namespace;
    k.name = "extern";
    k.body = field(def, "body");
    return k;
  }
  if (is_preproc_block(t)) {
    k.kind = UnitKind::Namespace;
    const TSNode cond =
        ts_node_is_null(field(def, "name")) ? field(def, "condition") : field(def, "name");
    k.name = trim(file_.text(cond));
    k.body = def;
    return k;
  }
  if (t == "package_declaration" || t == "package_clause") {
    k.kind = UnitKind::Import;
    k.name = trim(file_.text(def));
    return k;
  }
  if (const ast::KindRule* r = lang_.import_rule(def)) {
    k.kind = UnitKind::Import;
    k.name = ast::definition_name(file_, def, *r);
    return k;
  }
  // JS/TS `const f = (a) => ...`: a function under another name.
  if (t == "lexical_declaration" || t == "variable_declaration") {
    if (ts_node_named_child_count(def) == 1) {
      const TSNode declarator = ts_node_named_child(def, 0);
      const TSNode value = field(declarator, "value");
      if (!ts_node_is_null(value) && is_anonymous_function(type_of(value))) {
        k.kind = ctx.in_class ? UnitKind::Method : UnitKind::Function;
        k.name = file_.text(field(declarator, "name"));
        k.def = value;
        return k;
      }
    }
  }
  k.name = decl_name(def);
  bool prototype = false;
  if (t == "declaration" || t == "field_declaration") {
    walk(field(def, "declarator"), [&](TSNode n) {
      if (type_of(n) == "function_declarator") prototype = true;
      return !prototype && !ts_node_is_null(n);
    });
  }
  if (ctx.in_class) {
    k.kind = prototype ? UnitKind::Method : UnitKind::Field;
    return k;
  }
  if (prototype) {
    k.kind = UnitKind::Function;
    return k;
  }
  const bool python_assignment =
      t == "expression_statement" && ts_node_named_child_count(def) == 1 &&
      is_any(type_of(ts_node_named_child(def, 0)), {"assignment", "augmented_assignment"});
  if (python_assignment ||
      is_any(t, {"declaration", "type_definition", "preproc_def", "preproc_function_def",
                 "var_declaration", "const_declaration", "type_declaration", "const_item",
                 "static_item", "type_item", "macro_definition", "lexical_declaration",
                 "variable_declaration", "type_alias_declaration", "mod_item", "field_declaration",
                 "enum_declaration", "alias_declaration"})) {
    k.kind = UnitKind::Global;
    if (python_assignment) k.name = decl_name(ts_node_named_child(def, 0));
    return k;
  }
  k.kind = UnitKind::Statement;
  k.name = {};
  return k;
}

std::optional<TSNode> Extractor::first_member(TSNode holder, bool skip_docstring) const {
  std::optional<TSNode> found;
  bool first = true;
  for_each_named_child(scan_.get(), holder, [&](TSNode c, const char* f) {
    if (found || is_holder_field(f)) return;
    if (first && skip_docstring && type_of(c) == "expression_statement" &&
        ts_node_named_child_count(c) == 1 && type_of(ts_node_named_child(c, 0)) == "string") {
      first = false;
      return;
    }
    first = false;
    found = c;
  });
  return found;
}

std::optional<TSNode> Extractor::last_member(TSNode holder) const {
  std::optional<TSNode> found;
  for_each_named_child(scan_.get(), holder, [&](TSNode c, const char* f) {
    if (!is_holder_field(f)) found = c;
  });
  return found;
}

void Extractor::extend(int32_t index, uint32_t last_row, uint32_t node_end) {
  Unit& u = units_[static_cast<std::size_t>(index)];
  u.node_end = std::max(u.node_end, node_end);
  if (u.container) {
    if (u.close.empty()) return;  // nothing follows a close-less (Python) container on its row
    if (last_row > u.close_last) {
      u.close_last = last_row;
      u.end_row = last_row;
      u.close = rows_text(file_, u.close_first, u.close_last);
    }
    return;
  }
  if (last_row > u.last_row) {
    u.last_row = last_row;
    u.end_row = last_row;
    u.full = rows_text(file_, u.first_row, u.last_row);
    // The forms were made from the first node alone: a row holding two nodes is shown whole.
    u.signature = {};
  }
}

int32_t Extractor::add_unit(TSNode node, uint32_t first_row, int32_t parent, const Context& ctx,
                            int64_t& covered) {
  const Classified k = classify(node, ctx);
  const uint32_t node_row = start_row(node);
  const uint32_t node_last = last_row_of(node);
  Unit u;
  u.kind = k.kind;
  u.name = k.name;
  u.file = file_index_;
  u.first_row = first_row;
  u.row_byte = row_start(first_row);
  u.node_start = ts_node_start_byte(node);
  u.node_end = ts_node_end_byte(node);
  u.parent = parent;
  u.indent = indent_of(node_row);
  const std::string_view comments =
      first_row < node_row ? rows_text(file_, first_row, node_row - 1) : std::string_view();
  // Only function signatures and container headers show the doc line: found for those alone.
  auto doc_line = [&]() -> std::string {
    return options_.doc_line ? first_doc_line(file_, k.def, comments) : "";
  };

  // A container needs its members on rows of their own, between its header and closing rows.
  bool container = false;
  uint32_t header_last = node_last;
  if (!ts_node_is_null(k.body) && !error_before(scan_.get(), k.def, k.body)) {
    const bool python = style_.indented_body;
    const std::optional<TSNode> first = first_member(k.body, python);
    const std::optional<TSNode> last = last_member(k.body);
    if (first && last && start_row(*first) > node_row) {
      const bool closes_below =
          python || last_row_of(*last) < node_last || is_preproc_block(type_of(k.def));
      if (closes_below) {
        container = true;
        header_last = start_row(*first) - 1;
      }
    }
  }

  const auto index = static_cast<int32_t>(units_.size());
  if (container) {
    u.container = true;
    u.last_row = header_last;
    u.full = rows_text(file_, first_row, header_last);
    if (!is_preproc_block(type_of(k.def)) && type_of(k.def) != "linkage_specification") {
      const std::string doc = doc_line();
      u.signature = store(container_header(file_, node, k.body, u.indent, doc, true));
      u.name_form = store(container_header(file_, node, k.body, u.indent, doc, false));
    } else if (is_preproc_block(type_of(k.def))) {
      // Its directive row alone (`#ifndef X_H`): holding one member of an include guard must
      // not cost the guard's whole header (a license, #defines, includes: hundreds of tokens).
      u.name_form = rows_text(file_, node_row, node_row);
    }
    units_.push_back(u);
    Context inner = ctx;
    if (k.kind == UnitKind::Class) inner = Context{true, simple_name(k.name)};
    const int64_t members_end = members(k.body, index, header_last, inner);
    const auto last = static_cast<uint32_t>(std::max<int64_t>(members_end, header_last));
    Unit& c = units_[static_cast<std::size_t>(index)];
    if (node_last > last) {
      c.close_first = last + 1;
      c.close_last = node_last;
      c.close = rows_text(file_, c.close_first, c.close_last);
    }
    covered = std::max<int64_t>(last, node_last);
    c.end_row = static_cast<uint32_t>(covered);
    return index;
  }

  u.last_row = node_last;
  u.end_row = node_last;
  u.full = rows_text(file_, first_row, node_last);
  std::string sig;
  switch (k.kind) {
    case UnitKind::Function:
    case UnitKind::Method:
    case UnitKind::Constructor:
      sig = function_signature(file_, node, k.def, u.indent, doc_line());
      if (sig.empty() && first_row < node_row) {
        // A prototype (no body: a C/C++ declaration, an interface or abstract method) under a
        // comment block: its own rows under the first doc line, so that a long comment does
        // not leave it only its name form when the declaration would fit.
        const std::string doc = doc_line();
        if (!doc.empty()) sig = fmt::format("{}{} {}\n", u.indent, style_.doc_prefix, doc);
        sig += rows_text(file_, node_row, node_last);
      }
      break;
    case UnitKind::Global:
    case UnitKind::Field:
    case UnitKind::Import:
      sig = trimmed_declaration(file_, node, k.kind, u.indent);
      break;
    default:
      break;
  }
  if (sig.size() < u.full.size()) u.signature = store(sig);
  const std::string name =
      k.kind == UnitKind::Import ? std::string(trim(u.name)) : std::string(u.name);
  if (k.kind != UnitKind::Statement) {
    u.name_form = store(name_line(style_, u.indent, k.kind, name));
    if (u.name_form.size() >= u.full.size()) u.name_form = {};
  }
  units_.push_back(u);
  covered = node_last;
  return index;
}

bool Extractor::branches_define(TSNode node) const {
  std::vector<TSNode> branches{node};
  for (uint32_t i = 0, k = ts_node_named_child_count(node); i < k; ++i) {
    const TSNode c = ts_node_named_child(node, i);
    if (is_python_clause(type_of(c))) branches.push_back(c);
  }
  for (TSNode b : branches) {
    const TSNode block = branch_block(b);
    if (ts_node_is_null(block)) return false;
    const std::optional<TSNode> first = first_member(block, false);
    if (!first || start_row(*first) <= start_row(b)) return false;  // `if x: def f(): ...`
  }
  for (TSNode b : branches) {
    const TSNode block = branch_block(b);
    for (uint32_t i = 0, k = ts_node_named_child_count(block); i < k; ++i) {
      const TSNode c = ts_node_named_child(block, i);
      const std::string_view t = type_of(c);
      if (is_any(t, {"function_definition", "class_definition", "decorated_definition"}) ||
          (is_python_branching(t) && branches_define(c))) {
        return true;
      }
    }
  }
  return false;
}

int32_t Extractor::add_branch(TSNode node, TSNode block, uint32_t first_row, int32_t parent,
                              const Context& ctx, int64_t& covered) {
  const uint32_t body_row = start_row(*first_member(block, false));
  Unit u;
  u.kind = UnitKind::Namespace;
  u.file = file_index_;
  u.first_row = first_row;
  u.row_byte = row_start(first_row);
  // The branch's own bytes: the header through its block (an `if`'s clauses are units of
  // their own), so that a cursor in the else branch is not inside the if branch.
  u.node_start = ts_node_start_byte(node);
  u.node_end = ts_node_end_byte(block);
  u.parent = parent;
  u.indent = indent_of(start_row(node));
  u.container = true;
  u.last_row = body_row - 1;
  u.full = rows_text(file_, first_row, u.last_row);
  // Named by its header ("if sys.version_info >= (3, 8)", "except ImportError"); the header
  // rows are short, so it has no signature or name form of its own.
  std::string_view header = trim(rows_text(file_, start_row(node), start_row(node)));
  if (!header.empty() && header.back() == ':') header.remove_suffix(1);
  u.name = header;
  const auto index = static_cast<int32_t>(units_.size());
  units_.push_back(u);
  const int64_t end = members(block, index, u.last_row, ctx);
  Unit& c = units_[static_cast<std::size_t>(index)];
  c.end_row = static_cast<uint32_t>(std::max<int64_t>(end, c.last_row));
  covered = c.end_row;
  return index;
}

int32_t Extractor::add_branches(TSNode node, uint32_t first_row, int32_t parent, const Context& ctx,
                                int64_t& covered) {
  if (!branches_define(node)) return -1;
  const int32_t first = add_branch(node, branch_block(node), first_row, parent, ctx, covered);
  for (uint32_t i = 0, k = ts_node_named_child_count(node); i < k; ++i) {
    const TSNode clause = ts_node_named_child(node, i);
    if (!is_python_clause(type_of(clause))) continue;
    const uint32_t row = start_row(clause);
    const int64_t gap_first = covered + 1, gap_last = static_cast<int64_t>(row) - 1;
    const uint32_t blank = gap_last < gap_first ? 0
                           : blank_rows(gap_first, gap_last)
                               ? static_cast<uint32_t>(gap_last - gap_first + 1)
                               : UINT32_MAX;
    const int32_t index = add_branch(clause, branch_block(clause), row, parent, ctx, covered);
    units_[static_cast<std::size_t>(index)].blank_before = blank;
  }
  return first;
}

int64_t Extractor::members(TSNode holder, int32_t parent, int64_t covered, const Context& ctx) {
  int64_t pending_first = -1, pending_last = -1;  // a comment block that may lead a unit
  int32_t last_sibling = -1;
  for_each_named_child(holder, [&](TSNode c, const char* f) {
    if (!descend_ && is_holder_field(f)) return;
    if (type_of(c) == "ERROR") {
      // Text the grammar could not place (`#ifdef __cplusplus extern "C" { #endif` wraps
      // the rest of a file in one): its children are members here, not one giant unit.
      covered = members(c, parent, covered, ctx);
      last_sibling = -1;
      pending_first = -1;
      return;
    }
    const uint32_t s = start_row(c), e = last_row_of(c);
    if (descend_ && static_cast<int64_t>(s) <= covered && static_cast<int64_t>(e) > covered) {
      // Opening by rows (split_rows): a child that starts on a row already covered (the
      // header's) but runs below it is opened in turn; its children on rows of their own
      // become members.
      covered = members(c, parent, covered, ctx);
      last_sibling = -1;
      pending_first = -1;
      return;
    }
    if (static_cast<int64_t>(s) <= covered) {
      // Shares a row with what came before: rows are never split, so it joins that unit.
      if (last_sibling >= 0 && static_cast<int64_t>(e) > covered) {
        extend(last_sibling, e, ts_node_end_byte(c));
        covered = e;
      }
      pending_first = -1;
      return;
    }
    if (is_leading_decoration(c)) {
      if (pending_first >= 0 && pending_last + 1 >= static_cast<int64_t>(s)) {
        pending_last = e;
      } else {
        pending_first = s;
        pending_last = e;
      }
      return;
    }
    uint32_t first = s;
    if (pending_first >= 0 && pending_last + 1 >= static_cast<int64_t>(s)) {
      first = static_cast<uint32_t>(pending_first);
    }
    pending_first = -1;
    const int64_t gap_first = covered + 1, gap_last = static_cast<int64_t>(first) - 1;
    const int32_t blank = gap_last < gap_first ? 0
                          : blank_rows(gap_first, gap_last)
                              ? static_cast<int32_t>(gap_last - gap_first + 1)
                              : -1;
    int64_t unit_end = covered;
    int32_t index = -1;
    if (ctx.module && lang_.name() == "python" && is_python_branching(type_of(c))) {
      index = add_branches(c, first, parent, ctx, unit_end);
    }
    if (index < 0) index = add_unit(c, first, parent, ctx, unit_end);
    units_[static_cast<std::size_t>(index)].blank_before = blank < 0 ? UINT32_MAX : blank;
    covered = unit_end;
    last_sibling = index;
  });
  return covered;
}

bool Extractor::split(uint32_t index) {
  const Unit& u = units_[index];
  if (u.container) return false;
  const TSNode node = unit_node(file_, u);
  if (ts_node_is_null(node)) return false;
  return split_body(index, node) || split_rows(index, node);
}

bool Extractor::split_body(uint32_t index, TSNode node) {
  const Unit u = units_[index];
  // The block to open: a function's body (through decorators, export, template), else the
  // statement's own body / consequence / block child.
  TSNode def = node;
  for (int step = 0; step < 3; ++step) {
    const std::string_view t = type_of(def);
    TSNode inner{};
    if (t == "decorated_definition") inner = field(def, "definition");
    if (t == "export_statement") inner = field(def, "declaration");
    if (t == "template_declaration" && ts_node_named_child_count(def) > 0) {
      inner = ts_node_named_child(def, ts_node_named_child_count(def) - 1);
    }
    if (ts_node_is_null(inner)) break;
    def = inner;
  }
  TSNode body = field(def, "body");
  if (ts_node_is_null(body)) body = field(def, "consequence");
  if (ts_node_is_null(body)) {
    for_each_named_child(def, [&](TSNode c, const char*) {
      if (ts_node_is_null(body) && is_any(type_of(c), {"block", "compound_statement",
                                                       "statement_block", "declaration_list"})) {
        body = c;
      }
    });
  }
  if (ts_node_is_null(body)) return false;
  if (error_before(scan_.get(), def, body)) return false;  // split_rows opens it
  // A body may hold a single block (a Python function's `block`, a C `compound_statement`).
  const std::optional<TSNode> first = first_member(body, false);
  const std::optional<TSNode> last = last_member(body);
  const uint32_t node_last = last_row_of(node);
  if (!first || !last || start_row(*first) <= ts_node_start_point(node).row ||
      start_row(*first) <= u.first_row) {
    return false;
  }
  // Clauses after the body (else, elif, except, catch, finally): not closing rows but
  // statements of their own, after the container at its level, each shown whole or elided.
  // Kept in the closing rows, a long else branch would be shown whenever the cursor sits in
  // the if branch.
  std::vector<TSNode> clauses;
  const uint32_t body_end = ts_node_end_byte(body);
  for_each_named_child(def, [&](TSNode c, const char*) {
    if (ts_node_start_byte(c) >= body_end && !is_comment(c)) clauses.push_back(c);
  });
  // The body's closing brace needs a row below its last member's.
  if (!style_.indented_body && last_row_of(*last) >= last_row_of(body)) return false;

  Unit& c = units_[index];
  c.container = true;
  c.last_row = start_row(*first) - 1;
  c.full = rows_text(file_, c.first_row, c.last_row);
  c.signature = {};  // the header of a split function is its real first rows
  c.name_form = {};
  const Context ctx{false, {}};
  const int64_t end = members(body, static_cast<int32_t>(index), c.last_row, ctx);
  if (!clauses.empty() && static_cast<int64_t>(start_row(clauses.front())) <= end) {
    // A clause shares the last member's row: it stays in the closing rows.
    clauses.clear();
  }
  const uint32_t close_last = clauses.empty() ? node_last : start_row(clauses.front()) - 1;
  Unit& again = units_[index];
  again.end_row = static_cast<uint32_t>(std::max<int64_t>(end, again.last_row));
  if (close_last > end) {
    again.close_first = static_cast<uint32_t>(end + 1);
    again.close_last = close_last;
    again.close = rows_text(file_, again.close_first, again.close_last);
    again.end_row = close_last;
  }
  int64_t covered = again.end_row;
  int32_t last_clause = -1;
  for (TSNode clause : clauses) {
    if (static_cast<int64_t>(start_row(clause)) <= covered) {
      if (last_clause >= 0 && static_cast<int64_t>(last_row_of(clause)) > covered) {
        extend(last_clause, last_row_of(clause), ts_node_end_byte(clause));
        covered = last_row_of(clause);
      }
      continue;
    }
    last_clause = add_unit(clause, start_row(clause), u.parent, ctx, covered);
    units_[static_cast<std::size_t>(last_clause)].blank_before = 0;
  }
  if (last_clause >= 0 && node_last > covered) {
    extend(last_clause, node_last, ts_node_end_byte(node));
  }
  return true;
}

bool Extractor::split_rows(uint32_t index, TSNode node) {
  const Unit u = units_[index];
  const uint32_t node_row = start_row(node), node_last = last_row_of(node);
  if (node_last <= node_row) return false;
  const std::size_t before = units_.size();
  units_[index].container = true;
  const Context ctx =
      u.kind == UnitKind::Class ? Context{true, simple_name(u.name)} : Context{false, {}};
  descend_ = true;
  const int64_t end = members(node, static_cast<int32_t>(index), node_row, ctx);
  descend_ = false;
  uint32_t first_row = UINT32_MAX;
  std::size_t first_unit = before;
  for (std::size_t i = before; i < units_.size(); ++i) {
    if (units_[i].parent == static_cast<int32_t>(index) && units_[i].first_row < first_row) {
      first_row = units_[i].first_row;
      first_unit = i;
    }
  }
  if (first_row == UINT32_MAX || first_row <= u.first_row) {
    units_.resize(before);
    units_[index] = u;
    return false;
  }
  units_[first_unit].blank_before = 0;
  Unit& c = units_[index];
  c.last_row = first_row - 1;
  c.full = rows_text(file_, c.first_row, c.last_row);
  c.signature = {};
  c.name_form = {};
  c.end_row = static_cast<uint32_t>(std::max<int64_t>(end, node_last));
  if (node_last > end) {
    c.close_first = static_cast<uint32_t>(end + 1);
    c.close_last = node_last;
    c.close = rows_text(file_, c.close_first, c.close_last);
  }
  return true;
}

}  // namespace

uint32_t last_row_of(TSNode node) {
  const TSPoint s = ts_node_start_point(node), e = ts_node_end_point(node);
  return e.column == 0 && e.row > s.row ? e.row - 1 : e.row;
}

std::string_view rows_text(const ast::ParsedFile& file, uint32_t first, uint32_t last) {
  const std::string_view src = file.source();
  const uint32_t start = file.byte_at(TSPoint{first, 0});
  const uint32_t end = last + 1 < file.row_count() ? file.byte_at(TSPoint{last + 1, 0})
                                                   : static_cast<uint32_t>(src.size());
  return src.substr(start, end - start);
}

TSNode unit_node(const ast::ParsedFile& file, const Unit& unit) {
  // The outermost node below the root spanning exactly node_start..node_end, else the deepest
  // one containing that range: what ts_node_descendant_for_byte_range and a climb through
  // ts_node_parent while the range stays the same give, in one descent (ts_node_parent walks
  // down from the root each time, O(depth x siblings) per step: on a file whose tail is one
  // ERROR node with thousands of children that was most of the call). Siblings end in
  // order, so at each level the first child ending at or after max(end, start + 1) is the
  // only one that can contain the range (zero-width children never do): it does when it
  // starts at or before the range.
  const uint32_t s = unit.node_start, e = unit.node_end;
  const uint32_t goal = std::max(e, s == UINT32_MAX ? s : s + 1);
  const TSNode root = file.root();
  TreeCursor tc(root);
  TSTreeCursor* c = tc.get();
  TSNode found = root;
  while (ts_tree_cursor_goto_first_child_for_byte(c, goal) >= 0) {
    const TSNode n = ts_tree_cursor_current_node(c);
    if (ts_node_start_byte(n) > s) break;
    found = n;
    if (ts_node_start_byte(n) == s && ts_node_end_byte(n) == e) break;
  }
  return found;
}

std::vector<Unit> extract_units(const ast::ParsedFile& file, uint32_t file_index,
                                graph::Arena& arena, const ExtractOptions& options) {
  std::vector<Unit> units;
  units.reserve(64);
  Extractor x(file, file_index, arena, options, units);
  x.members(file.root(), -1, -1, Context{false, {}, true});
  return units;
}

std::shared_ptr<const FileUnits> extract_file_units(std::shared_ptr<const ast::ParsedFile> file,
                                                    const ExtractOptions& options) {
  auto out = std::make_shared<FileUnits>();
  out->file = std::move(file);
  out->options = options;
  out->units = extract_units(*out->file, 0, out->arena, options);
  return out;
}

bool split_unit(const ast::ParsedFile& file, std::vector<Unit>& units, uint32_t index,
                graph::Arena& arena, const ExtractOptions& options) {
  if (index >= units.size()) return false;
  Extractor x(file, units[index].file, arena, options, units);
  return x.split(index);
}

}  // namespace vsynth::stages::context
