// Anchoring per language: for a cursor inside a method, the smallest node, the enclosing
// function and class, the module's package, the imports and the nearby identifiers; cursor
// conventions and out-of-range errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "base/hash.h"
#include "stages/ast/anchor.h"
#include "stages/ast/error.h"
#include "tests/ast/ast_test_util.h"

namespace ast = vsynth::stages::ast;

namespace {

struct Expect {
  const char* file;
  const char* marker;
  const char* node_type;  // smallest named node at the cursor
  const char* node_text;
  const char* function_type;
  const char* function_name;
  const char* class_name;  // "" for none
  std::size_t imports;
  const char* first_import;
  const char* module_name;
  std::vector<const char*> nearby;  // must all be among the 6 nearest identifiers
};

std::vector<std::string> scope_names(const ast::Anchor& a) {
  std::vector<std::string> out;
  for (const ast::Scope& s : a.scopes) {
    out.push_back(std::string(ast::to_string(s.kind)) + ":" + std::string(s.info.name));
  }
  return out;
}

}  // namespace

TEST_CASE("anchoring a cursor inside a method, per language", "[ast][anchor]") {
  // clang-format off
  const std::vector<Expect> cases = {
      {"sample.py", "a", "identifier", "amount", "function_definition", "restock", "Inventory",
       5, "from __future__ import annotations", "", {"amount", "item", "quantity"}},
      {"sample.c", "a", "identifier", "value", "function_definition", "ring_push", "",
       3, "#include <stdio.h>", "", {"value", "r", "cap"}},
      {"sample.cpp", "a", "identifier", "quantity", "function_definition", "add", "Cart",
       4, "#include <map>", "", {"quantity", "it", "second"}},
      {"sample.go", "a", "identifier", "n", "method_declaration", "Take", "Store",
       1, "import (\n\t\"errors\"\n\t\"fmt\"\n\t\"sort\"\n)", "inventory", {"n", "have", "levels"}},
      {"sample.java", "a", "identifier", "price", "method_declaration", "add", "Cart",
       3, "import java.util.ArrayList;", "com.example.shop", {"price", "total", "sku"}},
      {"sample.js", "a", "identifier", "item", "method_definition", "push", "Queue",
       2, "import fs from \"node:fs\";", "", {"item", "push", "limit"}},
      {"sample.ts", "a", "identifier", "job", "method_definition", "submit", "Scheduler",
       2, "import { EventEmitter } from \"events\";", "", {"job", "push", "queue"}},
      {"sample.tsx", "a", "identifier", "title", "method_definition", "render", "Panel",
       1, "import React, { useState } from \"react\";", "", {"title", "label", "props"}},
      {"sample.rs", "a", "identifier", "amount", "function_item", "deposit", "Ledger",
       2, "use std::collections::HashMap;", "", {"amount", "entry", "or_insert"}},
  };
  // clang-format on
  for (const Expect& e : cases) {
    INFO(e.file << " <@" << e.marker << ">");
    const auto s = ast::test::load_sample(e.file);
    const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
    const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(s.at(e.marker)));

    CHECK(a.byte == s.at(e.marker));
    CHECK(a.node.type == e.node_type);
    CHECK(file.text(a.node.node) == e.node_text);

    REQUIRE(a.function.has_value());
    CHECK(a.function->type == e.function_type);
    CHECK(a.function->name == e.function_name);
    CHECK(a.function->span.start_byte <= a.byte);
    CHECK(a.byte <= a.function->span.end_byte);

    if (std::string(e.class_name).empty()) {
      CHECK_FALSE(a.enclosing_class.has_value());
    } else {
      REQUIRE(a.enclosing_class.has_value());
      CHECK(a.enclosing_class->name == e.class_name);
    }

    CHECK(a.module.type == ts_node_type(file.root()));
    CHECK(a.module.name == e.module_name);
    REQUIRE(a.imports.size() == e.imports);
    CHECK(a.imports.front().name == e.first_import);
    for (std::size_t i = 1; i < a.imports.size(); ++i) {
      CHECK(a.imports[i - 1].span.end_byte <= a.imports[i].span.start_byte);
    }

    // Identifiers: the one under the cursor first (distance 0), then by distance, no repeats.
    REQUIRE(!a.identifiers.empty());
    CHECK(a.identifiers.front().name == e.node_text);
    CHECK(a.identifiers.front().distance == 0);
    std::set<std::string_view> seen;
    for (std::size_t i = 0; i < a.identifiers.size(); ++i) {
      CHECK(seen.insert(a.identifiers[i].name).second);
      if (i > 0) CHECK(a.identifiers[i - 1].distance <= a.identifiers[i].distance);
      // Only identifiers of the enclosing function are considered.
      CHECK(a.identifiers[i].span.start_byte >= a.function->span.start_byte);
      CHECK(a.identifiers[i].span.end_byte <= a.function->span.end_byte);
    }
    std::set<std::string_view> top;
    for (std::size_t i = 0; i < a.identifiers.size() && i < 6; ++i)
      top.insert(a.identifiers[i].name);
    for (const char* want : e.nearby) {
      INFO("nearby identifier " << want);
      CHECK(top.count(want) == 1);
    }
    CHECK(a.scopes.front().kind == ast::ScopeKind::Function);
  }
}

