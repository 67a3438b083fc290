// Index: updates (only changed chunks embedded, ids reused), dense and lexical search
// (exclusion, ties, graph vs exact scan, coarse filter), file level, concurrency,
// determinism, and reciprocal-rank fusion.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/hash.h"
#include "index_util.h"
#include "stages/ast/language.h"
#include "stages/ast/parsed_file.h"
#include "stages/retrieval/index.h"
#include "test_embedder.h"

namespace vsynth::stages::retrieval {
namespace {

using test::BagEmbedder;
using test::described;
using test::file_path;
using test::file_text;
using test::function_text;

std::vector<float> embed_one(const Embedder& e, std::string_view text) {
  const std::string_view texts[] = {text};
  return e.embed(texts);
}

// Files 0..files-1 of `functions` functions each.
void fill(Index& index, int files, int functions) {
  for (int f = 0; f < files; ++f) index.update_file(file_path(f), file_text(f, functions));
}

TEST_CASE("update_file indexes a file once, and the same text again does nothing", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  Index index(embedder, {});
  const UpdateStats first = index.update_file("pkg/module_0.py", file_text(0, 5));
  CHECK_FALSE(first.unchanged);
  CHECK(first.added == 5);
  CHECK(first.removed == 0);
  CHECK(first.embedded == 5);
  CHECK(embedder->calls == 1);  // one batch
  CHECK(index.chunk_count() == 5);
  CHECK(index.file_count() == 1);
  CHECK(index.has_file("pkg/module_0.py"));
  CHECK(index.content_hash("pkg/module_0.py").has_value());
  CHECK_FALSE(index.content_hash("pkg/other.py").has_value());

  const UpdateStats again = index.update_file("pkg/module_0.py", file_text(0, 5));
  CHECK(again.unchanged);
  CHECK(again.added == 0);
  CHECK(embedder->calls == 1);
  CHECK(index.chunk_count() == 5);
}

TEST_CASE("an edit of one function embeds that chunk alone, the others keep their ids",
          "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  Index index(embedder, {});
  index.update_file(file_path(1), file_text(1, 8));
  const auto ids_before = index.search_lexical("apply", 100, {});
  REQUIRE(ids_before.size() == 8);
  const uint64_t texts_before = embedder->texts_embedded;

  // Function 3 edited; a new line above function 0 shifts every line.
  const std::string edited = "# a comment\n" + file_text(1, 8, 3, 1);
  const UpdateStats s = index.update_file(file_path(1), edited);
  CHECK(s.embedded == 1);
  CHECK(embedder->texts_embedded - texts_before == 1);
  CHECK(s.added == 1);
  CHECK(s.removed == 1);
  CHECK(s.reused_slots == 1);  // the edited chunk took the freed id
  CHECK(index.chunk_count() == 8);
  // Unchanged chunks moved down a line under their old ids.
  const auto ids_after = index.search_lexical("apply", 100, {});
  std::set<uint32_t> before, after;
  for (const Hit& h : ids_before) before.insert(h.chunk);
  for (const Hit& h : ids_after) after.insert(h.chunk);
  CHECK(before == after);
  const Hit first = index.search_lexical(function_text(1, 0), 1, {}).at(0);
  CHECK(first.data->first_line == 4);  // was 3
  CHECK(index.chunk(first.chunk).first_line == 4);
}

// Every chunk of the index as (path, first line, part, text), sorted.
std::vector<std::tuple<std::string, uint32_t, uint32_t, std::string>> contents(const Index& index) {
  std::vector<std::tuple<std::string, uint32_t, uint32_t, std::string>> out;
  for (const Hit& h : index.search_lexical("py", 100000, {})) {  // every text holds its path
    out.emplace_back(h.data->path, h.data->first_line, h.data->part, h.data->text);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("a file already parsed is indexed as its text would be", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  Index from_text(embedder, {}), from_parse(embedder, {});
  from_text.update_file(file_path(2), file_text(2, 6));
  const UpdateStats s = from_parse.update_file(std::make_shared<const ast::ParsedFile>(
      file_path(2), ast::Language::named("python"), file_text(2, 6)));
  CHECK(s.added == 6);
  CHECK(contents(from_parse) == contents(from_text));
  CHECK(from_parse.content_hash(file_path(2)) == from_text.content_hash(file_path(2)));
  CHECK(from_parse.update_file(file_path(2), file_text(2, 6)).unchanged);
}

TEST_CASE("reparse_files: edits parsed incrementally give the chunks of a fresh parse",
          "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  IndexOptions options;
  options.reparse_files = 2;
  Index incremental(embedder, options), fresh(embedder, {});
  for (int f = 0; f < 3; ++f) {
    incremental.update_file(file_path(f), file_text(f, 6));
    fresh.update_file(file_path(f), file_text(f, 6));
  }
  for (int edit = 0; edit < 12; ++edit) {
    const int f = edit % 3;  // three files through a cache of two: misses too
    const std::string text = file_text(f, 6 + edit % 2, edit % 6, edit + 1);
    const UpdateStats s = incremental.update_file(file_path(f), text);
    fresh.update_file(file_path(f), text);
    CHECK(s.embedded >= 1);
    CHECK(contents(incremental) == contents(fresh));
  }
}

TEST_CASE("200 edits of a file keep the hnsw graph bounded: freed ids are reused", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  Index index(embedder, {});
  fill(index, 3, 6);
  const std::size_t elements = index.graph_elements();
  CHECK(elements == 18);
  for (int edit = 0; edit < 200; ++edit) {
    // Alternate which function changes and how (always a text the file did not hold).
    index.update_file(file_path(1), file_text(1, 6, edit % 6, 1 + edit % 5));
  }
  CHECK(index.chunk_count() == 18);
  CHECK(index.graph_elements() <= elements + 1);
  // Still searchable: the current version's edited function is found by its own text.
  const std::string current = function_text(1, 199 % 6, 1 + 199 % 5);
  const auto hits = index.search_dense(embed_one(*embedder, "pkg/module_1.py\n" + current), 1, {});
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].data->text == "pkg/module_1.py\n" + current);
  CHECK(hits[0].score == Approx(1.0));
}

TEST_CASE("dense search: a chunk's own text finds it first, excluded files never appear",
          "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  Index index(embedder, {});
  fill(index, 20, 10);
  CHECK(index.chunk_count() == 200);
  const std::string text = "pkg/module_4.py\n" + function_text(4, 2);
  const std::vector<float> q = embed_one(*embedder, text);
  const auto hits = index.search_dense(q, 10, {});
  REQUIRE(hits.size() == 10);
  CHECK(hits[0].data->text == text);
  CHECK(hits[0].score == Approx(1.0));
  for (std::size_t i = 1; i < hits.size(); ++i) CHECK(hits[i - 1].score >= hits[i].score);

  const auto without = index.search_dense(q, 10, {"pkg/module_4.py", "pkg/module_7.py"});
  REQUIRE(without.size() == 10);
  for (const Hit& h : without) {
    CHECK(h.data->path != "pkg/module_4.py");
    CHECK(h.data->path != "pkg/module_7.py");
  }
  CHECK(index.search_dense(q, 0, {}).empty());
  CHECK_THROWS_AS(index.search_dense(std::vector<float>(3, 0.5f), 5, {}), IndexError);
}

TEST_CASE("the graph gives the exact scan's results on a small repository", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  IndexOptions graph_options;
  graph_options.exact_below = 0;  // always the hnsw graph
  Index exact(embedder, {}), graph(embedder, graph_options);
  fill(exact, 30, 10);
  fill(graph, 30, 10);
  for (int f = 0; f < 30; f += 3) {
    const std::vector<float> q = embed_one(*embedder, function_text(f, f % 10, 2));
    CHECK(described(graph.search_dense(q, 10, {})) == described(exact.search_dense(q, 10, {})));
    // Over-fetch: excluding the best file still leaves 10.
    const std::unordered_set<std::string> ex = {file_path(f)};
    CHECK(described(graph.search_dense(q, 10, ex)) == described(exact.search_dense(q, 10, ex)));
  }
}

TEST_CASE("lexical search ranks by BM25 over split identifiers, excluding files", "[retrieval]") {
  Index index(nullptr, {});  // no embedder: BM25 only
  CHECK_FALSE(index.dense());
  index.update_file("shop/cart.py",
                    "def compute_total_price(cart):\n    return sum(cart.items)\n\n"
                    "def empty_cart(cart):\n    cart.items.clear()\n");
  index.update_file("shop/tax.py", "def tax_for(price):\n    return price * 0.2\n");
  index.update_file("web/view.py", "def render_page(user):\n    return user.name\n");
  const auto hits = index.search_lexical("totalPrice of the cart", 10, {});
  REQUIRE(hits.size() == 3);
  CHECK(hits[0].data->name == "compute_total_price");  // total + price + cart
  CHECK(hits[1].data->name == "empty_cart");           // cart
  CHECK(hits[2].data->name == "tax_for");              // price
  CHECK(index.search_lexical("totalPrice", 10, {"shop/cart.py"}).size() == 1);
  CHECK(index.search_lexical("nothing matches", 10, {}).empty());
  CHECK(index.search_dense(std::vector<float>(64, 0.125f), 5, {}).empty());
}

TEST_CASE("ties are broken by path, then line, whatever the insertion order", "[retrieval]") {
  Index index(nullptr, {});
  // Identical functions in three files, inserted out of order: equal BM25 scores.
  const std::string f = "def same_helper(x):\n    return x\n";
  index.update_file("b/z.py", f + "\n" + f);
  index.update_file("a/y.py", f);
  index.update_file("c/x.py", f);
  // Same-length paths of one-letter words (dropped terms): four chunks of equal terms.
  const auto hits = index.search_lexical("same_helper", 10, {});
  REQUIRE(hits.size() == 4);
  for (const Hit& h : hits) CHECK(h.score == hits[0].score);
  CHECK(hits[0].data->path == "a/y.py");
  CHECK(hits[1].data->path == "b/z.py");
  CHECK(hits[1].data->first_line == 1);
  CHECK(hits[2].data->path == "b/z.py");
  CHECK(hits[2].data->first_line == 4);
  CHECK(hits[3].data->path == "c/x.py");
}

TEST_CASE("same files inserted in two orders give the same results", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  for (const uint32_t exact_below : {4096u, 0u}) {
    IndexOptions options;
    options.exact_below = exact_below;
    Index forward(embedder, options), backward(embedder, options);
    for (int f = 0; f < 25; ++f) forward.update_file(file_path(f), file_text(f, 8));
    for (int f = 24; f >= 0; --f) backward.update_file(file_path(f), file_text(f, 8));
    // An edit and a removal on one side, the same end state built directly on the other.
    forward.update_file(file_path(30), file_text(30, 8));
    forward.remove_file(file_path(30));
    for (int f = 0; f < 25; f += 4) {
      const std::string q = function_text(f, 1, 3);
      INFO("exact_below " << exact_below << " query " << q);
      CHECK(described(forward.search_dense(embed_one(*embedder, q), 10, {})) ==
            described(backward.search_dense(embed_one(*embedder, q), 10, {})));
      CHECK(described(forward.search_lexical(q, 10, {})) ==
            described(backward.search_lexical(q, 10, {})));
    }
    CHECK(forward.files() == backward.files());
  }
}

TEST_CASE("files indexed from several threads at once give the sequential build's results",
          "[retrieval]") {
  // How a repository is indexed: chunking and embedding run in parallel outside the lock.
  auto embedder = std::make_shared<BagEmbedder>();
  Index parallel(embedder, {}), sequential(embedder, {});
  fill(sequential, 24, 6);
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int f = t; f < 24; f += 4) parallel.update_file(file_path(f), file_text(f, 6));
    });
  }
  for (std::thread& w : writers) w.join();
  CHECK(parallel.chunk_count() == sequential.chunk_count());
  CHECK(parallel.files() == sequential.files());
  for (int f = 0; f < 24; f += 5) {
    const std::string q = function_text(f, 2, 1);
    CHECK(described(parallel.search_dense(embed_one(*embedder, q), 10, {})) ==
          described(sequential.search_dense(embed_one(*embedder, q), 10, {})));
    CHECK(described(parallel.search_lexical(q, 10, {})) ==
          described(sequential.search_lexical(q, 10, {})));
  }
}

