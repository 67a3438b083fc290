// ParseCache: the same text is a hit that reuses the tree; another text for a cached path is an
// edit whose tree equals a fresh parse and leaves the old version intact; LRU eviction by
// bytes; a file larger than the cache is not kept; concurrent requests stay correct. Behaviour
// only, never timing.
#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "stages/ast/language.h"
#include "stages/ast/parse_cache.h"
#include "stages/ast/parsed_file.h"
#include "stages/ast/reclaim.h"
#include "tests/ast/ast_test_util.h"

namespace ast = vsynth::stages::ast;
using Outcome = ast::ParseCache::Outcome;

namespace {

std::string fresh_dump(const ast::ParsedFile& f) {
  const ast::ParsedFile fresh(f.path(), f.language(), std::string(f.source()));
  return ast::test::dump_tree(fresh.root());
}

// A large budget: nothing is evicted unless a test means it.
constexpr std::size_t kRoomy = std::size_t{1} << 30;

}  // namespace

TEST_CASE("diff_texts: the span between the common prefix and suffix", "[ast][cache]") {
  const ast::TextEdit e = ast::diff_texts("abcXYdef", "abcZdef");
  CHECK(e.start == 3);
  CHECK(e.old_end == 5);
  CHECK(e.new_end == 4);
  CHECK(ast::diff_texts("same", "same").empty());
  // Insertion at the end, deletion at the start, and a repeated character (no overlap).
  const ast::TextEdit ins = ast::diff_texts("ab", "abcd");
  CHECK((ins.start == 2 && ins.old_end == 2 && ins.new_end == 4));
  const ast::TextEdit del = ast::diff_texts("xxab", "ab");
  CHECK((del.start == 0 && del.old_end == 2 && del.new_end == 0));
  const ast::TextEdit rep = ast::diff_texts("aaa", "aaaa");
  CHECK(rep.old_end - rep.start == 0);
  CHECK(rep.new_end - rep.start == 1);
  CHECK(rep.new_end <= 4);
}

TEST_CASE("parse cache: the same path and text again is a hit on the same tree", "[ast][cache]") {
  const auto s = ast::test::load_sample("sample.py");
  const ast::Language& py = ast::Language::for_path(s.path);
  ast::ParseCache cache(kRoomy);

  const ast::ParseCache::Result first = cache.parse(s.path, py, s.source);
  CHECK(first.outcome == Outcome::Miss);
  CHECK(first.file->source() == s.source);
  const ast::ParseCache::Result again = cache.parse(s.path, py, s.source);
  CHECK(again.outcome == Outcome::Hit);
  CHECK(again.file == first.file);  // the very same parsed file: no parse at all
  CHECK(again.file->tree() == first.file->tree());

  // Keyed by path and language as well as text.
  CHECK(cache.parse("other.py", py, s.source).outcome == Outcome::Miss);
  CHECK(cache.parse(s.path, ast::Language::named("javascript"), s.source).outcome == Outcome::Miss);

  const ast::ParseCache::Stats st = cache.stats();
  CHECK(st.hits == 1);
  CHECK(st.misses == 3);
  CHECK(st.edits == 0);
  CHECK(st.entries == 3);
  CHECK(st.bytes == 3 * ast::ParseCache::charge(*first.file));
}