TEST_CASE("anchoring: lambdas, closures and arrow functions take their parent's name",
          "[ast][anchor]") {
  struct Case {
    const char* file;
    const char* marker;
    const char* function_type;
    std::vector<std::string> scopes;
  };
  const Case cases[] = {
      {"sample.py", "lambda", "lambda", {"function:double", "function:main"}},
      {"sample.cpp", "lambda", "lambda_expression", {"function:twice", "function:main"}},
      {"sample.js", "arrow", "arrow_function", {"function:double"}},
      {"sample.tsx", "arrow", "arrow_function", {"function:increment", "function:Counter"}},
      {"sample.rs",
       "closure",
       "closure_expression",
       {"function:double", "function:check", "namespace:tests"}},
  };
  for (const Case& c : cases) {
    INFO(c.file << " <@" << c.marker << ">");
    const auto s = ast::test::load_sample(c.file);
    const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
    const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(s.at(c.marker)));
    REQUIRE(a.function.has_value());
    CHECK(a.function->type == c.function_type);
    CHECK(scope_names(a) == c.scopes);
  }
}

TEST_CASE("anchoring: C/C++ declarator names, structs, namespaces", "[ast][anchor]") {
  SECTION("a cursor in a struct body is in that struct") {
    const auto s = ast::test::load_sample("sample.c");
    const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
    const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(s.at("field")));
    CHECK(a.node.type == "field_identifier");
    CHECK_FALSE(a.function.has_value());
    REQUIRE(a.enclosing_class.has_value());
    CHECK(a.enclosing_class->type == "struct_specifier");
    CHECK(a.enclosing_class->name == "ring");
  }
  SECTION("a function returning a function pointer is named through its declarators") {
    const auto s = ast::test::load_sample("sample.c");
    const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
    const auto at = static_cast<uint32_t>(s.source.find("return which"));
    const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(at));
    REQUIRE(a.function.has_value());
    CHECK(a.function->name == "pick");
  }
  SECTION("an out-of-class C++ method is named with its class, inside its namespace") {
    const auto s = ast::test::load_sample("sample.cpp");
    const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
    const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(s.at("out")));
    REQUIRE(a.function.has_value());
    CHECK(a.function->name == "Cart::total");
    CHECK(scope_names(a) == std::vector<std::string>{"function:Cart::total", "namespace:shop"});
  }
}

TEST_CASE("anchoring: a Python cursor on a blank indented line belongs to the block above",
          "[ast][anchor]") {
  const auto s = ast::test::load_sample("sample.py");
  const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
  const uint32_t blank = s.at("blank");
  const ast::Anchor deep = ast::anchor(file, ast::Cursor::at_byte(blank));
  REQUIRE(deep.function.has_value());
  CHECK(deep.function->name == "restock");
  CHECK(deep.enclosing_class->name == "Inventory");
  CHECK(deep.node.type == "block");  // the class body holds the line; the method does not

  // The same blank line at the method's own indentation is in the class, not the method.
  const ast::Anchor shallow = ast::anchor(file, ast::Cursor::at_byte(blank - 4));
  CHECK(file.point_at(blank - 4).column == 4);
  CHECK_FALSE(shallow.function.has_value());
  REQUIRE(shallow.enclosing_class.has_value());
  CHECK(shallow.enclosing_class->name == "Inventory");

  // At column 0 the tree decides: the class's block spans the blank line (`total` follows).
  const ast::Anchor col0 = ast::anchor(file, ast::Cursor::at_byte(blank - 8));
  CHECK_FALSE(col0.function.has_value());
  CHECK(col0.enclosing_class->name == "Inventory");

  // Below the file's last statement: indented, in `main`; at column 0, module level.
  const uint32_t eof = s.at("eof");
  const ast::Anchor in_main = ast::anchor(file, ast::Cursor::at_byte(eof));
  REQUIRE(in_main.function.has_value());
  CHECK(in_main.function->name == "main");
  const ast::Anchor top = ast::anchor(file, ast::Cursor::at_byte(eof - 4));
  CHECK(top.scopes.empty());
  CHECK(top.node.type == "module");
}