TEST_CASE("two writers racing on one file leave the index of the last text swapped in",
          "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  Index index(embedder, {});
  fill(index, 4, 8);
  const auto version = [](int writer, int i) { return file_text(1, 8, i % 8, writer * 100 + i); };
  std::vector<std::thread> writers;
  for (int w = 1; w <= 2; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 60; ++i) index.update_file(file_path(1), version(w, i));
    });
  }
  for (std::thread& t : writers) t.join();
  // Whichever last text won, the index is exactly a fresh build with it: chunks, postings
  // (BM25 scores) and vectors.
  const std::optional<uint64_t> current = index.content_hash(file_path(1));
  REQUIRE(current.has_value());
  const std::string last =
      *current == vsynth::base::fnv1a64(version(1, 59)) ? version(1, 59) : version(2, 59);
  CHECK(*current == vsynth::base::fnv1a64(last));
  Index fresh(embedder, {});
  fill(fresh, 4, 8);
  fresh.update_file(file_path(1), last);
  CHECK(contents(index) == contents(fresh));
  for (int f = 0; f < 4; ++f) {
    const std::string q = function_text(f, 3, 1);
    CHECK(described(index.search_lexical(q, 10, {})) == described(fresh.search_lexical(q, 10, {})));
    CHECK(described(index.search_dense(embed_one(*embedder, q), 10, {})) ==
          described(fresh.search_dense(embed_one(*embedder, q), 10, {})));
  }
}

