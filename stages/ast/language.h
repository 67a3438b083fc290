// Language registry: name <-> TSLanguage*, file extension -> language, and fast lookup of the
// node-type tables (language_table.cpp) by a node's grammar symbol.
//
//   const Language& py = Language::named("python");
//   const Language& l = Language::for_path("src/app/main.rs");   // by extension
//   if (const KindRule* r = l.function_rule(node)) ...            // is `node` a function?
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stages/ast/language_table.h"

namespace vsynth::stages::ast {

class Language {
 public:
  // Every known language, in language_table.cpp's order. Built once, thread-safe.
  static std::span<const Language> all();
  // By canonical name ("python", "c", "cpp", "go", "java", "javascript", "typescript", "tsx",
  // "rust"). `named` throws AstError listing the valid names; `find` returns null.
  static const Language* find(std::string_view name) noexcept;
  static const Language& named(std::string_view name);
  // By the file name's extension (case-sensitive, ".h" is C). `for_path` throws AstError naming
  // the path and listing the known extensions; `find_for_path` returns null.
  static const Language* find_for_path(std::string_view path) noexcept;
  static const Language& for_path(std::string_view path);

  std::string_view name() const { return spec_->name; }
  const TSLanguage* ts() const { return ts_; }
  std::span<const std::string_view> extensions() const { return spec_->extensions; }
  const NodeTable& nodes() const { return spec_->nodes; }
  // The grammar's ABI version (ts_language_version): 14 for every grammar we build.
  uint32_t abi_version() const { return ts_language_version(ts_); }
  bool indent_scoped() const { return spec_->indent_scoped; }

  // The table rule `node` matches, or null. A rule with `requires_field` matches only nodes
  // that have that field.
  const KindRule* function_rule(TSNode node) const {
    return match(functions_, nodes().functions, node);
  }
  const KindRule* class_rule(TSNode node) const { return match(classes_, nodes().classes, node); }
  const KindRule* namespace_rule(TSNode node) const {
    return match(namespaces_, nodes().namespaces, node);
  }
  const KindRule* import_rule(TSNode node) const { return match(imports_, nodes().imports, node); }
  const KindRule* package_rule(TSNode node) const {
    return match(packages_, nodes().packages, node);
  }
  bool is_identifier(TSNode node) const;
  // Whether `node` is of a kind in the spec's import_free list (its error-free subtree holds
  // no import).
  bool is_import_free(TSNode node) const;
  // The field a NamingParent of this type names its anonymous child function with, or "".
  std::string_view naming_field(TSNode parent) const;

  // Node types named in this language's table that its grammar does not define (should be
  // empty; tests check it).
  const std::vector<std::string>& unknown_kinds() const { return unknown_kinds_; }

  explicit Language(const LanguageSpec& spec);  // use all()/named()/for_path()

 private:
  // For each grammar symbol: 1 + index of the rule in its table, or 0.
  using SymbolIndex = std::vector<uint16_t>;
  const KindRule* match(const SymbolIndex& index, std::span<const KindRule> rules,
                        TSNode node) const;
  SymbolIndex index_rules(std::span<const KindRule> rules);
  SymbolIndex index_names(std::span<const std::string_view> names);

  const LanguageSpec* spec_;
  const TSLanguage* ts_;
  SymbolIndex functions_, classes_, namespaces_, imports_, packages_, identifiers_, naming_,
      import_free_;
  std::vector<std::string> unknown_kinds_;
};

}  // namespace vsynth::stages::ast
