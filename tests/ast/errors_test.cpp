// has_errors / syntax_issues on broken snippets, and the query wrapper.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "stages/ast/error.h"
#include "stages/ast/parsed_file.h"
#include "stages/ast/syntax_errors.h"
#include "stages/ast/ts_handles.h"
#include "tests/ast/ast_test_util.h"

namespace ast = vsynth::stages::ast;

TEST_CASE("has_errors detects a broken snippet in every language", "[ast][errors]") {
  const std::pair<const char*, const char*> broken[] = {
      {"python", "def f(:\n    return 1\n"},
      {"c", "int main(void) { return 0 }\n"},
      {"cpp", "int f() { return 1 + ; }\n"},
      {"go", "package main\nfunc main() { x := }\n"},
      {"java", "class A { void f() { int x = ; } }\n"},
      {"javascript", "function f( { return 1; }\n"},
      {"typescript", "let x: = 3;\n"},
      {"tsx", "const a = <div>;\n"},
      {"rust", "fn main() { let x = ; }\n"},
  };
  for (const auto& [lang, text] : broken) {
    INFO(lang << ": " << text);
    const ast::ParsedFile file("snippet", ast::Language::named(lang), text);
    CHECK(file.has_errors());
    CHECK(ast::has_errors(file.tree()));
    const auto issues = ast::syntax_issues(file);
    CHECK(!issues.empty());
    // The fixed-up text is clean: has_errors is about this text, not the language.
    const ast::ParsedFile fine("snippet", ast::Language::named(lang),
                               std::string(lang) == "python" ? "def f(x):\n    return 1\n" : "");
    CHECK_FALSE(fine.has_errors());
  }
}

TEST_CASE("syntax issues name MISSING tokens and ERROR spans with positions", "[ast][errors]") {
  const ast::ParsedFile missing("m.c", ast::Language::named("c"),
                                "int main(void) {\n  return 0\n}\n");
  const auto issues = ast::syntax_issues(missing);
  REQUIRE(issues.size() == 1);
  CHECK(issues[0].missing);
  CHECK(issues[0].what == ";");
  CHECK(issues[0].start.row == 1);
  CHECK(issues[0].describe() == "2:11: missing `;`");

  const ast::ParsedFile error("e.py", ast::Language::named("python"), "x = 1\ny = = 2\nz = 3\n");
  const auto errs = ast::syntax_issues(error);
  REQUIRE(!errs.empty());
  CHECK_FALSE(errs[0].missing);
  CHECK(errs[0].what == "ERROR");
  CHECK(errs[0].start.row == 1);
  CHECK(errs[0].describe().find("syntax error") != std::string::npos);

  CHECK(ast::syntax_issues(error, 1).size() == 1);
  CHECK_FALSE(ast::has_errors(nullptr));
}

TEST_CASE("queries compile, run, and report errors with their offset", "[ast][query]") {
  const auto s = ast::test::load_sample("sample.py");
  const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
  const ast::Language& py = file.language();
  const ast::QueryPtr query =
      ast::make_query(py.ts(), py.name(), "(function_definition name: (identifier) @name)");
  const ast::QueryCursorPtr cursor(ts_query_cursor_new());
  ts_query_cursor_exec(cursor.get(), query.get(), file.root());
  std::vector<std::string> names;
  TSQueryMatch match;
  uint32_t capture_index = 0;
  while (ts_query_cursor_next_capture(cursor.get(), &match, &capture_index)) {
    names.emplace_back(file.text(match.captures[capture_index].node));
  }
  CHECK(names == std::vector<std::string>{"__init__", "load", "restock", "total", "main"});

  CHECK_THROWS_WITH(
      ast::make_query(py.ts(), py.name(), "(function_definition name: (identifer) @name)"),
      "python query: unknown node type at byte offset 28 (of 45) near `identifer) @name)`");
  CHECK_THROWS_WITH(ast::make_query(py.ts(), py.name(), "(function_definition"),
                    Catch::StartsWith("python query: syntax error at byte offset"));
}
