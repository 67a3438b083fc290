#include "stages/ast/anchor_stage.h"

#include <fmt/format.h>

#include <limits>
#include <utility>

#include "stages/ast/error.h"
#include "stages/ast/language_guess.h"
#include "stages/facets/task_file.h"

namespace vsynth::stages::ast {

namespace {

const nlohmann::json* lookup(const nlohmann::json& data, const nlohmann::json::json_pointer& p) {
  return data.contains(p) ? &data.at(p) : nullptr;
}

const std::string& string_field(const graph::Item& item, const nlohmann::json::json_pointer& p) {
  const nlohmann::json* v = lookup(item.task().data, p);
  if (!v || !v->is_string()) {
    throw AstError(fmt::format("task `{}`: field {} must be a string ({})", item.id(),
                               p.to_string(),
                               v ? fmt::format("got {}", v->type_name()) : "absent"));
  }
  return v->get_ref<const std::string&>();
}

uint32_t cursor_number(const graph::Item& item, const nlohmann::json::json_pointer& p,
                       const nlohmann::json& cursor, const char* key) {
  const auto it = cursor.find(key);
  if (it == cursor.end() || !it->is_number_integer() || it->get<int64_t>() < 0 ||
      it->get<int64_t>() > std::numeric_limits<uint32_t>::max()) {
    throw AstError(fmt::format("task `{}`: {}/{} must be a non-negative integer ({})", item.id(),
                               p.to_string(), key,
                               it == cursor.end() ? "absent" : fmt::format("got {}", it->dump())));
  }
  return static_cast<uint32_t>(it->get<int64_t>());
}

nlohmann::json point_json(TSPoint p) {
  return {{"row", p.row}, {"column", p.column}};
}

nlohmann::json node_json(const NodeInfo& n) {
  return {{"type", n.type},
          {"name", n.name},
          {"start", point_json(n.span.start)},
          {"end", point_json(n.span.end)}};
}

}  // namespace

nlohmann::json AnchorFacet::to_json() const {
  const Anchor& a = anchor_;
  nlohmann::json j;
  j["path"] = file_->path();
  j["language"] = file_->language().name();
  j["cursor"] = {{"byte", a.byte}, {"row", a.point.row}, {"column", a.point.column}};
  j["node"] = {{"type", a.node.type},
               {"start", point_json(a.node.span.start)},
               {"end", point_json(a.node.span.end)}};
  j["function"] = a.function ? node_json(*a.function) : nlohmann::json();
  j["class"] = a.enclosing_class ? node_json(*a.enclosing_class) : nlohmann::json();
  j["module"] = {{"type", a.module.type}, {"package", a.module.name}};
  j["scopes"] = nlohmann::json::array();
  for (const Scope& s : a.scopes) {
    j["scopes"].push_back(
        {{"kind", to_string(s.kind)}, {"type", s.info.type}, {"name", s.info.name}});
  }
  j["imports"] = nlohmann::json::array();
  for (const NodeInfo& i : a.imports) j["imports"].push_back(i.name);
  j["identifiers"] = nlohmann::json::array();
  for (const Reference& r : a.identifiers) {
    j["identifiers"].push_back({{"name", r.name}, {"distance", r.distance}});
  }
  j["syntax_errors"] = file_->has_errors();
  return j;
}

AnchorStage::AnchorStage(const graph::StageContext& ctx)
    : path_(ctx.params.pointer("path_field")),
      source_(ctx.params.pointer("source_field")),
      cursor_(ctx.params.pointer("cursor_field")),
      language_(ctx.params.pointer("language_field")),
      one_based_(ctx.params.string("cursor_base") == "one"),
      options_{static_cast<std::size_t>(ctx.params.integer("max_identifiers"))},
      ok_(ctx.port("ok")) {
  if (const int64_t mb = ctx.params.integer("cache_mb"); mb > 0) {
    cache_ = std::make_unique<ParseCache>(static_cast<std::size_t>(mb) << 20,
                                          ctx.params.boolean("cache_edits"));
  }
}

namespace {

// The file names in the task's /files (the entries that have one; context.deps reports any
// malformed entry).
std::vector<std::string> listed_paths(const nlohmann::json& data) {
  std::vector<std::string> out;
  const auto it = data.find("files");
  if (it == data.end() || !it->is_array()) return out;
  for (const nlohmann::json& f : *it) {
    if (f.is_object() && f.contains("path") && f["path"].is_string()) {
      out.push_back(f["path"].get<std::string>());
    }
  }
  return out;
}

}  // namespace

graph::Port AnchorStage::process(graph::Item& item) {
  const nlohmann::json& data = item.task().data;
  auto& tf = item.emplace<facets::TaskFileFacet>();
  std::string path;
  const Language* language = nullptr;
  const nlohmann::json* l = lookup(data, language_);
  if (const nlohmann::json* p = lookup(data, path_); p && !p->is_null()) {
    path = string_field(item, path_);
    if (l && !l->is_null()) {
      language = &Language::named(string_field(item, language_));
      tf.language_from = "task";
    } else {
      language = &Language::for_path(path);
      tf.language_from = "path";
    }
  } else {
    // No file name (an editor's request): the language from the task, the other files' names
    // or the text; none of them: an anonymous buffer the context stages pass on untouched.
    tf.named = false;
    if (l && l->is_string()) {
      language = language_for_name(l->get_ref<const std::string&>());
      tf.language_from = "task";
    }
    if (!language) {
      language = language_from_paths(listed_paths(data));
      tf.language_from = "files";
    }
    if (!language) {
      language = detect_language(string_field(item, source_));
      tf.language_from = "text";
    }
    if (!language) {
      tf.language_from = "none";
      tf.path = "untitled";
      return ok_;
    }
    path = "untitled" + std::string(language->extensions().front());
  }
  tf.path = path;
  tf.language = std::string(language->name());

  const nlohmann::json* c = lookup(data, cursor_);
  if (!c || !c->is_object()) {
    throw AstError(fmt::format(
        "task `{}`: field {} must be an object {{\"line\": L, \"column\": "
        "C}} or {{\"offset\": B}} ({})",
        item.id(), cursor_.to_string(), c ? fmt::format("got {}", c->dump()) : "absent"));
  }
  const bool by_offset = c->contains("offset");
  const uint32_t offset = by_offset ? cursor_number(item, cursor_, *c, "offset") : 0;
  const uint32_t line = by_offset ? 0 : cursor_number(item, cursor_, *c, "line");
  const uint32_t column = by_offset ? 0 : cursor_number(item, cursor_, *c, "column");
  const Cursor cursor = by_offset    ? Cursor::at_byte(offset)
                        : one_based_ ? Cursor::at_one_based(line, column)
                                     : Cursor::at(line, column);

  // Built in place and never moved: the anchor's string views point into its source.
  std::shared_ptr<const ParsedFile> file;
  std::string_view how = "parsed";
  if (cache_) {
    ParseCache::Result r = cache_->parse(path, *language, string_field(item, source_));
    file = std::move(r.file);
    how = to_string(r.outcome);
  } else {
    file = std::make_shared<const ParsedFile>(std::move(path), *language,
                                              std::string(string_field(item, source_)));
  }
  Anchor a = anchor(*file, cursor, options_);
  item.emplace<AnchorFacet>(std::move(file), std::move(a), how);
  return ok_;
}

graph::Contract anchor_contract() {
  graph::Contract c;
  c.kind = "ast.anchor";
  c.summary =
      "Parses the task's file with tree-sitter and locates its cursor: node, enclosing "
      "function/class, scopes, imports, nearby identifiers";
  // One parser per request; the parse cache is the only shared state and locks itself.
  c.concurrency = graph::Concurrency::unlimited();
  // task_file: which file the cursor is in and how its language was chosen; an anonymous
  // buffer (no name, no language found) gets it without an anchor (stages/facets/task_file.h).
  c.provides_facets = {std::string(AnchorFacet::kName), std::string(facets::TaskFileFacet::kName)};
  c.reads_task_file = true;
  c.ports = {{"ok", "the cursor was located (the file may still hold syntax errors)", false}};
  c.params = {
      graph::P::pointer("path_field", "/path",
                        "JSON pointer to the file name; its extension picks the language. A task "
                        "without one (an editor's request) is `untitled.<ext>`, its language from "
                        "/language, else the names in /files, else the text; none found: an "
                        "anonymous buffer (no anchor; the context stages pass it on)"),
      graph::P::pointer("source_field", "/source", "JSON pointer to the file's text"),
      graph::P::pointer("cursor_field", "/cursor",
                        "JSON pointer to {line, column} (see cursor_base) or {offset} (0-based "
                        "byte)"),
      graph::P::pointer("language_field", "/language",
                        "JSON pointer to an optional language name that overrides the extension"),
      graph::P::choice("cursor_base", "one", {"one", "zero"},
                       "line/column numbering: one (editors, compilers) or zero (tree-sitter, "
                       "LSP); columns count bytes"),
      graph::P::integer("max_identifiers", 32, 0, 100000,
                        "nearest distinct identifiers to keep (0: all in the enclosing function)"),
      graph::P::integer("cache_mb", 64, 0, 1 << 20,
                        "MiB of parsed files kept between requests, keyed by path and content "
                        "(same text: tree reused); 0: none"),
      graph::P::boolean("cache_edits", false,
                        "re-parse a changed text for a cached path incrementally from its last "
                        "version (faster while editing; tree-sitter's incremental tree is not "
                        "always a fresh parse's, so a result may then depend on earlier tasks)"),
  };
  return c;
}

}  // namespace vsynth::stages::ast
