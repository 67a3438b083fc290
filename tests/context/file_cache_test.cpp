// FileUnitsCache (context.deps' cache of parsed and extracted files): the same path and text
// is a hit on the same units; another text is parsed afresh (never from another version);
// bounded by bytes, least recently used first; larger than the cache: returned, not kept;
// unknown extensions: none. Behaviour only, never timing.
#include <catch2/catch.hpp>

#include <string>

#include "stages/ast/reclaim.h"
#include "stages/context/file_cache.h"

using vsynth::stages::context::FileUnits;
using vsynth::stages::context::FileUnitsCache;

namespace {

std::string text(int i) {
  return "def f" + std::to_string(i) + "(x):\n    return x * " + std::to_string(i) + "\n";
}

}  // namespace

TEST_CASE("file cache: a hit shares the units, another text is a fresh parse", "[context][cache]") {
  FileUnitsCache cache(std::size_t{1} << 30);
  const auto a = cache.get("a.py", text(1));
  REQUIRE(a);
  CHECK(a->file->source() == text(1));
  REQUIRE(a->units.size() == 1);
  CHECK(a->units[0].name == "f1");
  CHECK(cache.get("a.py", text(1)) == a);  // the very same object: nothing parsed again
  // Another text for the path: its own parse, the old version untouched.
  const auto b = cache.get("a.py", text(2));
  REQUIRE(b);
  CHECK(b != a);
  CHECK(b->file->source() == text(2));
  CHECK(b->units[0].name == "f2");
  CHECK(a->units[0].name == "f1");
  // Keyed by path too; no language for the extension: nothing.
  CHECK(cache.get("b.py", text(1)) != a);
  CHECK(cache.get("notes.txt", "hello") == nullptr);
  const FileUnitsCache::Stats st = cache.stats();
  CHECK(st.hits == 1);
  CHECK(st.misses == 3);
  CHECK(st.entries == 3);
  CHECK(st.bytes == 3 * FileUnitsCache::charge(*a));
}

TEST_CASE("file cache: bounded by bytes, least recently used evicted first", "[context][cache]") {
  const std::size_t one = [] {
    FileUnitsCache probe(std::size_t{1} << 30);
    return FileUnitsCache::charge(*probe.get("p.py", text(0)));
  }();
  FileUnitsCache cache(3 * one + one / 2);  // room for three
  for (int i = 0; i < 3; ++i) cache.get("f" + std::to_string(i) + ".py", text(i));
  const auto held = cache.get("f0.py", text(0));  // a hit: f0 is now the most recent
  cache.get("f3.py", text(3));                    // evicts f1
  CHECK(cache.stats().evictions == 1);
  CHECK(cache.stats().entries == 3);
  CHECK(cache.stats().bytes <= cache.max_bytes());
  const uint64_t hits = cache.stats().hits;
  cache.get("f0.py", text(0));
  cache.get("f2.py", text(2));
  CHECK(cache.stats().hits == hits + 2);
  cache.get("f1.py", text(1));  // a miss again, evicting f3 (used before f0 and f2)
  CHECK(cache.stats().hits == hits + 2);
  CHECK(cache.stats().evictions == 2);
  // An evicted entry a task still holds stays valid.
  CHECK(held->units[0].name == "f0");

  FileUnitsCache tiny(16);  // smaller than any entry
  const auto big = tiny.get("a.py", text(5));
  REQUIRE(big);
  CHECK(big->units[0].name == "f5");
  CHECK(tiny.stats().entries == 0);
  CHECK(tiny.stats().bytes == 0);
  vsynth::stages::ast::drain_retired();
}
