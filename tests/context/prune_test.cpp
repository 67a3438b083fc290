// context.prune's choices: the priority order of reasons, knapsack (not first-fit) selection of
// forms, whole blocks only, elision markers, edits, a focus larger than the budget, and the
// budget itself, under both token counters.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "stages/context/edits.h"
#include "tests/context/context_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::stages::context;
using vsynth::stages::context::test::Fixture;
using vsynth::stages::context::test::shown_form;

namespace {

const char* kShop = R"(import json
import os
from decimal import Decimal

TAX = Decimal("0.2")


def unrelated_far(items):
    """Not used by the cursor's code at all."""
    total = 0
    for it in items:
        total -= it.price
    return total


def helper_far(items):
    """Sums prices, used far from the cursor."""
    total = 0
    for it in items:
        total += it.price
    return total


def helper_near(x):
    """Rounds to cents, used right at the cursor."""
    return round(x, 2)


class Cart:
    """A shopping cart."""
    owner: str
    items: list

    def __init__(self, owner):
        self.owner = owner
        self.items = []

    def total(self):
        base = helper_far(self.items)
        with_tax = base * (1 + TAX)
        return helper_near(<|>with_tax)

    def dump(self):
        return json.dumps(self.items)


def unrelated_near(items):
    """Not used by the cursor's code either."""
    total = 1
    for it in items:
        total *= it.price
    return total
)";

PruneResult run(Fixture& f, uint32_t budget, const TokenCounter& counter = EstimateCounter()) {
  PruneOptions o;
  o.budget_tokens = budget;
  return prune(f.candidates, counter, o, f.arena);
}

}  // namespace

TEST_CASE("prune: the focus is whole and the cursor falls inside it", "[context][prune]") {
  Fixture f("shop.py", kShop);
  const PruneResult r = run(f, 1024);
  CHECK(shown_form(f.candidates, r, "total") == static_cast<int>(Form::Full));
  CHECK(r.text.find(std::string(f.unit("total").full)) != std::string::npos);
  REQUIRE(r.cursor_offset >= 0);
  CHECK(r.text.substr(static_cast<std::size_t>(r.cursor_offset), 9) == "with_tax)");
  CHECK(r.used_tokens <= 1024);
}

TEST_CASE("prune: class members, then references by nearness, then imports, then the rest",
          "[context][prune]") {
  // The smallest budget at which each unit first shows (any form but a name line).
  std::map<std::string, uint32_t> first;
  for (uint32_t budget = 60; budget <= 700; budget += 10) {
    Fixture f("shop.py", kShop);
    const PruneResult r = run(f, budget);
    for (const Shown& s : r.shown) {
      const std::string name(f.candidates.units[s.unit].name);
      if (s.form != Form::Name && s.reason != "container" && !first.count(name)) {
        first[name] = budget;
      }
    }
  }
  REQUIRE(first.count("total"));
  REQUIRE(first.count("__init__"));
  REQUIRE(first.count("helper_near"));
  REQUIRE(first.count("helper_far"));
  REQUIRE(first.count("unrelated_near"));
  CHECK(first["total"] <= first["owner"]);
  CHECK(first["owner"] <= first["helper_near"]);       // class fields before references
  CHECK(first["__init__"] <= first["helper_far"]);     // constructor before far references
  CHECK(first["helper_near"] <= first["helper_far"]);  // nearest use first
  CHECK(first["helper_far"] <= first["unrelated_near"]);
  CHECK(first["TAX"] <= first["unrelated_near"]);  // a referenced global
  if (first.count("unrelated_far")) CHECK(first["unrelated_near"] <= first["unrelated_far"]);
}

TEST_CASE("prune: a knapsack, not first-fit: three signatures beat one full body",
          "[context][prune]") {
  std::string src = "def main():\n    return a(1) + b(2) + c(<|>3)\n\n";
  for (const char* name : {"a", "b", "c"}) {
    src +=
        std::string("\ndef ") + name + "(x: int) -> int:\n    \"\"\"Doc of " + name + ".\"\"\"\n";
    for (int i = 0; i < 12; ++i) src += "    x = x * " + std::to_string(i + 2) + " + 1\n";
    src += "    return x\n\n";
  }
  Fixture probe("k.py", src);
  EstimateCounter counter;
  const uint32_t full_a = counter.count(probe.unit("a").full);
  const uint32_t sig_a = counter.count(probe.unit("a").signature);
  REQUIRE(3 * sig_a < full_a);
  // Room for the focus plus one full body, and plenty for three signatures.
  Fixture f("k.py", src);
  const uint32_t focus = counter.count(f.unit("main").full) + counter.count("# file: k.py\n") + 1;
  const PruneResult r = run(f, focus + full_a + 8);
  for (const char* name : {"a", "b", "c"}) {
    CHECK(shown_form(f.candidates, r, name) == static_cast<int>(Form::Signature));
  }
  CHECK(r.used_tokens <= focus + full_a + 8);
}

