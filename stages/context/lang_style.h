// How code context is written in each language: the line-comment prefix used for file
// headers, elision markers and name forms, and how a signature form stands in for a body.
//
//   python:  # ... 40 lines elided ...     def f(x) -> int:\n    ...
//   rust:    // ... 40 lines elided ...    pub fn f(x: u8) -> u8 { /* ... */ }
//   c, cpp:  // ... 40 lines elided ...    int f(int x);
#pragma once

#include <string>
#include <string_view>

namespace vsynth::stages::context {

struct LangStyle {
  std::string_view comment;     // line comment prefix: "#" or "//"
  std::string_view doc_prefix;  // prefix of a first-doc-line comment above a signature
  // What follows a signature in place of the body: " { /* ... */ }", ";" or (python, where
  // the body goes on its own indented line) "...".
  std::string_view body_placeholder;
  bool indented_body = false;  // python: the placeholder and the docstring go below, indented
  // What stands for an elided initializer in a global's signature: "..." or "/* ... */".
  std::string_view value_placeholder;
};

// By ast language name; unknown names get the C-family style.
const LangStyle& style_for(std::string_view language);

// "# ... 40 lines elided ...\n" with `indent` in front.
std::string elision_marker(const LangStyle& style, std::string_view indent, uint32_t rows);
// "# file: src/app.py\n".
std::string file_header(const LangStyle& style, std::string_view path);

}  // namespace vsynth::stages::context