TEST_CASE("anchoring: imports inside a function are visible only there", "[ast][anchor]") {
  const auto s = ast::test::load_sample("sample.py");
  const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
  const auto in_total = static_cast<uint32_t>(s.source.find("math.fsum"));
  const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(in_total));
  REQUIRE(a.function->name == "total");
  REQUIRE(a.imports.size() == 6);
  CHECK(a.imports.back().name == "import math");
  CHECK(ast::anchor(file, ast::Cursor::at_byte(s.at("a"))).imports.size() == 5);

  // C++: `using std::string;` sits in namespace shop: visible in Cart, not in main().
  const auto cpp = ast::test::load_sample("sample.cpp");
  const ast::ParsedFile cfile = ast::ParsedFile::from_path(cpp.path, cpp.source);
  CHECK(ast::anchor(cfile, ast::Cursor::at_byte(cpp.at("a"))).imports.size() == 4);
  CHECK(ast::anchor(cfile, ast::Cursor::at_byte(cpp.at("lambda"))).imports.size() == 3);
}

TEST_CASE("anchoring: imports are found in a file broken at the cursor", "[ast][anchor]") {
  // The IDE case: the cursor's line is unfinished (a bracket open), so tree-sitter's recovery
  // wraps the rest of the function in ERROR nodes. The import search skips only error-free
  // simple statements (LanguageSpec::import_free): the module's imports and the function's own
  // import before the break are all found, and the function's import only inside it. (Imports
  // *after* an unclosed bracket are not import nodes in the recovered tree at all.)
  const std::string src =
      "import os\n"
      "from json import loads as parse\n"
      "def g():\n"
      "    return os.name\n"
      "def f():\n"
      "    import sys\n"
      "    y = compute(os.sep,\n"
      "    return parse(sys.argv[1])\n";
  const ast::ParsedFile file = ast::ParsedFile::from_path("broken.py", src);
  REQUIRE(ts_node_has_error(ts_tree_root_node(file.tree())));
  const auto names_at = [&](const char* marker) {
    const ast::Anchor a =
        ast::anchor(file, ast::Cursor::at_byte(static_cast<uint32_t>(src.find(marker))));
    std::vector<std::string> names;
    for (const auto& i : a.imports) names.emplace_back(i.name);
    return names;
  };
  CHECK(names_at("parse(sys") ==
        std::vector<std::string>{"import os", "from json import loads as parse", "import sys"});
  CHECK(names_at("os.name") ==
        std::vector<std::string>{"import os", "from json import loads as parse"});
}

TEST_CASE("anchoring: the three cursor conventions agree", "[ast][anchor]") {
  const auto s = ast::test::load_sample("sample.java");
  const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
  const uint32_t byte = s.at("a");
  const TSPoint p = file.point_at(byte);
  CHECK(p.row == 17);  // "        total += pri|ce;" is the 18th line
  CHECK(p.column == 20);
  CHECK(file.byte_at(p) == byte);
  const ast::Anchor by_byte = ast::anchor(file, ast::Cursor::at_byte(byte));
  const ast::Anchor by_point = ast::anchor(file, ast::Cursor::at(p.row, p.column));
  const ast::Anchor by_line = ast::anchor(file, ast::Cursor::at_one_based(18, 21));
  CHECK(by_point.byte == byte);
  CHECK(by_line.byte == byte);
  CHECK(by_point.node.span.start_byte == by_byte.node.span.start_byte);
  CHECK(by_line.function->name == "add");

  // The end of a line and the end of the file are valid cursors.
  CHECK_NOTHROW(ast::anchor(file, ast::Cursor::at(p.row, file.row_length(p.row))));
  CHECK_NOTHROW(ast::anchor(file, ast::Cursor::at_byte(static_cast<uint32_t>(s.source.size()))));
}