TEST_CASE("parse cache: a changed text is an incremental edit of the cached tree, per language",
          "[ast][cache]") {
  for (const char* name : {"sample.py", "sample.c", "sample.cpp", "sample.go", "sample.java",
                           "sample.js", "sample.ts", "sample.tsx", "sample.rs"}) {
    INFO(name);
    const auto s = ast::test::load_sample(name);
    const ast::Language& lang = ast::Language::for_path(s.path);
    ast::ParseCache cache(kRoomy);
    const auto v1 = cache.parse(s.path, lang, s.source).file;
    const std::string v1_dump = ast::test::dump_tree(v1->root());

    // A keystroke at the cursor, then the rest of that line removed (the bench's task edit).
    const uint32_t at = s.at("a");
    std::string typed = s.source;
    typed.insert(at, "x");
    const ast::ParseCache::Result r2 = cache.parse(s.path, lang, typed);
    CHECK(r2.outcome == Outcome::Edit);
    CHECK(r2.file->source() == typed);
    CHECK(ast::test::dump_tree(r2.file->root()) == fresh_dump(*r2.file));

    std::string cut = s.source;
    const std::size_t eol = cut.find('\n', at);
    cut.erase(at, (eol == std::string::npos ? cut.size() : eol) - at);
    const ast::ParseCache::Result r3 = cache.parse(s.path, lang, cut);
    CHECK(r3.outcome == Outcome::Edit);  // from the latest version (typed)
    CHECK(ast::test::dump_tree(r3.file->root()) == fresh_dump(*r3.file));

    // The old versions are untouched (requests may still hold them) and still cached.
    CHECK(v1->source() == s.source);
    CHECK(ast::test::dump_tree(v1->root()) == v1_dump);
    const ast::ParseCache::Result back = cache.parse(s.path, lang, s.source);
    CHECK(back.outcome == Outcome::Hit);
    CHECK(back.file == v1);
    CHECK(cache.stats().edits == 2);
    CHECK(cache.stats().entries == 3);
  }
}

TEST_CASE("parse cache: a rewrite of most of the file is parsed afresh, not edited",
          "[ast][cache]") {
  const ast::Language& py = ast::Language::named("python");
  ast::ParseCache cache(kRoomy);
  cache.parse("m.py", py, "def f(x):\n    return x + 1\n\n\ndef g():\n    pass\n");
  const ast::ParseCache::Result r =
      cache.parse("m.py", py, "class Totally:\n    different = [1, 2, 3]\n    other = {}\n");
  CHECK(r.outcome == Outcome::Miss);
  CHECK(ast::test::dump_tree(r.file->root()) == fresh_dump(*r.file));
}

TEST_CASE("parse cache: least recently used entries are evicted past the byte bound",
          "[ast][cache]") {
  const ast::Language& py = ast::Language::named("python");
  auto text = [](int i) {
    return "def f" + std::to_string(i) + "(x):\n    return x * " + std::to_string(i) + "\n";
  };
  // Every text has the same length, so every entry is charged the same.
  const std::size_t one = [&] {
    ast::ParseCache probe(kRoomy);
    return ast::ParseCache::charge(*probe.parse("a.py", py, text(1)).file);
  }();
  ast::ParseCache cache(2 * one + one / 2);  // room for two entries
  const auto a = cache.parse("a.py", py, text(1)).file;
  cache.parse("b.py", py, text(2));
  CHECK(cache.stats().entries == 2);
  CHECK(cache.parse("a.py", py, text(1)).outcome == Outcome::Hit);  // a is now the most recent
  cache.parse("c.py", py, text(3));                                 // evicts b, the LRU
  ast::ParseCache::Stats st = cache.stats();
  CHECK(st.entries == 2);
  CHECK(st.evictions == 1);
  CHECK(st.bytes == 2 * one);
  CHECK(st.bytes <= cache.max_bytes());
  CHECK(cache.parse("a.py", py, text(1)).outcome == Outcome::Hit);
  CHECK(cache.parse("c.py", py, text(3)).outcome == Outcome::Hit);
  CHECK(cache.parse("b.py", py, text(2)).outcome == Outcome::Miss);  // was evicted
  // ... which evicted a (c was used after it); a request holding a keeps it valid.
  CHECK(cache.stats().evictions == 2);
  CHECK(a->source() == text(1));
  CHECK(ast::test::dump_tree(a->root()) == fresh_dump(*a));
  CHECK(cache.parse("a.py", py, text(1)).outcome == Outcome::Miss);
}

