// context.dedup: AST-normalised shingles (receivers stripped, identifiers kept, literals
// folded), the Jaccard threshold, and which of two duplicates stays.
#include <catch2/catch.hpp>

#include "stages/context/dedup.h"
#include "stages/context/normalize.h"
#include "stages/context/unit_extract.h"
#include "tests/context/context_test_util.h"

using namespace vsynth::stages::context;
using vsynth::stages::context::test::Fixture;

namespace {

std::vector<uint64_t> tokens_of(const std::string& path, const std::string& src) {
  const auto file = vsynth::stages::ast::ParsedFile::from_path(path, src);
  return normalized_tokens(file, file.root());
}

}  // namespace

TEST_CASE("dedup: normalisation strips call receivers and folds literals, keeps identifiers",
          "[context][dedup]") {
  CHECK(tokens_of("a.py", "x = self.items.get(k, 'a')\n") ==
        tokens_of("a.py", "x = items.get(k, \"zzz\")\n"));
  CHECK(tokens_of("a.py", "x = self.items.get(k, 1)\n") ==
        tokens_of("a.py", "x = other.get(k, 2.5)\n"));
  CHECK(tokens_of("a.py", "x = a.get(k)  # note\n") == tokens_of("a.py", "x = b.get(k)\n"));
  CHECK(tokens_of("a.py", "x = items.get(k)\n") != tokens_of("a.py", "y = items.get(k)\n"));
  CHECK(tokens_of("a.js", "this.store.put(a);\n") == tokens_of("a.js", "db.put(a);\n"));
  CHECK(tokens_of("a.go", "s.w.Write(b)\n") == tokens_of("a.go", "w.Write(b)\n"));
  CHECK(tokens_of("a.java", "class A { void f() { this.m.run(x); } }\n") ==
        tokens_of("a.java", "class A { void f() { other.run(x); } }\n"));
  CHECK(tokens_of("a.c", "int f(void) { return p->ops.read(fd); }\n") ==
        tokens_of("a.c", "int f(void) { return ops.read(fd); }\n"));
  CHECK(tokens_of("a.rs", "fn f() { self.map.insert(k, v); }\n") ==
        tokens_of("a.rs", "fn f() { m.insert(k, v); }\n"));
  CHECK(tokens_of("a.py", "x = a.get(k)\n") != tokens_of("a.py", "x = a.put(k)\n"));  // method kept
  // Only call receivers: a plain attribute read keeps its object.
  CHECK(tokens_of("a.py", "x = a.size\n") != tokens_of("a.py", "x = b.size\n"));
}

TEST_CASE("dedup: jaccard and shingles", "[context][dedup]") {
  CHECK(jaccard({1, 2, 3}, {1, 2, 3}) == 1.0);
  CHECK(jaccard({1, 2, 3, 4}, {3, 4, 5, 6}) == Approx(2.0 / 6.0));
  CHECK(jaccard({}, {}) == 0.0);
  const std::vector<uint64_t> t = {1, 2, 3, 4, 5};
  CHECK(shingles(t, 2).size() == 4);
  CHECK(shingles(t, 9).size() == 1);  // shorter than k: one shingle of the whole
  CHECK(shingles(t, 2) == shingles(t, 2));
}

TEST_CASE("dedup: near-duplicates of what the focus uses are removed, the better kept",
          "[context][dedup]") {
  const std::string head =
      "    total = 0\n    seen = set()\n    for item in items:\n        if item.sku in seen:\n"
      "            continue\n        seen.add(item.sku)\n        if item.active:\n"
      "            total += item.price * item.count\n";
  const std::string body = head + "    return round(total, 2)\n";
  Fixture f("d.py",
            "def focus(items):\n    return a(items) + b(items) + c(<|>items)\n\n\n"
            "def a(items):\n" +
                body + "\n\ndef b(items):\n" +
                // b: the same code calling through a receiver, with another literal
                head + "    return self.round(total, 3)\n" +
                "\n\ndef c(items):\n    return [i for i in items if i.price > 100]\n");
  DedupOptions o;
  CHECK(remove_duplicates(f.candidates, o) == 1);
  // `b` is used nearer the cursor than `a`, so `b` stays.
  const Unit& a = f.unit("a");
  const Unit& b = f.unit("b");
  CHECK(a.removed != b.removed);
  const Unit& kept = a.removed ? b : a;
  CHECK(kept.reasons.ref_rank < (a.removed ? a : b).reasons.ref_rank);
  CHECK_FALSE(f.unit("c").removed);
  CHECK_FALSE(f.unit("focus").removed);
  REQUIRE(f.candidates.duplicates.size() == 1);
  CHECK(f.candidates.duplicates[0].jaccard >= 0.85);

  // A stricter threshold keeps both.
  Fixture g("d.py", "def focus(items):\n    return a(items) + b(<|>items)\n\n\ndef a(items):\n" +
                        body + "\n\ndef b(items):\n" + head +
                        "    return round(total * 2, 2) + extra(total)\n");
  o.threshold = 0.99;
  CHECK(remove_duplicates(g.candidates, o) == 0);
}