TEST_CASE("anchoring: the identifier being typed wins over what follows it", "[ast][anchor]") {
  const ast::ParsedFile file("snippet.py", ast::Language::named("python"),
                             "def f(items):\n    return len(items)\n");
  // Right after `len`, before `(`: the word being typed is `len`.
  const auto after_len = static_cast<uint32_t>(file.source().rfind("(items)"));
  const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(after_len));
  CHECK(file.text(a.node.node) == "len");
  // At the end of the line (before '\n') the last node on it counts: `)` ends the call.
  const auto eol = static_cast<uint32_t>(file.source().rfind('\n'));
  const ast::Anchor b = ast::anchor(file, ast::Cursor::at_byte(eol));
  CHECK(b.function->name == "f");
}

TEST_CASE("anchoring: identifiers are limited and ordered", "[ast][anchor]") {
  const auto s = ast::test::load_sample("sample.go");
  const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
  const ast::Anchor all = ast::anchor(file, ast::Cursor::at_byte(s.at("a")), {0});
  const ast::Anchor three = ast::anchor(file, ast::Cursor::at_byte(s.at("a")), {3});
  REQUIRE(all.identifiers.size() > 3);
  REQUIRE(three.identifiers.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(three.identifiers[i].name == all.identifiers[i].name);
  // `ErrUnknown` is used in Take; `sort` is only used in SKUs and must not appear.
  std::set<std::string_view> names;
  for (const auto& r : all.identifiers) names.insert(r.name);
  CHECK(names.count("ErrUnknown") == 1);
  CHECK(names.count("sort") == 0);
}

TEST_CASE("anchoring: out-of-range cursors are refused with the valid range", "[ast][anchor]") {
  const ast::ParsedFile file("src/tiny.py", ast::Language::named("python"),
                             "import os\n\ndef f():\n    return 1\n");
  // Rows 0..4 (the text ends with '\n', so row 4 is empty); 33 bytes.
  REQUIRE(file.row_count() == 5);
  REQUIRE(file.source().size() == 33);

  CHECK_THROWS_AS(ast::anchor(file, ast::Cursor::at(5, 0)), ast::AstError);
  CHECK_THROWS_WITH(ast::anchor(file, ast::Cursor::at(5, 0)),
                    "src/tiny.py: cursor at row 5, column 0 (0-based) is outside the file: valid "
                    "rows are 0..4 (the file has 5 rows)");
  CHECK_THROWS_WITH(ast::anchor(file, ast::Cursor::at_one_based(9, 1)),
                    "src/tiny.py: cursor at line 9, column 1 (1-based) is outside the file: valid "
                    "lines are 1..5 (the file has 5 lines)");
  CHECK_THROWS_WITH(ast::anchor(file, ast::Cursor::at_one_based(3, 10)),
                    "src/tiny.py: cursor at line 3, column 10 (1-based) is past the end of line 3: "
                    "valid columns are 1..9 (line 3 has 8 bytes; columns count bytes)");
  CHECK_THROWS_WITH(ast::anchor(file, ast::Cursor::at(2, 9)),
                    Catch::Contains("past the end of row 2: valid columns are 0..8"));
  CHECK_THROWS_WITH(ast::anchor(file, ast::Cursor::at_byte(34)),
                    "src/tiny.py: cursor at byte offset 34 is outside the file: valid byte "
                    "offsets are 0..33 (the file has 33 bytes)");
  CHECK_THROWS_WITH(ast::Cursor::at_one_based(0, 1), Catch::Contains("not 1-based"));
  CHECK_NOTHROW(ast::anchor(file, ast::Cursor::at_one_based(3, 9)));
  CHECK_NOTHROW(ast::anchor(file, ast::Cursor::at(4, 0)));
  CHECK_THROWS_WITH(file.byte_at(TSPoint{7, 0}), Catch::Contains("src/tiny.py: row 7"));
}

TEST_CASE("anchoring: every byte offset of every sample anchors consistently", "[ast][anchor]") {
  const char* files[] = {"sample.py", "sample.c",  "sample.cpp", "sample.go", "sample.java",
                         "sample.js", "sample.ts", "sample.tsx", "sample.rs"};
  for (const char* name : files) {
    INFO(name);
    const auto s = ast::test::load_sample(name);
    const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
    std::size_t with_function = 0;
    for (uint32_t b = 0; b <= s.source.size(); ++b) {
      INFO("byte " << b);
      const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(b), {8});
      // The node holds the cursor (or ends right at it); scopes nest outwards around the node.
      CHECK(a.node.span.start_byte <= b);
      CHECK(b <= a.node.span.end_byte);
      // Scopes nest outwards and hold the cursor; a Python scope found by indentation may end
      // before it, with only whitespace in between.
      uint32_t inner_start = b, inner_end = b;
      for (const ast::Scope& sc : a.scopes) {
        const uint32_t end = sc.info.span.end_byte;
        const bool blank_gap = end < b && s.source.find_first_not_of(" \t\r\n", end) >= b;
        CHECK(sc.info.span.start_byte <= inner_start);
        CHECK((inner_end <= end || (file.language().name() == "python" && blank_gap)));
        inner_start = sc.info.span.start_byte;
        inner_end = std::min(inner_end, end);
      }
      CHECK(a.identifiers.size() <= 8);
      if (a.function) ++with_function;
    }
    // Most of each sample is inside some function.
    CHECK(with_function > s.source.size() / 4);
  }
}

