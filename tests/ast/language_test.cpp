// Every grammar loads at ABI 14, every node type our tables name exists, extensions map to the
// right language, and a realistic sample per language parses without an ERROR node.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "stages/ast/error.h"
#include "stages/ast/language.h"
#include "stages/ast/parsed_file.h"
#include "stages/ast/syntax_errors.h"
#include "tests/ast/ast_test_util.h"

namespace ast = vsynth::stages::ast;

TEST_CASE("every language loads at tree-sitter ABI 14", "[ast][language]") {
  std::set<std::string> names;
  for (const ast::Language& lang : ast::Language::all()) {
    INFO(lang.name());
    names.emplace(lang.name());
    REQUIRE(lang.ts() != nullptr);
    CHECK(lang.abi_version() == 14);
    CHECK(ts_language_version(lang.ts()) == 14);
    // The linked libtree-sitter accepts it.
    CHECK_NOTHROW(ast::make_parser(lang.ts(), lang.name()));
  }
  CHECK(names == std::set<std::string>{"python", "c", "cpp", "go", "java", "javascript",
                                       "typescript", "tsx", "rust"});
}

TEST_CASE("every node type in the tables exists in its grammar", "[ast][language]") {
  for (const ast::Language& lang : ast::Language::all()) {
    INFO(lang.name());
    std::string unknown;
    for (const std::string& k : lang.unknown_kinds()) unknown += k + " ";
    CHECK(unknown.empty());
    CHECK(!lang.nodes().functions.empty());
    CHECK(!lang.nodes().imports.empty());
    CHECK(!lang.nodes().identifiers.empty());
  }
}

TEST_CASE("languages by name and by file extension", "[ast][language]") {
  const std::pair<const char*, const char*> cases[] = {
      {"a/b/main.py", "python"}, {"x.pyi", "python"},         {"ring.c", "c"},
      {"ring.h", "c"},           {"cart.cc", "cpp"},          {"cart.cpp", "cpp"},
      {"cart.hpp", "cpp"},       {"cart.cxx", "cpp"},         {"store.go", "go"},
      {"Cart.java", "java"},     {"q.js", "javascript"},      {"q.mjs", "javascript"},
      {"q.jsx", "javascript"},   {"s.ts", "typescript"},      {"c.tsx", "tsx"},
      {"ledger.rs", "rust"},     {"dir.v2/ledger.rs", "rust"}};
  for (const auto& [path, name] : cases) {
    INFO(path);
    CHECK(ast::Language::for_path(path).name() == name);
  }
  CHECK(&ast::Language::named("rust") == &ast::Language::for_path("x.rs"));
  CHECK(ast::Language::find("cobol") == nullptr);
  CHECK(ast::Language::find_for_path("Makefile") == nullptr);
  CHECK(ast::Language::find_for_path("dir.py/Makefile") == nullptr);
  CHECK(ast::Language::find_for_path(".py") == nullptr);  // a dotfile, not an extension

  CHECK_THROWS_WITH(
      ast::Language::named("cobol"),
      Catch::Contains("unknown language `cobol`") &&
          Catch::Contains("python, c, cpp, go, java, javascript, typescript, tsx, rust"));
  CHECK_THROWS_WITH(ast::Language::for_path("src/report.cob"),
                    Catch::Contains("`src/report.cob`") && Catch::Contains("extension `.cob`") &&
                        Catch::Contains(".rs (rust)") && Catch::Contains(".h (c)"));
  CHECK_THROWS_WITH(ast::Language::for_path("Makefile"), Catch::Contains("no extension"));
}

TEST_CASE("a realistic sample per language parses without errors", "[ast][language]") {
  const std::pair<const char*, const char*> samples[] = {{"sample.py", "module"},
                                                         {"sample.c", "translation_unit"},
                                                         {"sample.cpp", "translation_unit"},
                                                         {"sample.go", "source_file"},
                                                         {"sample.java", "program"},
                                                         {"sample.js", "program"},
                                                         {"sample.ts", "program"},
                                                         {"sample.tsx", "program"},
                                                         {"sample.rs", "source_file"}};
  for (const auto& [file, root_type] : samples) {
    INFO(file);
    const auto s = ast::test::load_sample(file);
    const ast::ParsedFile parsed = ast::ParsedFile::from_path(s.path, s.source);
    CHECK(std::string(ts_node_type(parsed.root())) == root_type);
    CHECK_FALSE(parsed.has_errors());
    CHECK_FALSE(ast::has_errors(parsed.tree()));
    CHECK(ast::syntax_issues(parsed).empty());
    CHECK(ts_node_end_byte(parsed.root()) <= s.source.size());
    CHECK(ts_node_named_child_count(parsed.root()) >= 3);
  }
}