TEST_CASE("parse cache: eviction goes in exact least-recently-used order, hits refreshing",
          "[ast][cache]") {
  const ast::Language& py = ast::Language::named("python");
  auto text = [](int i) {
    return "def g" + std::to_string(i) + "(x):\n    return x - " + std::to_string(i) + "\n";
  };
  auto path = [](int i) { return "f" + std::to_string(i) + ".py"; };
  const std::size_t one = [&] {
    ast::ParseCache probe(kRoomy);
    return ast::ParseCache::charge(*probe.parse(path(0), py, text(0)).file);
  }();
  ast::ParseCache cache(5 * one + one / 2);  // room for five entries
  for (int i = 0; i < 5; ++i) cache.parse(path(i), py, text(i));
  // Use order, least recent first: 1 3 0 4 2.
  for (int i : {1, 3, 0, 4, 2}) CHECK(cache.parse(path(i), py, text(i)).outcome == Outcome::Hit);
  // Each new file evicts exactly the least recently used one left: 1, then 3, then 0.
  for (int k = 0; k < 3; ++k) {
    INFO("new file " << 5 + k);
    cache.parse(path(5 + k), py, text(5 + k));
    CHECK(cache.stats().evictions == static_cast<uint64_t>(k + 1));
    CHECK(cache.stats().entries == 5);
  }
  // Survivors, least recent first: 4 2 5 6 7 (probing them in that order keeps it), and the
  // evicted ones are gone.
  for (int i : {4, 2, 5, 6, 7}) CHECK(cache.parse(path(i), py, text(i)).outcome == Outcome::Hit);
  for (int i : {1, 3, 0}) CHECK(cache.parse(path(i), py, text(i)).outcome == Outcome::Miss);
  // Those three misses evicted 4, 2 and 5 in turn: 6 7 1 3 0 remain.
  for (int i : {6, 7, 1, 3, 0}) CHECK(cache.parse(path(i), py, text(i)).outcome == Outcome::Hit);
  for (int i : {4, 2, 5}) {
    INFO("file " << i);
    CHECK(cache.parse(path(i), py, text(i)).outcome == Outcome::Miss);
  }
  CHECK(cache.stats().evictions == 9);
}

TEST_CASE("parse cache: an edit starts from the path's most recently used version",
          "[ast][cache]") {
  const ast::Language& py = ast::Language::named("python");
  const std::string v1 =
      "def alpha(x):\n    return x + 1\n\n\ndef beta(y):\n    return y * 2\n\n\n"
      "def gamma(z):\n    return z - 3\n";
  const std::string v2 = "class Other:\n    field = [1, 2, 3]\n    more = {'a': 1}\n";
  std::string v3 = v1;  // one character from v1, a rewrite of v2
  v3.replace(v3.find("+ 1"), 3, "+ 7");
  ast::ParseCache cache(kRoomy);
  CHECK(cache.parse("m.py", py, v1).outcome == Outcome::Miss);
  CHECK(cache.parse("m.py", py, v2).outcome == Outcome::Miss);  // a rewrite: parsed afresh
  // v2 is the most recent version: v3 from it would be a rewrite (a miss) ...
  CHECK(cache.parse("m.py", py, v1).outcome == Outcome::Hit);
  // ... but the hit made v1 the most recent, and v3 is an edit of it.
  const ast::ParseCache::Result r = cache.parse("m.py", py, v3);
  CHECK(r.outcome == Outcome::Edit);
  CHECK(ast::test::dump_tree(r.file->root()) == fresh_dump(*r.file));
  // Without the hit, the base stays v2: another cache, same texts, v3 is a miss.
  ast::ParseCache other(kRoomy);
  other.parse("m.py", py, v1);
  other.parse("m.py", py, v2);
  CHECK(other.parse("m.py", py, v3).outcome == Outcome::Miss);
}