TEST_CASE("the coarse filter searches the chunks of the nearest files", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  IndexOptions options;
  options.coarse_files = 3;
  Index coarse(embedder, options), full(embedder, {});
  fill(coarse, 20, 6);
  fill(full, 20, 6);
  const std::string text = "pkg/module_9.py\n" + function_text(9, 4);
  const std::vector<float> q = embed_one(*embedder, text);
  const auto hits = coarse.search_dense(q, 10, {});
  REQUIRE(!hits.empty());
  CHECK(hits[0].data->text == text);
  std::set<std::string> files;
  for (const Hit& h : hits) files.insert(h.data->path);
  CHECK(files.size() <= 3);
  CHECK(files.count("pkg/module_9.py") == 1);
  // Every hit is scored exactly, as in the full search.
  const auto all = full.search_dense(q, 200, {});
  for (const Hit& h : hits) {
    const auto it = std::find_if(all.begin(), all.end(),
                                 [&](const Hit& a) { return a.data->text == h.data->text; });
    REQUIRE(it != all.end());
    CHECK(it->score == Approx(h.score));
  }
  // Excluded files are left out of the coarse step too.
  for (const Hit& h : coarse.search_dense(q, 10, {"pkg/module_9.py"})) {
    CHECK(h.data->path != "pkg/module_9.py");
  }
}

