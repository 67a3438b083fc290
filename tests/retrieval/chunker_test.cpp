// chunk_file: which units become chunks, their names, lines and texts, the splitting of a
// long unit, and the files skipped with a reason.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "stages/retrieval/chunker.h"
#include "stages/retrieval/index.h"
#include "test_embedder.h"

namespace vsynth::stages::retrieval {
namespace {

using facets::UnitKind;

const Chunk& named(const std::vector<Chunk>& chunks, std::string_view name) {
  for (const Chunk& c : chunks) {
    if (c.name == name) return c;
  }
  FAIL("no chunk named " << name);
  return chunks.front();
}

std::vector<std::string> names(const std::vector<Chunk>& chunks) {
  std::vector<std::string> out;
  for (const Chunk& c : chunks) out.push_back(c.name);
  return out;
}

TEST_CASE("python: a class chunk of its header and fields, one chunk per method", "[retrieval]") {
  const std::string src =
      "import os\n"                                        // 1
      "from shop.money import Money\n"                     // 2
      "\n"                                                 // 3
      "class Cart:\n"                                      // 4
      "    \"\"\"A shopping cart.\"\"\"\n"                 // 5
      "    TAX = 0.2\n"                                    // 6
      "\n"                                                 // 7
      "    def __init__(self, items):\n"                   // 8
      "        self.items = items\n"                       // 9
      "\n"                                                 // 10
      "    @property\n"                                    // 11
      "    def total(self):\n"                             // 12
      "        return sum(i.price for i in self.items)\n"  // 13
      "\n"                                                 // 14
      "def receipt(cart):\n"                               // 15
      "    return str(cart.total)\n";                      // 16
  std::string skipped = "x";
  const std::vector<Chunk> chunks = chunk_file("shop/cart.py", src, {}, nullptr, &skipped);
  CHECK(skipped.empty());
  CHECK(names(chunks) ==
        std::vector<std::string>{"Cart", "Cart.__init__", "Cart.total", "receipt"});

  const Chunk& cls = named(chunks, "Cart");
  CHECK(cls.kind == UnitKind::Class);
  CHECK(cls.path == "shop/cart.py");
  CHECK(cls.first_line == 4);
  CHECK(cls.last_line == 6);
  CHECK(cls.text == "shop/cart.py\nclass Cart:\n    \"\"\"A shopping cart.\"\"\"\n    TAX = 0.2\n");

  const Chunk& init = named(chunks, "Cart.__init__");
  CHECK(init.kind == UnitKind::Constructor);
  CHECK(init.first_line == 8);
  CHECK(init.last_line == 9);
  CHECK(init.text ==
        "shop/cart.py\nclass Cart:\n    def __init__(self, items):\n        self.items = items\n");

  const Chunk& total = named(chunks, "Cart.total");
  CHECK(total.kind == UnitKind::Method);
  CHECK(total.first_line == 11);  // the decorator belongs to it
  CHECK(total.last_line == 13);
  CHECK(total.parts == 1);

  const Chunk& receipt = named(chunks, "receipt");
  CHECK(receipt.kind == UnitKind::Function);
  CHECK(receipt.text == "shop/cart.py\ndef receipt(cart):\n    return str(cart.total)\n");
  CHECK(receipt.tokens == (receipt.text.size() + 3) / 4);  // no counter: bytes / 4

  // The file level gets the imports.
  const FileChunks f = chunk_source("shop/cart.py", src, {}, nullptr);
  CHECK(f.language == "python");
  CHECK(f.imports == "import os\nfrom shop.money import Money\n");
}

TEST_CASE("c: functions and structs", "[retrieval]") {
  const std::string src =
      "#include <stdio.h>\n"
      "struct point {\n"
      "  int x;\n"
      "  int y;\n"
      "};\n"
      "int add(int a, int b) {\n"
      "  return a + b;\n"
      "}\n"
      "static void print_point(const struct point* p) {\n"
      "  printf(\"%d %d\\n\", p->x, p->y);\n"
      "}\n";
  const std::vector<Chunk> chunks = chunk_file("geo/point.c", src, {}, nullptr);
  CHECK(names(chunks) == std::vector<std::string>{"point", "add", "print_point"});
  CHECK(named(chunks, "point").kind == UnitKind::Class);
  CHECK(named(chunks, "point").text.find("int y;") != std::string::npos);
  CHECK(named(chunks, "add").first_line == 6);
  CHECK(named(chunks, "add").last_line == 8);
}

TEST_CASE("rust: impl methods carry the impl line, qualified by it", "[retrieval]") {
  const std::string src =
      "use std::fmt;\n"
      "pub struct Cart { items: Vec<u32> }\n"
      "impl Cart {\n"
      "    pub fn new() -> Self { Cart { items: vec![] } }\n"
      "    /// Total price.\n"
      "    pub fn total(&self) -> u32 {\n"
      "        self.items.iter().sum()\n"
      "    }\n"
      "}\n"
      "trait Priced {\n"
      "    fn price(&self) -> u32;\n"
      "}\n";
  const std::vector<Chunk> chunks = chunk_file("src/cart.rs", src, {}, nullptr);
  CHECK(names(chunks) ==
        std::vector<std::string>{"Cart", "Cart", "Cart.new", "Cart.total", "Priced"});
  const Chunk& total = named(chunks, "Cart.total");
  CHECK(total.kind == UnitKind::Method);
  CHECK(total.first_line == 5);  // its doc comment
  CHECK(total.text.rfind("src/cart.rs\nimpl Cart {\n    /// Total price.\n", 0) == 0);
  CHECK(named(chunks, "Cart.new").kind == UnitKind::Constructor);
  // A trait's bodiless signature is part of the trait's chunk, not a chunk of its own.
  CHECK(named(chunks, "Priced").text.find("fn price(&self) -> u32;") != std::string::npos);
}

TEST_CASE("javascript: classes, methods, functions and arrow functions", "[retrieval]") {
  const std::string src =
      "import { fmt } from './fmt.js';\n"
      "export class Cart {\n"
      "  constructor(items) {\n"
      "    this.items = items;\n"
      "  }\n"
      "  total() {\n"
      "    return this.items.reduce((a, b) => a + b, 0);\n"
      "  }\n"
      "}\n"
      "function receipt(cart) {\n"
      "  return fmt(cart.total());\n"
      "}\n"
      "const double = (x) => x * 2;\n";
  const std::vector<Chunk> chunks = chunk_file("web/cart.js", src, {}, nullptr);
  CHECK(names(chunks) ==
        std::vector<std::string>{"Cart", "Cart.constructor", "Cart.total", "receipt", "double"});
  CHECK(named(chunks, "Cart.total").text.find("export class Cart {\n") != std::string::npos);
}

TEST_CASE("c++: member declarations stay in the class chunk, definitions are chunks",
          "[retrieval]") {
  const std::string src =
      "namespace shop {\n"
      "class Cart {\n"
      " public:\n"
      "  Cart();\n"
      "  int total() const;\n"
      " private:\n"
      "  int items_ = 0;\n"
      "};\n"
      "int Cart::total() const {\n"
      "  return items_;\n"
      "}\n"
      "}  // namespace shop\n";
  const std::vector<Chunk> chunks = chunk_file("shop/cart.cpp", src, {}, nullptr);
  CHECK(names(chunks) == std::vector<std::string>{"shop.Cart", "shop.Cart::total"});
  const Chunk& cls = named(chunks, "shop.Cart");
  CHECK(cls.text.find("int total() const;") != std::string::npos);
  CHECK(cls.text.find("int items_ = 0;") != std::string::npos);
  CHECK(cls.text.rfind("shop/cart.cpp\nnamespace shop {\nclass Cart {\n", 0) == 0);
}

TEST_CASE("a unit over max_tokens is split on rows, each piece repeating its signature",
          "[retrieval]") {
  std::string src = "# header\n\ndef long_one(alpha, beta,\n             gamma):\n";
  for (int i = 0; i < 120; ++i) {
    src += "    value_" + std::to_string(i) + " = alpha + beta * " + std::to_string(i) + "\n";
  }
  src += "    return gamma\n";
  const test::BagEmbedder counter;
  ChunkOptions options;
  options.max_tokens = 64;
  const std::vector<Chunk> chunks = chunk_file("m/long.py", src, options, &counter);
  REQUIRE(chunks.size() > 5);
  uint32_t next_line = 3;  // the def's first row
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    const Chunk& c = chunks[i];
    INFO("piece " << i << ":\n" << c.text);
    CHECK(c.name == "long_one");
    CHECK(c.part == i);
    CHECK(c.parts == chunks.size());
    CHECK(c.first_line == next_line);  // pieces tile the function's rows
    // Each piece knows its whole unit: a hit on it shows the function.
    CHECK(c.unit_first_line == 3);
    CHECK(c.unit_last_line == 3 + 2 + 120);
    next_line = c.last_line + 1;
    CHECK(c.text.rfind("m/long.py\ndef long_one(alpha, beta,\n             gamma):\n", 0) == 0);
    CHECK(counter.count_tokens(c.text) <= options.max_tokens);
    CHECK(c.tokens == counter.count_tokens(c.text));
  }
  CHECK(next_line == 3 + 2 + 120 + 1);
  CHECK(chunks.back().text.find("return gamma") != std::string::npos);
}

TEST_CASE("binary, undecodable, one-line and unknown files are skipped with a reason",
          "[retrieval]") {
  std::string why;
  CHECK(chunk_file("a/b.py", std::string("def f():\n    return 1\n\0\0", 24), {}, nullptr, &why)
            .empty());
  CHECK(why.find("binary") != std::string::npos);
  CHECK(why.find("line 3") != std::string::npos);

  CHECK(chunk_file("a/b.py", "def f():\n    return '\xff\xfe'\n", {}, nullptr, &why).empty());
  CHECK(why.find("not UTF-8") != std::string::npos);
  CHECK(why.find("0xff") != std::string::npos);
  // Overlong encodings and surrogates are not UTF-8 either; real multi-byte text is.
  CHECK(!unindexable("x = '\xc0\xaf'\n").empty());
  CHECK(!unindexable("x = '\xed\xa0\x80'\n").empty());
  CHECK(unindexable("x = 'caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80'\n").empty());

  std::string one_line = "x = [";
  while (one_line.size() < 5'000'000) one_line += "1, ";
  one_line += "1]\n";
  CHECK(chunk_file("gen/big.py", one_line, {}, nullptr, &why).empty());
  CHECK(why.find("line 1 is over 64 KiB") != std::string::npos);

  // The limit is on bytes per line, not per file: 64 KiB exactly is fine, one more is not.
  CHECK(unindexable("# " + std::string(64 * 1024 - 2, 'x') + "\nx = 1\n").empty());
  CHECK(unindexable("# " + std::string(64 * 1024 - 1, 'x') + "\nx = 1\n").find("line 1") !=
        std::string::npos);
  std::string many_lines;
  while (many_lines.size() < 200 * 1024) many_lines += "x = 1\n";
  CHECK(unindexable(many_lines).empty());

  CHECK(chunk_file("notes/readme.xyz", "def f():\n  pass\n", {}, nullptr, &why).empty());
  CHECK(why.find("no language") != std::string::npos);
  CHECK(why.find(".py") != std::string::npos);

  // A file with a syntax error still parses: its intact units are chunks.
  CHECK(!chunk_file("a/c.py", "def ok():\n    return 1\n\ndef broken(:\n", {}, nullptr, &why)
             .empty());
  CHECK(why.empty());
}

}  // namespace
}  // namespace vsynth::stages::retrieval
