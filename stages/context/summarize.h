// Signature and name forms, per language: what a unit shows when its body is left out.
//
//   python   @property                          rust    /// Adds two numbers.
//            def area(self, k: int) -> float:           pub fn add(a: u8, b: u8) -> u8 { /* ... */
//            }
//                """Area of the shape."""       c/c++   // Adds two numbers.
//                ...                                    static int add(int a, int b);
//   go, java, js, ts: the header up to the body, then " { /* ... */ }"
//
// A signature keeps the declaration's own text (decorators, modifiers, template clause,
// receiver, parameters with types and defaults, return type, throws / where clauses) from the
// node's start up to its body (C/C++: up to the end of the declarator, so a constructor's
// member-initializer list goes), with the first doc line: a Python docstring's first line, or
// else the first line of text in the comment block attached above the definition.
#pragma once

#include <tree_sitter/api.h>

#include <string>
#include <string_view>

#include "stages/ast/parsed_file.h"
#include "stages/context/lang_style.h"
#include "stages/context/unit.h"

namespace vsynth::stages::context {

// The first line of documentation of a definition: the docstring of a Python function or
// class (`def_node` is the function_definition / class_definition), else the first line with
// text in `comments` (the comment rows attached above it), markers stripped. "" when none.
std::string first_doc_line(const ast::ParsedFile& file, TSNode def_node, std::string_view comments);

// Function signature form. `unit_node` is where the declaration starts (a decorated_definition,
// export_statement or template_declaration around it); `def_node` is the function itself.
// Empty when the function has no body (a prototype is already its own signature).
std::string function_signature(const ast::ParsedFile& file, TSNode unit_node, TSNode def_node,
                               std::string_view indent, std::string_view doc);

// Container header forms: the declaration up to its body, plus the body's opening (" {" or,
// in Python, the ':' already there); `with_doc` adds the doc line (signature form) or not
// (name form).
std::string container_header(const ast::ParsedFile& file, TSNode unit_node, TSNode body,
                             std::string_view indent, std::string_view doc, bool with_doc);

// A global, field or import trimmed to names: an initializer that spans rows or runs long is
// replaced by the language's placeholder (`X = ...`, `static int t[] = /* ... */;`); an import
// is collapsed onto one line without comments. Empty when that is not shorter than the text.
std::string trimmed_declaration(const ast::ParsedFile& file, TSNode unit_node, UnitKind kind,
                                std::string_view indent);

// "# method deposit" with the unit's indentation and the language's comment prefix.
std::string name_line(const LangStyle& style, std::string_view indent, UnitKind kind,
                      std::string_view name);

}  // namespace vsynth::stages::context