// ---- Pins of anchor()'s phases (path, scopes, module, the imports-and-identifiers walk) ----

namespace {

// Everything an Anchor holds, as text: node, scopes (function and class among them), module,
// imports, identifiers with their distances.
std::string describe(const ast::Anchor& a) {
  const auto span = [](const ast::Span& s) {
    return std::to_string(s.start_byte) + "-" + std::to_string(s.end_byte);
  };
  const auto info = [&](const ast::NodeInfo& i) {
    return std::string(i.type) + "[" + span(i.span) + "]'" + std::string(i.name) + "'";
  };
  std::string out = "node " + info(a.node) + "\n";
  if (a.function) out += "function " + info(*a.function) + "\n";
  if (a.enclosing_class) out += "class " + info(*a.enclosing_class) + "\n";
  for (const ast::Scope& s : a.scopes) out += std::string(ast::to_string(s.kind)) + " ";
  out += "\nmodule " + info(a.module) + "\n";
  for (const ast::NodeInfo& i : a.imports) out += "import " + info(i) + "\n";
  for (const ast::Reference& r : a.identifiers) {
    out += std::string(r.name) + "@" + span(r.span) + ":" + std::to_string(r.distance) + " ";
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<ast::Reference>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs) out.emplace_back(r.name);
  return out;
}

std::vector<std::string> names_of(const std::vector<ast::NodeInfo>& infos) {
  std::vector<std::string> out;
  for (const auto& i : infos) out.emplace_back(i.name);
  return out;
}

}  // namespace

TEST_CASE("anchoring: identifiers keep each name's nearest use, ties by position",
          "[ast][anchor]") {
  const std::string src = "def f(a, b):\n    a = b\n    return a + b\n";
  const ast::ParsedFile file("near.py", ast::Language::named("python"), src);
  const auto at = static_cast<uint32_t>(src.find("= b") + 2);  // right before the first `b` use
  const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(at));
  REQUIRE(a.identifiers.size() == 3);
  CHECK(names_of(a.identifiers) == std::vector<std::string>{"b", "a", "f"});
  CHECK(a.identifiers[0].distance == 0);
  CHECK(a.identifiers[0].span.start_byte == at);
  CHECK(a.identifiers[1].span.start_byte == src.find("a = b"));  // 2 bytes off, not `a` in f(a
  CHECK(a.identifiers[1].distance == 3);
  CHECK(a.identifiers[2].distance == at - 5);  // `f` ends at byte 5
}