TEST_CASE("the file level resolves import edges by stem", "[retrieval]") {
  Index index(nullptr, {});
  index.update_file("shop/__init__.py", "from .cart import Cart\n");
  index.update_file("shop/cart.py", "from shop.money import Money\n\nclass Cart:\n    pass\n");
  index.update_file("shop/money.py", "class Money:\n    pass\n");
  index.update_file("app.py", "import shop\n\ndef main():\n    pass\n");
  CHECK(index.imports("shop/cart.py") ==
        std::vector<std::string>{"shop/__init__.py", "shop/money.py"});
  CHECK(index.imports("app.py") == std::vector<std::string>{"shop/__init__.py"});
  CHECK(index.imports("shop/__init__.py") == std::vector<std::string>{"shop/cart.py"});
  CHECK(index.imports("shop/money.py").empty());
  CHECK(index.files() ==
        std::vector<std::string>{"app.py", "shop/__init__.py", "shop/cart.py", "shop/money.py"});
}

TEST_CASE("remove_file and a file turned binary drop its chunks", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  Index index(embedder, {});
  fill(index, 3, 4);
  index.remove_file(file_path(0));
  CHECK_FALSE(index.has_file(file_path(0)));
  CHECK(index.chunk_count() == 8);
  const UpdateStats s = index.update_file(file_path(1), std::string("\x7f"
                                                                    "ELF\0\0",
                                                                    6));
  CHECK(s.removed == 4);
  CHECK(s.skipped.find("binary") != std::string::npos);
  CHECK(index.has_file(file_path(1)));  // known, with no chunks: unchanged next time
  const UpdateStats again = index.update_file(file_path(1), std::string("\x7f"
                                                                        "ELF\0\0",
                                                                        6));
  CHECK(again.unchanged);
  // Still said: a caller counting skipped files (vsynth index, a warm run) sees it each time.
  CHECK(again.skipped == s.skipped);
  CHECK(index.chunk_count() == 4);
  for (const Hit& h : index.search_lexical("apply total result", 50, {})) {
    CHECK(h.data->path == file_path(2));
  }
  CHECK_THROWS_AS(index.chunk(10'000), IndexError);
}

// An embedder that breaks its contract: rows short of dim floats each, or no dimension.
class BrokenEmbedder final : public Embedder {
 public:
  explicit BrokenEmbedder(int dim) : dim_(dim) {}
  int dim() const override { return dim_; }
  const std::string& fingerprint() const override { return name_; }
  uint32_t count_tokens(std::string_view text) const override {
    return static_cast<uint32_t>(text.size() / 4 + 2);
  }
  std::vector<float> embed(std::span<const std::string_view> texts) const override {
    return std::vector<float>(texts.size() * 3, 0.5f);
  }

 private:
  int dim_;
  std::string name_ = "broken";
};

TEST_CASE("an embedder that breaks its contract is an IndexError naming it", "[retrieval]") {
  Index index(std::make_shared<BrokenEmbedder>(8), {});
  try {
    index.update_file(file_path(0), file_text(0, 2));
    FAIL("no error");
  } catch (const IndexError& e) {
    CHECK(std::string(e.what()).find("embedder broken returned 6 floats for 2 texts of dim 8") !=
          std::string::npos);
  }
  CHECK_FALSE(index.has_file(file_path(0)));  // nothing half-indexed
  CHECK_THROWS_AS(Index(std::make_shared<BrokenEmbedder>(0), {}), IndexError);
}

TEST_CASE("readers never see a half-updated file", "[retrieval]") {
  // The writer alternates two versions of one file whose every chunk is marked with its
  // version; each result set must hold the chunks of one version, all of them.
  auto embedder = std::make_shared<BagEmbedder>();
  Index index(embedder, {});
  const auto version = [](const std::string& tag) {
    std::string out;
    for (int i = 0; i < 12; ++i) {
      out += "def " + tag + "_shared_word_" + std::to_string(i) + "(x):\n    return " + tag +
             "_marker + shared_word + x\n\n";
    }
    return out;
  };
  const std::string a = version("alpha"), b = version("beta");
  index.update_file("pkg/live.py", a);
  fill(index, 5, 4);
  const std::vector<float> q = embed_one(*embedder, "shared_word marker alpha beta");

  std::atomic<bool> stop{false};
  std::atomic<int> mixed{0}, sets{0};
  std::thread writer([&] {
    for (int i = 0; i < 300; ++i) index.update_file("pkg/live.py", i % 2 ? a : b);
    stop = true;
  });
  // The query matches every chunk of either version better than any other file's: a set
  // is whole when it holds the 12 chunks of exactly one version.
  const auto check = [&](const std::vector<Hit>& hits) {
    int alpha = 0, beta = 0;
    for (const Hit& h : hits) {
      if (h.data->path != "pkg/live.py") continue;
      alpha += h.data->text.find("alpha_marker") != std::string::npos;
      beta += h.data->text.find("beta_marker") != std::string::npos;
    }
    if (!((alpha == 12 && beta == 0) || (alpha == 0 && beta == 12))) ++mixed;
    ++sets;
  };
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!stop) {
        check(index.search_lexical("shared_word marker alpha beta", 30, {}));
        check(index.search_dense(q, 30, {}));
      }
    });
  }
  writer.join();
  for (std::thread& t : readers) t.join();
  INFO(sets.load() << " result sets");
  CHECK(sets > 0);
  CHECK(mixed == 0);
  CHECK(index.chunk_count() == 12 + 20);
}

