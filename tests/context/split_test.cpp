// Opening a focus that is larger than its share of the budget (split_unit via context.prune):
// clauses after a block (else, elif, except) are statements of their own, not closing rows
// the focus must carry; a definition left unclosed by a syntax error at the cursor (the
// editor's usual state) is opened by rows; a cursor on a header row keeps the header as the
// focus. In each case the context stays within the budget.
#include <catch2/catch.hpp>

#include <string>

#include "tests/context/context_test_util.h"

using namespace vsynth::stages::context;
using vsynth::stages::context::test::Fixture;

namespace {

PruneResult run(Fixture& f, uint32_t budget) {
  PruneOptions o;
  o.budget_tokens = budget;
  return prune(f.candidates, EstimateCounter(), o, f.arena);
}

// `n` distinct statements, one per row, at `indent`.
std::string lines(const std::string& indent, const std::string& stem, int n,
                  const std::string& end = ";") {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += indent + stem + std::to_string(i) + " = compute_" + std::to_string(i) + "(x, " +
         std::to_string(i) + ")" + end + "\n";
  }
  return s;
}

void check_fits(const PruneResult& r, uint32_t budget) {
  INFO(r.text);
  CHECK_FALSE(r.over_budget);
  CHECK(r.used_tokens <= budget);
  CHECK(r.cursor_offset >= 0);
}

}  // namespace

TEST_CASE("split: a long else branch is a unit of its own, not the if's closing rows",
          "[context][prune][split]") {
  const std::string src =
      "int helper(int x) { return x * 2; }\n\nint f(int x) {\n" + lines("    ", "int a", 12) +
      "    if (x > 0) {\n"
      "        a0 += helper(x);\n"
      "        a1 += <|>\n"
      "    } else {\n" +
      lines("        ", "b", 60) + "    }\n" + lines("    ", "c", 12) + "    return a0;\n}\n";
  Fixture f("f.c", src);
  const uint32_t budget = 160;
  const PruneResult r = run(f, budget);
  check_fits(r, budget);
  CHECK(r.text.find("a1 += ") != std::string::npos);
  CHECK(r.text.find("b59 = compute_59") == std::string::npos);  // the far end of the else
  // The else clause became a statement after the if, at the function's level.
  bool clause = false;
  for (const Unit& u : f.candidates.units) {
    if (u.full.find("} else {") == 0 || u.full.find("    } else {") == 0) {
      clause = true;
      CHECK(u.kind == UnitKind::Statement);
      CHECK(u.parent >= 0);
      CHECK(f.candidates.units[static_cast<std::size_t>(u.parent)].name == "f");
    }
  }
  CHECK(clause);
}

TEST_CASE("split: Python elif / else clauses are statements after the if",
          "[context][prune][split]") {
  const std::string src = "def f(x):\n" + lines("    ", "a", 10, "") +
                          "    if x > 0:\n"
                          "        y = x + <|>\n"
                          "    elif x < 0:\n" +
                          lines("        ", "b", 40, "") + "    else:\n" +
                          lines("        ", "c", 40, "") + "    return y\n";
  Fixture f("f.py", src);
  const uint32_t budget = 140;
  const PruneResult r = run(f, budget);
  check_fits(r, budget);
  CHECK(r.text.find("b39 = ") == std::string::npos);
  CHECK(r.text.find("c39 = ") == std::string::npos);
}

TEST_CASE("split: a class left unclosed by the line being typed is opened by rows",
          "[context][prune][split]") {
  // The signature being typed leaves a bracket open: the parser's recovery puts the class's
  // methods in an ERROR node and the block it finds afterwards is not the class body.
  std::string methods;
  for (int i = 0; i < 30; ++i) {
    methods += "    def method_" + std::to_string(i) + "(self, value):\n        return value * " +
               std::to_string(i) + " + self.base\n\n";
  }
  const std::string src =
      "import typing as t\n\n\nclass Context:\n    \"\"\"A context.\"\"\"\n\n"
      "    def __init__(self):\n        self.base = 1\n\n\n"
      "class Command:\n    \"\"\"A command.\"\"\"\n\n" +
      methods + "    def invoke(self, ctx: t.Optional[Context<|>\n" +
      "        return ctx.base\n\n" + methods;
  Fixture f("cmd.py", src);
  const uint32_t budget = 200;
  const PruneResult r = run(f, budget);
  check_fits(r, budget);
  CHECK(r.text.find("def invoke(self, ctx: t.Optional[Context") != std::string::npos);
}

TEST_CASE("split: a Rust parameter list left open swallowing the file is opened by rows",
          "[context][prune][split]") {
  std::string rest;
  for (int i = 0; i < 40; ++i) {
    rest += "pub fn f" + std::to_string(i) + "(x: u32) -> u32 {\n    x + " + std::to_string(i) +
            "\n}\n\n";
  }
  const std::string src = "type Rank = u32;\n\npub fn split<'a>(piece: &'a [u8], ranks: Rank<|>\n" +
                          std::string("    piece.len()\n}\n\n") + rest;
  Fixture f("lib.rs", src);
  const uint32_t budget = 150;
  const PruneResult r = run(f, budget);
  check_fits(r, budget);
  CHECK(r.text.find("pub fn split<'a>(piece") != std::string::npos);
}

TEST_CASE("split: a cursor on the header of a large function keeps the header as the focus",
          "[context][prune][split]") {
  const std::string src =
      "def process(items, limit<|>):\n" + lines("    ", "v", 80, "") + "    return v0\n";
  Fixture f("p.py", src);
  const uint32_t budget = 120;
  const PruneResult r = run(f, budget);
  check_fits(r, budget);
  const Unit& focus = f.candidates.units[static_cast<std::size_t>(f.candidates.focus)];
  CHECK(focus.name == "process");
  CHECK(focus.container);
  CHECK(r.text.find("def process(items, limit):\n") != std::string::npos);
  CHECK(r.text.find("v79 = ") == std::string::npos);
  // The header appears once: no row unit overlapping it.
  CHECK(r.text.find("def process") == r.text.rfind("def process"));
}