TEST_CASE("parse cache: a file larger than the cache is parsed but not kept", "[ast][cache]") {
  const auto s = ast::test::load_sample("sample.go");
  const ast::Language& go = ast::Language::for_path(s.path);
  ast::ParseCache cache(s.source.size());  // smaller than any entry's charge
  const ast::ParseCache::Result r = cache.parse(s.path, go, s.source);
  CHECK(r.outcome == Outcome::Miss);
  CHECK(r.file->source() == s.source);
  CHECK(cache.stats().entries == 0);
  CHECK(cache.stats().bytes == 0);
  CHECK(cache.parse(s.path, go, s.source).outcome == Outcome::Miss);
}

TEST_CASE("parse cache: concurrent requests on shared files stay correct", "[ast][cache]") {
  std::vector<ast::test::Sample> samples;
  for (const char* name : {"sample.py", "sample.c", "sample.rs", "sample.ts"}) {
    samples.push_back(ast::test::load_sample(name));
  }
  std::vector<std::string> expected;  // fresh dumps of each sample and of its edited text
  for (const auto& s : samples) {
    const ast::ParsedFile f = ast::ParsedFile::from_path(s.path, s.source);
    expected.push_back(ast::test::dump_tree(f.root()));
  }
  ast::ParseCache cache(kRoomy);
  constexpr int kThreads = 4, kRounds = 12;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const std::size_t i = static_cast<std::size_t>(t + round) % samples.size();
        const auto& s = samples[i];
        const ast::Language& lang = ast::Language::for_path(s.path);
        // Alternate between the original and a one-character edit of it.
        std::string text = s.source;
        if (round % 2 == 1) text.insert(s.at("a"), "z");
        const auto r = cache.parse(s.path, lang, text);
        if (r.file->source() != text) ++wrong[static_cast<std::size_t>(t)];
        const std::string dump = ast::test::dump_tree(r.file->root());
        if (round % 2 == 0 ? dump != expected[i] : dump != fresh_dump(*r.file)) {
          ++wrong[static_cast<std::size_t>(t)];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK(wrong[static_cast<std::size_t>(t)] == 0);
  const ast::ParseCache::Stats st = cache.stats();
  CHECK(st.hits + st.misses + st.edits == kThreads * kRounds);
  CHECK(st.entries <= 2 * samples.size());
  CHECK(st.hits > 0);
}

TEST_CASE("retired parsed files are freed on the reclaimer thread, owners keep theirs",
          "[ast][cache]") {
  const ast::Language& py = ast::Language::named("python");
  auto sole = std::make_shared<const ast::ParsedFile>("a.py", py, "def f(x):\n    return x\n");
  auto shared = std::make_shared<const ast::ParsedFile>("b.py", py, "def g(y):\n    return y\n");
  const std::weak_ptr<const ast::ParsedFile> sole_w = sole, shared_w = shared;
  const auto keeper = shared;  // a request still holding it
  ast::retire(std::move(sole));
  ast::retire(std::move(shared));
  ast::retire(nullptr);  // nothing to do
  ast::drain_retired();
  CHECK(sole_w.expired());
  REQUIRE_FALSE(shared_w.expired());
  CHECK(keeper->source() == "def g(y):\n    return y\n");

  // An evicted cache entry goes the same way: freed once no request holds it.
  auto text = [](int i) { return "def f" + std::to_string(i) + "(x):\n    return x\n"; };
  const std::size_t one = [&] {
    ast::ParseCache probe(kRoomy);
    return ast::ParseCache::charge(*probe.parse("a.py", py, text(1)).file);
  }();
  ast::ParseCache cache(one + one / 2);  // room for one entry
  std::weak_ptr<const ast::ParsedFile> first = cache.parse("a.py", py, text(1)).file;
  cache.parse("b.py", py, text(2));  // evicts a
  ast::drain_retired();
  CHECK(first.expired());
}