TEST_CASE("prune: whole blocks only, within budget, on every sample language", "[context][prune]") {
  const std::filesystem::path dir = std::filesystem::path(VSYNTH_SOURCE_DIR) / "tests/ast/data";
  for (const char* name : {"sample.py", "sample.c", "sample.cpp", "sample.go", "sample.java",
                           "sample.js", "sample.ts", "sample.tsx", "sample.rs"}) {
    std::ifstream in(dir / name);
    std::stringstream buf;
    buf << in.rdbuf();
    std::string raw = buf.str(), text;
    for (std::size_t i = 0; i < raw.size();) {  // drop the `<@x>` markers tests/ast uses
      if (raw.compare(i, 2, "<@") == 0) {
        i = raw.find('>', i) + 1;
      } else {
        text.push_back(raw[i++]);
      }
    }
    for (uint32_t budget : {48u, 96u, 200u, 4000u}) {
      for (std::size_t at = 0; at < text.size(); at += text.size() / 7 + 1) {
        Fixture f(name, text.substr(0, at) + "<|>" + text.substr(at));
        const PruneResult r = run(f, budget);
        INFO(name << " budget " << budget << " cursor " << at);
        if (!r.over_budget) CHECK(r.used_tokens <= budget);
        CHECK(r.used_tokens == EstimateCounter().count(r.text));
        for (const Shown& s : r.shown) {
          const Unit& u = f.candidates.units[s.unit];
          CHECK(r.text.find(std::string(u.text(s.form))) != std::string::npos);
        }
        if (r.cursor_offset >= 0 && at < text.size()) {
          CHECK(r.text.substr(static_cast<std::size_t>(r.cursor_offset), 1) == text.substr(at, 1));
        }
      }
    }
  }
}

TEST_CASE("prune: elision markers count rows in the language's comment syntax",
          "[context][prune]") {
  Fixture f("shop.py", kShop);
  const PruneResult r = run(f, 120);
  CHECK(r.markers > 0);
  CHECK(r.text.rfind("# file: shop.py\n", 0) == 0);
  CHECK(r.text.find("    # ... ") != std::string::npos);
  CHECK(r.text.find(" lines elided ...\n") != std::string::npos);

  Fixture rs("l.rs",
             "fn a() -> i32 {\n    1\n}\n\nfn b() -> i32 {\n    2\n}\n\nfn c() -> i32 {\n    "
             "3<|>\n}\n");
  const PruneResult rr = run(rs, 20);
  CHECK(rr.text == "// file: l.rs\n// ... 8 lines elided ...\nfn c() -> i32 {\n    3\n}\n");
}

TEST_CASE("prune: recently edited blocks, the most recent first", "[context][prune]") {
  std::string src = "def focus():\n    return 1<|>\n\n";
  for (int k = 0; k < 6; ++k) {
    src += "\ndef block" + std::to_string(k) + "(x):\n";
    for (int i = 0; i < 6; ++i) src += "    x = x + " + std::to_string(i) + "\n";
    src += "    return x\n\n";
  }
  Fixture f("e.py", src);
  const uint32_t row2 = f.unit("block2").first_row, row4 = f.unit("block4").first_row;
  std::vector<Edit> edits = {{"", row2 + 1, row2 + 2}, {"e.py", row4 + 1, row4 + 1}};
  mark_edits(f.candidates, edits);
  CHECK(f.unit("block4").reasons.edit_rank == 0);  // listed last: the most recent
  CHECK(f.unit("block2").reasons.edit_rank == 1);
  EstimateCounter counter;
  // Room for about one more block: the most recent edit gets it.
  const uint32_t base = counter.count(f.unit("focus").full) + counter.count("# file: e.py\n") + 1;
  const PruneResult tight = run(f, base + counter.count(f.unit("block4").signature) + 40);
  CHECK(shown_form(f.candidates, tight, "block4") >= static_cast<int>(Form::Signature));
  CHECK(shown_form(f.candidates, tight, "block4") > shown_form(f.candidates, tight, "block2"));
  // With room, edited blocks show whole.
  const PruneResult roomy = run(f, 2000);
  CHECK(shown_form(f.candidates, roomy, "block4") == static_cast<int>(Form::Full));
  CHECK(shown_form(f.candidates, roomy, "block2") == static_cast<int>(Form::Full));
}

