// Overlays kept across requests (overlay_cache.h) and what they are built from: an index made
// with an earlier version's chunks (`previous`) or from already extracted units is the index a
// cold build makes, only cheaper; an index without a graph searches exactly; the cache returns
// the same overlay for the same files, builds an edited file's overlay embedding only its
// changed chunks, and stays within its byte budget.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "index_util.h"
#include "stages/ast/language.h"
#include "stages/ast/parsed_file.h"
#include "stages/context/unit_extract.h"
#include "stages/retrieval/index.h"
#include "stages/retrieval/overlay_cache.h"
#include "test_embedder.h"

namespace vsynth::stages::retrieval {
namespace {

using test::BagEmbedder;
using test::file_path;
using test::file_text;
using test::function_text;

std::vector<float> embed_one(const Embedder& e, std::string_view text) {
  const std::string_view texts[] = {text};
  return e.embed(texts);
}

// Everything a search can see of an index: every chunk (ids included), and the exact results
// of a few queries, lexical and dense.
using Chunks = std::vector<std::tuple<uint32_t, std::string, uint32_t, uint32_t, uint32_t, uint32_t,
                                      uint32_t, std::string>>;
Chunks chunks_of(const Index& index) {
  Chunks out;
  for (const Hit& h : index.search_lexical("py", 100000, {})) {  // every text holds its path
    const Chunk& c = *h.data;
    out.emplace_back(h.chunk, c.path, c.first_line, c.last_line, c.unit_first_line,
                     c.unit_last_line, c.tokens, c.text);
  }
  std::sort(out.begin(), out.end());
  return out;
}
using Results = std::vector<std::tuple<uint32_t, double>>;
Results results_of(const Index& index, const Embedder& e) {
  Results out;
  for (int i = 0; i < 6; ++i) {
    const std::string q = function_text(1, i, 3);
    for (const Hit& h : index.search_lexical(q, 10, {})) out.emplace_back(h.chunk, h.score);
    for (const Hit& h : index.search_dense(embed_one(e, q), 10, {})) {
      out.emplace_back(h.chunk, h.score);
    }
  }
  return out;
}

IndexOptions graphless() {
  return OverlayCache::overlay_options({});
}

TEST_CASE("an index built with an earlier version's chunks is the cold build, embedding less",
          "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  Index before(embedder, graphless());
  before.update_file(file_path(1), file_text(1, 12));
  // Function 4 edited and a line added on top (every line moves).
  const std::string edited = "# edited\n" + file_text(1, 12, 4, 2);
  const uint64_t texts0 = embedder->texts_embedded;
  Index warm(embedder, graphless());
  const UpdateStats s = warm.update_file(file_path(1), edited, &before);
  CHECK(s.embedded == 1);  // the changed function only
  CHECK(embedder->texts_embedded - texts0 == 1);
  CHECK(s.added == 12);
  Index cold(embedder, graphless());
  CHECK(cold.update_file(file_path(1), edited).embedded == 12);
  CHECK(chunks_of(warm) == chunks_of(cold));
  CHECK(results_of(warm, *embedder) == results_of(cold, *embedder));
  // Another path's chunks are never taken, nor an index of another embedder's.
  Index other(embedder, graphless());
  CHECK(other.update_file(file_path(2), file_text(2, 5), &before).embedded == 5);
  auto stranger = std::make_shared<BagEmbedder>(64, "another-model");
  Index foreign(stranger, graphless());
  CHECK(foreign.update_file(file_path(1), edited, &before).embedded == 12);
}

TEST_CASE("a file's extracted units index as its text does", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  const std::string text = file_text(3, 7);
  Index from_text(embedder, graphless()), from_units(embedder, graphless());
  from_text.update_file(file_path(3), text);
  auto units = context::extract_file_units(
      std::make_shared<const ast::ParsedFile>(file_path(3), ast::Language::named("python"), text));
  CHECK(from_units.update_file(units).added == 7);
  CHECK(chunks_of(from_units) == chunks_of(from_text));
  CHECK(from_units.content_hash(file_path(3)) == from_text.content_hash(file_path(3)));
}

TEST_CASE("an index without a graph searches exactly at any size", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  IndexOptions exact = graphless();
  exact.exact_below = 0;  // would send a graph index to its graph
  Index overlay(embedder, exact);
  IndexOptions scan;
  scan.exact_below = 1u << 30;
  Index reference(embedder, scan);
  for (int f = 0; f < 6; ++f) {
    overlay.update_file(file_path(f), file_text(f, 10));
    reference.update_file(file_path(f), file_text(f, 10));
  }
  CHECK(overlay.graph_elements() == 0);
  CHECK(overlay.dense());
  CHECK(test::described(overlay.search_dense(embed_one(*embedder, function_text(2, 3)), 20, {})) ==
        test::described(reference.search_dense(embed_one(*embedder, function_text(2, 3)), 20, {})));
}

std::vector<OverlayFile> files_of(const std::vector<std::pair<std::string, std::string>>& texts) {
  std::vector<OverlayFile> out;
  for (const auto& [path, text] : texts) out.push_back({path, text, nullptr});
  return out;
}

TEST_CASE("the overlay cache: the same files hit, an edit embeds its changed chunk, equal to cold",
          "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  OverlayCache cache(embedder, {}, 64 << 20);
  const std::vector<std::pair<std::string, std::string>> v1 = {{file_path(2), file_text(2, 9)},
                                                               {file_path(1), file_text(1, 20)}};
  const OverlayCache::Result a = cache.get(files_of(v1));
  CHECK_FALSE(a.hit);
  CHECK(a.embedded == 29);
  const OverlayCache::Result b = cache.get(files_of(v1));
  CHECK(b.hit);
  CHECK(b.index == a.index);  // shared as it is
  CHECK(b.embedded == 0);

  // The next version of file 1 (function 7 edited), file 2 unchanged.
  const std::vector<std::pair<std::string, std::string>> v2 = {
      {file_path(1), file_text(1, 20, 7, 5)}, {file_path(2), file_text(2, 9)}};
  const OverlayCache::Result c = cache.get(files_of(v2));
  CHECK_FALSE(c.hit);
  CHECK(c.embedded == 1);
  OverlayCache cold(embedder, {}, 0);  // keeps nothing: every overlay built afresh
  const OverlayCache::Result d = cold.get(files_of(v2));
  CHECK(d.embedded == 29);
  CHECK(chunks_of(*c.index) == chunks_of(*d.index));
  CHECK(results_of(*c.index, *embedder) == results_of(*d.index, *embedder));
  CHECK_FALSE(cold.get(files_of(v2)).hit);
  CHECK(cold.counters().entries == 0);

  const OverlayCache::Counters n = cache.counters();
  CHECK(n.lookups == 3);
  CHECK(n.hits == 1);
  CHECK(n.entries == 2);
  CHECK(n.bytes > 0);
}

TEST_CASE("the overlay cache stays within its budget, least recently used out first",
          "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  // Measure one overlay, then allow about three.
  std::size_t one = 0;
  {
    OverlayCache probe(embedder, {}, 64 << 20);
    probe.get(files_of({{file_path(0), file_text(0, 10)}}));
    one = probe.counters().bytes;
    REQUIRE(one > 0);
  }
  OverlayCache cache(embedder, {}, one * 3 + one / 2);
  for (int f = 0; f < 5; ++f) cache.get(files_of({{file_path(0), file_text(0, 10, 1, f)}}));
  const OverlayCache::Counters n = cache.counters();
  CHECK(n.entries == 3);
  CHECK(n.evictions == 2);
  CHECK(n.bytes <= one * 3 + one / 2);
  // The oldest are gone, the newest kept; using one makes it the last to go.
  CHECK_FALSE(cache.get(files_of({{file_path(0), file_text(0, 10, 1, 0)}})).hit);
  CHECK(cache.get(files_of({{file_path(0), file_text(0, 10, 1, 4)}})).hit);
}

TEST_CASE("overlays asked for from many threads at once equal the cold build", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  OverlayCache cache(embedder, {}, 1 << 20);  // small: evictions while others build
  std::vector<std::string> versions;
  for (int v = 0; v < 8; ++v) versions.push_back(file_text(4, 16, v, v));
  std::vector<Chunks> cold;
  for (const std::string& text : versions) {
    Index index(embedder, graphless());
    index.update_file(file_path(4), text);
    cold.push_back(chunks_of(index));
  }
  std::vector<std::thread> threads;
  std::atomic<int> differ{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 24; ++i) {
        const std::size_t v = static_cast<std::size_t>((t * 5 + i * 3) % 8);
        const OverlayCache::Result r = cache.get(files_of({{file_path(4), versions[v]}}));
        differ += chunks_of(*r.index) != cold[v];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(differ == 0);
}

}  // namespace
}  // namespace vsynth::stages::retrieval
