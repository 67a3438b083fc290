#include "stages/context/summarize.h"

#include <fmt/format.h>

#include <cctype>
#include <string>

#include "base/strings.h"
#include "stages/context/ts_util.h"

namespace vsynth::stages::context {

namespace {

bool has_text(std::string_view s) {
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) return true;
  }
  return false;
}

// One comment line without its markers: "/// Adds two." -> "Adds two.".
std::string_view strip_comment_markers(std::string_view line) {
  line = trim(line);
  for (std::string_view m : {"///", "//!", "//", "/**", "/*!", "/*", "#", "--", "*"}) {
    if (line.substr(0, m.size()) == m) {
      line.remove_prefix(m.size());
      break;
    }
  }
  if (line.size() >= 2 && line.substr(line.size() - 2) == "*/") line.remove_suffix(2);
  return trim(line);
}

// A docstring's first line with text: the string node's content, prefix letters and quotes
// stripped.
std::string docstring_line(std::string_view literal) {
  std::size_t q = literal.find_first_of("\"'");
  if (q == std::string_view::npos) return {};
  const char quote = literal[q];
  const std::size_t n = literal.compare(q, 3, std::string(3, quote)) == 0 ? 3 : 1;
  std::string_view body = literal.substr(q + n);
  if (body.size() >= n) body.remove_suffix(n);
  while (!body.empty()) {
    const std::size_t nl = body.find('\n');
    const std::string_view line = trim(body.substr(0, nl));
    if (has_text(line)) return std::string(line);
    if (nl == std::string_view::npos) break;
    body.remove_prefix(nl + 1);
  }
  return {};
}

std::string_view slice(const ast::ParsedFile& file, uint32_t start, uint32_t end) {
  const std::string_view src = file.source();
  if (end < start) end = start;
  return src.substr(start, end - start);
}

// The docstring node of a Python function or class body, if it has one.
TSNode python_docstring(TSNode def_node) {
  const TSNode body = field(def_node, "body");
  if (ts_node_is_null(body) || ts_node_named_child_count(body) == 0) return TSNode{};
  const TSNode first = ts_node_named_child(body, 0);
  if (std::string_view(ts_node_type(first)) != "expression_statement") return TSNode{};
  if (ts_node_named_child_count(first) != 1) return TSNode{};
  const TSNode s = ts_node_named_child(first, 0);
  return std::string_view(ts_node_type(s)) == "string" ? s : TSNode{};
}

// The first descendant (breadth-first, at most 3 levels down) holding the initializer of a
// declaration: field `value` (C, Go, Rust, JS/TS, Java) or `right` (a Python assignment).
TSNode initializer(TSNode n) {
  TSNode level[16];
  std::size_t count = 0;
  level[count++] = n;
  for (int depth = 0; depth < 4 && count > 0; ++depth) {
    TSNode next[16];
    std::size_t next_count = 0;
    for (std::size_t i = 0; i < count; ++i) {
      for (const char* f : {"value", "right"}) {
        const TSNode v = field(level[i], f);
        if (!ts_node_is_null(v)) return v;
      }
      const uint32_t children = ts_node_named_child_count(level[i]);
      for (uint32_t c = 0; c < children && next_count < 16; ++c) {
        next[next_count++] = ts_node_named_child(level[i], c);
      }
    }
    std::copy(next, next + next_count, level);
    count = next_count;
  }
  return TSNode{};
}

// The node's text with comments dropped and every whitespace run (newlines included) turned
// into one space; no space after an opening bracket or before a closing one or a comma.
std::string collapse(const ast::ParsedFile& file, TSNode node) {
  std::string out;
  const std::string_view src = file.source();
  uint32_t pos = ts_node_start_byte(node);
  const uint32_t end = ts_node_end_byte(node);
  auto append = [&](uint32_t from, uint32_t to) {
    for (uint32_t i = from; i < to; ++i) {
      const char c = src[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!out.empty() && out.back() != ' ') out.push_back(' ');
      } else {
        if ((c == ')' || c == '}' || c == ']' || c == ',') && !out.empty() && out.back() == ' ') {
          out.pop_back();
        }
        if (!out.empty() && out.back() == ' ' && out.size() >= 2 &&
            (out[out.size() - 2] == '(' || out[out.size() - 2] == '{' ||
             out[out.size() - 2] == '[')) {
          out.pop_back();
        }
        out.push_back(c);
      }
    }
  };
  walk(node, [&](TSNode n) {
    if (is_comment(n)) {
      append(pos, ts_node_start_byte(n));
      pos = ts_node_end_byte(n);
      return false;
    }
    return true;
  });
  append(pos, end);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::string first_doc_line(const ast::ParsedFile& file, TSNode def_node,
                           std::string_view comments) {
  if (file.language().name() == "python" && !ts_node_is_null(def_node)) {
    const TSNode doc = python_docstring(def_node);
    if (!ts_node_is_null(doc)) {
      std::string line = docstring_line(file.text(doc));
      if (!line.empty()) return line;
    }
  }
  const bool python = file.language().name() == "python";
  while (!comments.empty()) {
    const std::size_t nl = comments.find('\n');
    const std::string_view raw = trim(comments.substr(0, nl));
    // Only comment rows: not attributes (`#[derive]`), decorators or access labels.
    const bool comment_row =
        python ? raw.substr(0, 1) == "#"
               : raw.substr(0, 2) == "//" || raw.substr(0, 2) == "/*" || raw.substr(0, 1) == "*";
    const std::string_view line = comment_row ? strip_comment_markers(raw) : std::string_view();
    if (has_text(line)) return std::string(line.substr(0, 200));
    if (nl == std::string_view::npos) break;
    comments.remove_prefix(nl + 1);
  }
  return {};
}

