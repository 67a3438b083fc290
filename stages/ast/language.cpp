#include "stages/ast/language.h"

#include <fmt/format.h>

#include <string>

#include "stages/ast/error.h"

namespace vsynth::stages::ast {

Language::Language(const LanguageSpec& spec) : spec_(&spec), ts_(spec.grammar()) {
  functions_ = index_rules(spec.nodes.functions);
  classes_ = index_rules(spec.nodes.classes);
  namespaces_ = index_rules(spec.nodes.namespaces);
  imports_ = index_rules(spec.nodes.imports);
  packages_ = index_rules(spec.nodes.packages);
  identifiers_ = index_names(spec.nodes.identifiers);
  import_free_ = index_names(spec.import_free);
  std::vector<std::string_view> parents;
  for (const NamingParent& p : spec.nodes.naming_parents) parents.push_back(p.parent_kind);
  naming_ = index_names(parents);
}

// Several symbols may share one name (aliases); every one of them gets the rule, and a name no
// named symbol carries is recorded as unknown.
Language::SymbolIndex Language::index_rules(std::span<const KindRule> rules) {
  std::vector<std::string_view> names;
  for (const KindRule& r : rules) names.push_back(r.kind);
  return index_names(names);
}

Language::SymbolIndex Language::index_names(std::span<const std::string_view> names) {
  const uint32_t count = ts_language_symbol_count(ts_);
  SymbolIndex index(count, 0);
  std::vector<bool> found(names.size(), false);
  for (uint32_t s = 0; s < count; ++s) {
    const auto sym = static_cast<TSSymbol>(s);
    if (ts_language_symbol_type(ts_, sym) != TSSymbolTypeRegular) continue;
    const char* sym_name = ts_language_symbol_name(ts_, sym);
    if (!sym_name) continue;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == sym_name) {
        index[s] = static_cast<uint16_t>(i + 1);
        found[i] = true;
        break;
      }
    }
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!found[i]) unknown_kinds_.emplace_back(names[i]);
  }
  return index;
}

const KindRule* Language::match(const SymbolIndex& index, std::span<const KindRule> rules,
                                TSNode node) const {
  if (ts_node_is_null(node) || !ts_node_is_named(node)) return nullptr;
  const TSSymbol sym = ts_node_symbol(node);
  if (sym >= index.size() || index[sym] == 0) return nullptr;
  const KindRule& rule = rules[index[sym] - 1];
  if (!rule.requires_field.empty() &&
      ts_node_is_null(ts_node_child_by_field_name(
          node, rule.requires_field.data(), static_cast<uint32_t>(rule.requires_field.size())))) {
    return nullptr;
  }
  return &rule;
}

bool Language::is_identifier(TSNode node) const {
  if (ts_node_is_null(node) || !ts_node_is_named(node)) return false;
  const TSSymbol sym = ts_node_symbol(node);
  return sym < identifiers_.size() && identifiers_[sym] != 0;
}

bool Language::is_import_free(TSNode node) const {
  if (ts_node_is_null(node) || !ts_node_is_named(node)) return false;
  const TSSymbol sym = ts_node_symbol(node);
  return sym < import_free_.size() && import_free_[sym] != 0;
}

std::string_view Language::naming_field(TSNode parent) const {
  if (ts_node_is_null(parent)) return {};
  const TSSymbol sym = ts_node_symbol(parent);
  if (sym >= naming_.size() || naming_[sym] == 0) return {};
  return spec_->nodes.naming_parents[naming_[sym] - 1].field;
}

std::span<const Language> Language::all() {
  static const std::vector<Language> languages = [] {
    std::vector<Language> v;
    for (const LanguageSpec& spec : language_specs()) v.emplace_back(spec);
    return v;
  }();
  return languages;
}

const Language* Language::find(std::string_view name) noexcept {
  for (const Language& l : all()) {
    if (l.name() == name) return &l;
  }
  return nullptr;
}

const Language& Language::named(std::string_view name) {
  if (const Language* l = find(name)) return *l;
  std::string valid;
  for (const Language& l : all()) valid += fmt::format("{}{}", valid.empty() ? "" : ", ", l.name());
  throw AstError(fmt::format("unknown language `{}`; valid languages: {}", name, valid));
}

namespace {

// The extension with its dot (".py"), taken after the last '/' so "a.b/file" has none.
std::string_view extension_of(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const std::size_t dot = base.find_last_of('.');
  if (dot == std::string_view::npos || dot == 0) return {};
  return base.substr(dot);
}

}  // namespace

const Language* Language::find_for_path(std::string_view path) noexcept {
  const std::string_view ext = extension_of(path);
  if (ext.empty()) return nullptr;
  for (const Language& l : all()) {
    for (std::string_view e : l.extensions()) {
      if (e == ext) return &l;
    }
  }
  return nullptr;
}

const Language& Language::for_path(std::string_view path) {
  if (const Language* l = find_for_path(path)) return *l;
  std::string valid;
  for (const Language& l : all()) {
    for (std::string_view e : l.extensions()) {
      valid += fmt::format("{}{} ({})", valid.empty() ? "" : ", ", e, l.name());
    }
  }
  const std::string_view ext = extension_of(path);
  throw AstError(
      fmt::format("cannot tell the language of `{}` from its {}; known extensions: {}", path,
                  ext.empty() ? "name (no extension)" : fmt::format("extension `{}`", ext), valid));
}

}  // namespace vsynth::stages::ast
