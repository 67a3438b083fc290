// The per-language data of stages/ast, kept apart from the code that uses it: which grammar,
// which file extensions, and which tree-sitter node types are functions, classes, namespaces,
// imports, package declarations and identifiers. Adding a language is adding one entry in
// language_table.cpp (and its grammar in scripts/setup-grammars.sh), no code.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <span>
#include <string_view>

namespace vsynth::stages::ast {

// How a definition node's name is found.
enum class NameFrom : uint8_t {
  None,             // anonymous (a lambda): maybe named by a NamingParent
  Field,            // the text of child field `field` ("name")
  FirstNamedChild,  // the text of the first named child (Go's package_clause)
  DeclaratorChain,  // C/C++: follow field `field` ("declarator") down through pointer/function
                    // declarators to the identifier (or qualified name) at the bottom
  Text,             // the node's own text (imports: the whole statement)
};

struct KindRule {
  std::string_view kind;  // node type as the grammar names it ("function_definition")
  NameFrom name_from = NameFrom::None;
  std::string_view field = {};
  // The node counts only when it has this field: `struct s { ... }` (field "body") is a class,
  // `struct s x;` is a mere reference. Empty: always counts.
  std::string_view requires_field = {};
  // Functions only: the field that names the owner type when no class node encloses the
  // method (Go's `func (s *Server) Run()` has receiver `*Server`). Empty: none.
  std::string_view owner_field = {};
};

// An anonymous function takes its name from its parent when the parent is one of these:
// `const f = () => 1` names the arrow function `f` through variable_declarator's field `name`.
struct NamingParent {
  std::string_view parent_kind;
  std::string_view field;
};

struct NodeTable {
  std::span<const KindRule> functions;            // functions, methods, lambdas
  std::span<const KindRule> classes;              // classes, structs, interfaces, traits, impls
  std::span<const KindRule> namespaces;           // namespaces and modules declared in the file
  std::span<const KindRule> imports;              // import / include / use statements
  std::span<const KindRule> packages;             // the file's own package declaration (Go, Java)
  std::span<const std::string_view> identifiers;  // leaf kinds that name something
  std::span<const NamingParent> naming_parents;
};

struct LanguageSpec {
  std::string_view name;                         // "python"
  std::span<const std::string_view> extensions;  // with the dot, lower case: ".py"
  const TSLanguage* (*grammar)();                // tree_sitter_python
  NodeTable nodes;
  // Blocks end where indentation does (Python): a tree-sitter block stops at its last
  // statement, so a cursor on a fresh indented line below it is placed by its indentation.
  bool indent_scoped = false;
  // Statement kinds whose error-free subtrees can hold no import (the grammar allows none
  // inside them: Python's simple statements). The anchor's import search does not walk into
  // them; a subtree with a syntax error is walked all the same (error recovery can nest
  // anything). Empty: every subtree is walked.
  std::span<const std::string_view> import_free = {};
};

// Every language this build knows, in a fixed order.
std::span<const LanguageSpec> language_specs();

}  // namespace vsynth::stages::ast