std::string function_signature(const ast::ParsedFile& file, TSNode unit_node, TSNode def_node,
                               std::string_view indent, std::string_view doc) {
  const TSNode body = field(def_node, "body");
  if (ts_node_is_null(body)) return {};
  const std::string_view lang = file.language().name();
  const LangStyle& style = style_for(lang);
  uint32_t end = ts_node_start_byte(body);
  if (lang == "c" || lang == "cpp") {
    // Up to the declarator: a constructor's member-initializer list is body, not signature.
    const TSNode decl = field(def_node, "declarator");
    if (!ts_node_is_null(decl)) end = ts_node_end_byte(decl);
  }
  const std::string_view header = base::trim_right(slice(file, ts_node_start_byte(unit_node), end));
  std::string out;
  if (style.indented_body) {
    out = fmt::format("{}{}\n", indent, header);
    if (!doc.empty() && doc.find("\"\"\"") == std::string_view::npos) {
      out += fmt::format("{}    \"\"\"{}\"\"\"\n", indent, doc);
    }
    out += fmt::format("{}    {}\n", indent, style.body_placeholder);
    return out;
  }
  if (!doc.empty()) out = fmt::format("{}{} {}\n", indent, style.doc_prefix, doc);
  out += fmt::format("{}{}{}\n", indent, header, style.body_placeholder);
  return out;
}

std::string container_header(const ast::ParsedFile& file, TSNode unit_node, TSNode body,
                             std::string_view indent, std::string_view doc, bool with_doc) {
  if (ts_node_is_null(body)) return {};
  const LangStyle& style = style_for(file.language().name());
  const std::string_view header =
      base::trim_right(slice(file, ts_node_start_byte(unit_node), ts_node_start_byte(body)));
  if (header.empty()) return {};
  std::string out;
  if (style.indented_body) {
    out = fmt::format("{}{}\n", indent, header);
    if (with_doc && !doc.empty() && doc.find("\"\"\"") == std::string_view::npos) {
      out += fmt::format("{}    \"\"\"{}\"\"\"\n", indent, doc);
    }
    return out;
  }
  if (with_doc && !doc.empty()) out = fmt::format("{}{} {}\n", indent, style.doc_prefix, doc);
  const bool opens = !file.text(body).empty() && file.text(body).front() == '{';
  out += fmt::format("{}{}{}\n", indent, header, opens ? " {" : "");
  return out;
}

std::string trimmed_declaration(const ast::ParsedFile& file, TSNode unit_node, UnitKind kind,
                                std::string_view indent) {
  const std::string_view text = file.text(unit_node);
  if (kind == UnitKind::Import) {
    std::string collapsed = collapse(file, unit_node);
    if (collapsed.size() >= text.size()) return {};
    return fmt::format("{}{}\n", indent, collapsed);
  }
  if (kind != UnitKind::Global && kind != UnitKind::Field) return {};
  const TSNode value = initializer(unit_node);
  if (ts_node_is_null(value)) return {};
  const bool spans_rows = ts_node_start_point(value).row != ts_node_end_point(value).row;
  if (!spans_rows && file.text(value).size() <= 48) return {};
  const LangStyle& style = style_for(file.language().name());
  const std::string_view before =
      base::trim_right(slice(file, ts_node_start_byte(unit_node), ts_node_start_byte(value)));
  const std::string_view after =
      trim(slice(file, ts_node_end_byte(value), ts_node_end_byte(unit_node)));
  if (after.find('\n') != std::string_view::npos) return {};  // more declarators follow
  return fmt::format("{}{} {}{}\n", indent, before, style.value_placeholder, after);
}

std::string name_line(const LangStyle& style, std::string_view indent, UnitKind kind,
                      std::string_view name) {
  if (name.empty()) return {};
  std::string one_line(name.substr(0, 120));
  for (char& c : one_line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return fmt::format("{}{} {} {}\n", indent, style.comment, to_string(kind), one_line);
}

}  // namespace vsynth::stages::context