TEST_CASE("anchoring: outside functions, identifiers come from the class, else the file",
          "[ast][anchor]") {
  const auto s = ast::test::load_sample("sample.c");
  const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
  const ast::Anchor in_struct = ast::anchor(file, ast::Cursor::at_byte(s.at("field")), {0});
  REQUIRE(in_struct.enclosing_class.has_value());
  REQUIRE(!in_struct.identifiers.empty());
  for (const ast::Reference& r : in_struct.identifiers) {
    CHECK(r.span.start_byte >= in_struct.enclosing_class->span.start_byte);
    CHECK(r.span.end_byte <= in_struct.enclosing_class->span.end_byte);
  }
  // Python, at module level below the last statement: the whole file, every function's names.
  const auto py = ast::test::load_sample("sample.py");
  const ast::ParsedFile pfile = ast::ParsedFile::from_path(py.path, py.source);
  const ast::Anchor top = ast::anchor(pfile, ast::Cursor::at_byte(py.at("eof") - 4), {0});
  REQUIRE(top.scopes.empty());
  std::set<std::string> names;
  for (const ast::Reference& r : top.identifiers) names.emplace(r.name);
  CHECK(names.count("amount") == 1);  // Inventory.restock
  CHECK(names.count("double") == 1);  // main
  CHECK(names.count("math") == 1);    // total's import
}

TEST_CASE("anchoring: a function inside `export` has its identifiers and the file's imports",
          "[ast][anchor]") {
  const auto s = ast::test::load_sample("sample.ts");
  const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
  const auto at = static_cast<uint32_t>(s.source.find("s.size > 0"));
  const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(at), {0});
  REQUIRE(a.function.has_value());
  CHECK(a.function->name == "isBusy");
  CHECK(names_of(a.imports) ==
        std::vector<std::string>{"import { EventEmitter } from \"events\";",
                                 "import type { Readable } from \"stream\";"});
  CHECK(names_of(a.identifiers) == std::vector<std::string>{"s", "size", "Scheduler", "isBusy"});
}

TEST_CASE("anchoring: a file broken before any function is searched whole, in one walk",
          "[ast][anchor]") {
  const std::string src =
      "import os\n"
      "x = compute(os.sep,\n"
      "def g(y):\n"
      "    import sys\n"
      "    return y\n";
  const ast::ParsedFile file("cut.py", ast::Language::named("python"), src);
  REQUIRE(ts_node_has_error(ts_tree_root_node(file.tree())));
  const auto at = static_cast<uint32_t>(src.find("os.sep"));
  const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(at), {0});
  // No scope: imports and identifiers over the whole file. `import sys` after the break is
  // no import node in the recovered tree; `def` there is an identifier.
  CHECK(describe(a) ==
        "node identifier[22-24]''\n"
        "\n"
        "module module[0-68]''\n"
        "import import_statement[0-9]'import os'\n"
        "os@22-24:0 compute@14-21:1 sep@25-28:3 def@30-33:8 x@10-11:11 g@34-35:12 y@36-37:14 "
        "sys@51-54:29 ");
}

TEST_CASE("anchoring: every byte of every sample anchors as before", "[ast][anchor]") {
  // A digest of describe() at every byte offset, per sample: any change to what anchor()
  // finds shows here. When a change is meant, the failure message gives the new digest.
  const std::vector<std::pair<const char*, uint64_t>> files = {
      {"sample.py", 0xc3cd9e3fc4b56efdULL},   {"sample.c", 0x90289c6fc9da7b32ULL},
      {"sample.cpp", 0x3dd573b1adf80eefULL},  {"sample.go", 0x53c771c4eb728b8fULL},
      {"sample.java", 0xbd0aa5d4e2348ef6ULL}, {"sample.js", 0xf4aa9ceef08eb972ULL},
      {"sample.ts", 0xb4c3fbfcb8d76e52ULL},   {"sample.tsx", 0x6b2e862915c7d9c3ULL},
      {"sample.rs", 0x573ae1e752435efcULL}};
  for (const auto& [name, want] : files) {
    const auto s = ast::test::load_sample(name);
    const ast::ParsedFile file = ast::ParsedFile::from_path(s.path, s.source);
    uint64_t digest = vsynth::base::kFnv1a64Offset;
    for (uint32_t b = 0; b <= s.source.size(); ++b) {
      const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(b), {8});
      digest = vsynth::base::fnv1a64(describe(a), digest);
    }
    INFO(name << ": digest 0x" << std::hex << digest);
    CHECK(digest == want);
  }
}
