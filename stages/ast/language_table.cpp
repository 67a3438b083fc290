// Node-type tables per language. Names are the grammars' own node types (see each grammar's
// src/node-types.json); tests/ast checks that every name here exists in its grammar, so a typo
// or a grammar upgrade that renames a node fails a test instead of silently anchoring nothing.
#include "stages/ast/language_table.h"

extern "C" {
const TSLanguage* tree_sitter_python(void);
const TSLanguage* tree_sitter_c(void);
const TSLanguage* tree_sitter_cpp(void);
const TSLanguage* tree_sitter_go(void);
const TSLanguage* tree_sitter_java(void);
const TSLanguage* tree_sitter_javascript(void);
const TSLanguage* tree_sitter_typescript(void);
const TSLanguage* tree_sitter_tsx(void);
const TSLanguage* tree_sitter_rust(void);
}

namespace vsynth::stages::ast {
namespace {

using sv = std::string_view;
using N = NameFrom;

// --- Python ---
constexpr sv kPyExt[] = {".py", ".pyi"};
constexpr KindRule kPyFunctions[] = {{"function_definition", N::Field, "name"},
                                     {"lambda", N::None}};
constexpr KindRule kPyClasses[] = {{"class_definition", N::Field, "name"}};
constexpr KindRule kPyImports[] = {{"import_statement", N::Text},
                                   {"import_from_statement", N::Text},
                                   {"future_import_statement", N::Text}};
constexpr sv kPyIdentifiers[] = {"identifier"};
constexpr NamingParent kPyNaming[] = {{"assignment", "left"}};
// The grammar's simple statements other than imports: expressions only, never a statement.
constexpr sv kPyImportFree[] = {"expression_statement", "assert_statement",   "return_statement",
                                "delete_statement",     "raise_statement",    "pass_statement",
                                "break_statement",      "continue_statement", "global_statement",
                                "nonlocal_statement",   "print_statement",    "exec_statement"};

// --- C ---
constexpr sv kCExt[] = {".c", ".h"};
constexpr KindRule kCFunctions[] = {{"function_definition", N::DeclaratorChain, "declarator"}};
constexpr KindRule kCClasses[] = {{"struct_specifier", N::Field, "name", "body"},
                                  {"union_specifier", N::Field, "name", "body"},
                                  {"enum_specifier", N::Field, "name", "body"}};
constexpr KindRule kCImports[] = {{"preproc_include", N::Text}};
constexpr sv kCIdentifiers[] = {"identifier", "field_identifier", "type_identifier"};

// --- C++ ---
constexpr sv kCppExt[] = {".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++"};
constexpr KindRule kCppFunctions[] = {{"function_definition", N::DeclaratorChain, "declarator"},
                                      {"lambda_expression", N::None}};
constexpr KindRule kCppClasses[] = {{"class_specifier", N::Field, "name", "body"},
                                    {"struct_specifier", N::Field, "name", "body"},
                                    {"union_specifier", N::Field, "name", "body"},
                                    {"enum_specifier", N::Field, "name", "body"}};
constexpr KindRule kCppNamespaces[] = {{"namespace_definition", N::Field, "name"}};
constexpr KindRule kCppImports[] = {{"preproc_include", N::Text}, {"using_declaration", N::Text}};
constexpr sv kCppIdentifiers[] = {"identifier", "field_identifier", "type_identifier",
                                  "namespace_identifier"};
constexpr NamingParent kCppNaming[] = {{"init_declarator", "declarator"}};

// --- Go ---
constexpr sv kGoExt[] = {".go"};
constexpr KindRule kGoFunctions[] = {{"function_declaration", N::Field, "name"},
                                     {"method_declaration", N::Field, "name", {}, "receiver"},
                                     {"func_literal", N::None}};
constexpr KindRule kGoClasses[] = {{"type_spec", N::Field, "name"}};
constexpr KindRule kGoImports[] = {{"import_declaration", N::Text}};
constexpr KindRule kGoPackages[] = {{"package_clause", N::FirstNamedChild}};
constexpr sv kGoIdentifiers[] = {"identifier", "field_identifier", "type_identifier",
                                 "package_identifier"};

// --- Java ---
constexpr sv kJavaExt[] = {".java"};
constexpr KindRule kJavaFunctions[] = {{"method_declaration", N::Field, "name"},
                                       {"constructor_declaration", N::Field, "name"},
                                       {"lambda_expression", N::None}};
constexpr KindRule kJavaClasses[] = {{"class_declaration", N::Field, "name"},
                                     {"interface_declaration", N::Field, "name"},
                                     {"enum_declaration", N::Field, "name"},
                                     {"record_declaration", N::Field, "name"},
                                     {"annotation_type_declaration", N::Field, "name"}};
constexpr KindRule kJavaImports[] = {{"import_declaration", N::Text}};
constexpr KindRule kJavaPackages[] = {{"package_declaration", N::FirstNamedChild}};
constexpr sv kJavaIdentifiers[] = {"identifier", "type_identifier"};
constexpr NamingParent kJavaNaming[] = {{"variable_declarator", "name"}};

// --- JavaScript ---
constexpr sv kJsExt[] = {".js", ".mjs", ".cjs", ".jsx"};
constexpr KindRule kJsFunctions[] = {{"function_declaration", N::Field, "name"},
                                     {"function_expression", N::Field, "name"},
                                     {"generator_function_declaration", N::Field, "name"},
                                     {"generator_function", N::Field, "name"},
                                     {"arrow_function", N::None},
                                     {"method_definition", N::Field, "name"}};
constexpr KindRule kJsClasses[] = {{"class_declaration", N::Field, "name"},
                                   {"class", N::Field, "name"}};
constexpr KindRule kJsImports[] = {{"import_statement", N::Text}};
constexpr sv kJsIdentifiers[] = {
    "identifier", "property_identifier", "shorthand_property_identifier",
    "shorthand_property_identifier_pattern", "private_property_identifier"};
constexpr NamingParent kJsNaming[] = {{"variable_declarator", "name"},
                                      {"pair", "key"},
                                      {"assignment_expression", "left"},
                                      {"field_definition", "property"}};

// --- TypeScript and TSX (one table: tsx is typescript plus JSX) ---
constexpr sv kTsExt[] = {".ts", ".mts", ".cts"};
constexpr sv kTsxExt[] = {".tsx"};
constexpr KindRule kTsFunctions[] = {{"function_declaration", N::Field, "name"},
                                     {"function_expression", N::Field, "name"},
                                     {"generator_function_declaration", N::Field, "name"},
                                     {"generator_function", N::Field, "name"},
                                     {"arrow_function", N::None},
                                     {"method_definition", N::Field, "name"},
                                     {"function_signature", N::Field, "name"},
                                     {"method_signature", N::Field, "name"},
                                     {"abstract_method_signature", N::Field, "name"}};
constexpr KindRule kTsClasses[] = {{"class_declaration", N::Field, "name"},
                                   {"abstract_class_declaration", N::Field, "name"},
                                   {"class", N::Field, "name"},
                                   {"interface_declaration", N::Field, "name"},
                                   {"enum_declaration", N::Field, "name"}};
constexpr KindRule kTsNamespaces[] = {{"internal_module", N::Field, "name"},
                                      {"module", N::Field, "name"}};
constexpr KindRule kTsImports[] = {{"import_statement", N::Text}, {"import_alias", N::Text}};
constexpr sv kTsIdentifiers[] = {"identifier",
                                 "property_identifier",
                                 "shorthand_property_identifier",
                                 "shorthand_property_identifier_pattern",
                                 "private_property_identifier",
                                 "type_identifier"};
constexpr NamingParent kTsNaming[] = {{"variable_declarator", "name"},
                                      {"pair", "key"},
                                      {"assignment_expression", "left"},
                                      {"public_field_definition", "name"}};

// --- Rust ---
constexpr sv kRustExt[] = {".rs"};
constexpr KindRule kRustFunctions[] = {{"function_item", N::Field, "name"},
                                       {"function_signature_item", N::Field, "name"},
                                       {"closure_expression", N::None}};
constexpr KindRule kRustClasses[] = {{"impl_item", N::Field, "type"},
                                     {"trait_item", N::Field, "name"},
                                     {"struct_item", N::Field, "name"},
                                     {"enum_item", N::Field, "name"},
                                     {"union_item", N::Field, "name"}};
constexpr KindRule kRustNamespaces[] = {{"mod_item", N::Field, "name"}};
constexpr KindRule kRustImports[] = {{"use_declaration", N::Text},
                                     {"extern_crate_declaration", N::Text}};
constexpr sv kRustIdentifiers[] = {"identifier", "field_identifier", "type_identifier",
                                   "shorthand_field_identifier"};
constexpr NamingParent kRustNaming[] = {{"let_declaration", "pattern"}};

constexpr NodeTable kTsNodes{kTsFunctions, kTsClasses,     kTsNamespaces, kTsImports,
                             {},           kTsIdentifiers, kTsNaming};

constexpr LanguageSpec kSpecs[] = {
    {"python",
     kPyExt,
     tree_sitter_python,
     {kPyFunctions, kPyClasses, {}, kPyImports, {}, kPyIdentifiers, kPyNaming},
     /*indent_scoped=*/true,
     kPyImportFree},
    {"c", kCExt, tree_sitter_c, {kCFunctions, kCClasses, {}, kCImports, {}, kCIdentifiers, {}}},
    {"cpp",
     kCppExt,
     tree_sitter_cpp,
     {kCppFunctions, kCppClasses, kCppNamespaces, kCppImports, {}, kCppIdentifiers, kCppNaming}},
    {"go",
     kGoExt,
     tree_sitter_go,
     {kGoFunctions, kGoClasses, {}, kGoImports, kGoPackages, kGoIdentifiers, {}}},
    {"java",
     kJavaExt,
     tree_sitter_java,
     {kJavaFunctions,
      kJavaClasses,
      {},
      kJavaImports,
      kJavaPackages,
      kJavaIdentifiers,
      kJavaNaming}},
    {"javascript",
     kJsExt,
     tree_sitter_javascript,
     {kJsFunctions, kJsClasses, {}, kJsImports, {}, kJsIdentifiers, kJsNaming}},
    {"typescript", kTsExt, tree_sitter_typescript, kTsNodes},
    {"tsx", kTsxExt, tree_sitter_tsx, kTsNodes},
    {"rust",
     kRustExt,
     tree_sitter_rust,
     {kRustFunctions,
      kRustClasses,
      kRustNamespaces,
      kRustImports,
      {},
      kRustIdentifiers,
      kRustNaming}},
};

}  // namespace

std::span<const LanguageSpec> language_specs() {
  return kSpecs;
}

}  // namespace vsynth::stages::ast