TEST_CASE("reciprocal-rank fusion sums weight / (k + rank) over the lists", "[retrieval]") {
  const std::vector<RankedList> lists = {{{7, 3, 9}, 1.0}, {{3, 5}, 2.0}};
  const auto fused = reciprocal_rank_fusion(lists, 60);
  REQUIRE(fused.size() == 4);
  // 3: 1/62 + 2/61; 5: 2/62; 7: 1/61; 9: 1/63.
  CHECK(fused[0].first == 3);
  CHECK(fused[0].second == Approx(1.0 / 62 + 2.0 / 61));
  CHECK(fused[1].first == 5);
  CHECK(fused[1].second == Approx(2.0 / 62));
  CHECK(fused[2].first == 7);
  CHECK(fused[2].second == Approx(1.0 / 61));
  CHECK(fused[3].first == 9);
  CHECK(fused[3].second == Approx(1.0 / 63));
  // Equal scores: the better best rank first, then the earlier list, then the id; a repeat
  // in one list counts once.
  const std::vector<RankedList> ties = {{{4, 8, 4}, 1.0}, {{8, 4}, 1.0}, {{2}, 0.0}};
  const auto t = reciprocal_rank_fusion(ties, 10);
  REQUIRE(t.size() == 3);
  CHECK(t[0].second == Approx(t[1].second));
  CHECK(t[0].first == 4);  // rank 1 in the first list
  CHECK(t[1].first == 8);
  CHECK(t[2].first == 2);
  CHECK(t[2].second == 0.0);
  CHECK(reciprocal_rank_fusion({}, 60).empty());
}

}  // namespace
}  // namespace vsynth::stages::retrieval