TEST_CASE("prune: a focus larger than the budget shows its statements nearest the cursor",
          "[context][prune]") {
  std::string src = "def huge(x):\n";
  for (int i = 0; i < 300; ++i) {
    if (i == 150) src += "    x = x + 7<|>0\n";
    src += "    x = x * " + std::to_string(i) + " + 1\n";
  }
  src += "    return x\n";
  Fixture f("h.py", src);
  const PruneResult r = run(f, 128);
  CHECK_FALSE(r.over_budget);
  CHECK(r.used_tokens <= 128);
  CHECK(r.text.find("def huge(x):\n") != std::string::npos);
  CHECK(r.text.find("    x = x + 70\n") != std::string::npos);
  CHECK(r.text.find("    x = x * 150 + 1\n") != std::string::npos);  // the next statement
  CHECK(r.text.find("    x = x * 10 + 1\n") == std::string::npos);   // far ones are elided
  REQUIRE(r.cursor_offset >= 0);
  CHECK(r.text.substr(static_cast<std::size_t>(r.cursor_offset), 2) == "0\n");
}

TEST_CASE("prune: within budget when counting with the model's own tokenizer", "[context][prune]") {
  if (!vsynth::test::have_default_model()) return;
  const std::filesystem::path model = vsynth::test::default_model();
  auto counter = TokenizerCounter::from_gguf(model.string());
  for (uint32_t budget : {100u, 150u, 300u, 1000u}) {
    Fixture f("shop.py", kShop);
    const PruneResult r = run(f, budget, *counter);
    CHECK_FALSE(r.over_budget);
    CHECK(r.used_tokens <= budget);
    CHECK(r.used_tokens == counter->count(r.text));
  }
}

TEST_CASE("prune: the definition of the name at the cursor comes before class members",
          "[context][prune]") {
  // `scale` is the word being typed; the class has a field of about the same size, and the
  // budget holds one of the two.
  const std::string src = R"(def scale(v: float, k: float) -> float:
    """Multiplies v by k, clamped to [0, 1]."""
    return max(0.0, min(1.0, v * k))


class Knob:
    value: float = initial_knob_value(minimum=0.0, maximum=1.0, step=0.1)

    def turn(self, k):
        return scale<|>
)";
  Fixture f("knob.py", src);
  const Unit& scale = f.unit("scale");
  const Unit& value = f.unit("value");
  CHECK(scale.reasons.at_cursor);
  CHECK(value.reasons.class_member);
  const PruneWeights w;
  CHECK(unit_value(scale, Form::Full, w) > unit_value(value, Form::Full, w));
  CHECK(unit_value(scale, Form::Signature, w) > unit_value(value, Form::Full, w));
  EstimateCounter counter;
  const uint32_t base = counter.count(f.unit("turn").full) + counter.count("class Knob:\n") +
                        counter.count("# file: knob.py\n") + 12;
  const uint32_t sig = counter.count(scale.signature);
  REQUIRE(sig >= counter.count(value.full));
  const PruneResult r = run(f, base + sig + 10);
  CHECK(shown_form(f.candidates, r, "scale") >= static_cast<int>(Form::Signature));
}

TEST_CASE("prune: a function taking most of the budget is opened so definitions still fit",
          "[context][prune]") {
  std::string src =
      "def helper(v: int) -> int:\n    \"\"\"Adds one.\"\"\"\n    return v + 1\n\n\n"
      "def long_one(x):\n";
  for (int i = 0; i < 40; ++i) src += "    x = x * " + std::to_string(i) + " + 1\n";
  src += "    return helper<|>\n";
  Fixture whole("l.py", src);
  EstimateCounter counter;
  const uint32_t focus = counter.count(whole.unit("long_one").full);
  // A budget the function alone would nearly fill: with focus_share 1 it is shown whole and
  // `helper` does not fit; by default (3/4) it is opened and `helper` fits.
  const uint32_t budget = focus + 20;
  PruneOptions all_in;
  all_in.budget_tokens = budget;
  all_in.focus_share = 1.0;
  const PruneResult a = prune(whole.candidates, counter, all_in, whole.arena);
  CHECK(shown_form(whole.candidates, a, "long_one") == static_cast<int>(Form::Full));
  CHECK(shown_form(whole.candidates, a, "helper") < static_cast<int>(Form::Signature));
  Fixture opened("l.py", src);
  const PruneResult b = run(opened, budget);
  CHECK(shown_form(opened.candidates, b, "helper") >= static_cast<int>(Form::Signature));
  CHECK(b.text.find("def long_one(x):\n") != std::string::npos);
  CHECK(b.text.find("    return helper\n") != std::string::npos);
  CHECK(b.used_tokens <= budget);
}

TEST_CASE("prune: a Python cursor on a blank line below a method stays inside its class",
          "[context][prune]") {
  Fixture f("c.py",
            "class C:\n    def a(self):\n        return 1\n\n    def b(self):\n        x = 1\n"
            "        <|>\n");
  const PruneResult r = run(f, 200);
  CHECK(r.text ==
        "# file: c.py\nclass C:\n    def a(self):\n        return 1\n\n    def b(self):\n"
        "        x = 1\n        \n");
  CHECK(r.markers == 0);
}
