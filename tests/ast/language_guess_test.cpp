// The language of a file the task does not name (stages/ast/language_guess.h): editor ids and
// aliases, the other files' names, and the cheap text heuristic (shebang, line-start markers).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "stages/ast/language_guess.h"

namespace ast = vsynth::stages::ast;

namespace {

std::string name_of(const ast::Language* l) {
  return l ? std::string(l->name()) : "none";
}

}  // namespace

TEST_CASE("language_for_name knows canonical names, editor ids and aliases", "[ast][guess]") {
  CHECK(name_of(ast::language_for_name("python")) == "python");
  CHECK(name_of(ast::language_for_name("Python")) == "python");
  CHECK(name_of(ast::language_for_name("py")) == "python");
  CHECK(name_of(ast::language_for_name("c++")) == "cpp");
  CHECK(name_of(ast::language_for_name("golang")) == "go");
  CHECK(name_of(ast::language_for_name("typescriptreact")) == "tsx");
  CHECK(name_of(ast::language_for_name("javascriptreact")) == "javascript");
  CHECK(name_of(ast::language_for_name("rs")) == "rust");
  CHECK(name_of(ast::language_for_name("cobol")) == "none");
}

TEST_CASE("language_from_paths takes the extension most files have", "[ast][guess]") {
  const std::vector<std::string> go{"a.go", "b.py", "c/d.go", "e.md"};
  CHECK(name_of(ast::language_from_paths(go)) == "go");
  const std::vector<std::string> tie{"b.py", "a.go"};
  CHECK(name_of(ast::language_from_paths(tie)) == "python");  // the first seen
  const std::vector<std::string> none{"README", "x.md"};
  CHECK(name_of(ast::language_from_paths(none)) == "none");
}

TEST_CASE("detect_language: shebangs and line-start markers", "[ast][guess]") {
  CHECK(name_of(ast::detect_language("#!/usr/bin/env python3\nprint(1)\n")) == "python");
  CHECK(name_of(ast::detect_language("#!/usr/bin/env node\nx()\n")) == "javascript");
  CHECK(name_of(ast::detect_language("#!/bin/sh\necho hi\n")) == "none");
  CHECK(name_of(ast::detect_language(
            "import os\n\nclass A:\n    def f(self):\n        return self.x\n")) == "python");
  CHECK(name_of(ast::detect_language("package main\n\nimport \"fmt\"\n\nfunc main() {\n\tx := 1\n"
                                     "}\n")) == "go");
  CHECK(name_of(ast::detect_language("use std::io;\n\nfn main() {\n    let mut x = 1;\n}\n")) ==
        "rust");
  CHECK(name_of(ast::detect_language("#include <stdio.h>\n#include \"a.h\"\nstatic int x;\n")) ==
        "c");
  CHECK(name_of(ast::detect_language("public class A {\n  private int x;\n  public static void "
                                     "main() {}\n}\n")) == "java");
  CHECK(name_of(ast::detect_language("const a = require('a');\nfunction f() {}\nmodule.exports = "
                                     "f;\n")) == "javascript");
  // Too little to tell, or a tie: none.
  CHECK(name_of(ast::detect_language("x = 1\n")) == "none");
  CHECK(name_of(ast::detect_language("hello there\nplain words\n")) == "none");
  CHECK(name_of(ast::detect_language("")) == "none");
}
