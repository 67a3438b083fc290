// save / load: a round trip gives the same results; another embedder, format or chunking
// and damaged files are IndexErrors naming what differs; a save never leaves half an index.
#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "base/hash.h"
#include "index_util.h"
#include "stages/retrieval/index.h"
#include "test_embedder.h"

namespace vsynth::stages::retrieval {
namespace {

using test::BagEmbedder;
using test::described;
using test::file_path;
using test::file_text;
using test::function_text;
namespace fs = std::filesystem;

struct TempDir {
  fs::path path =
      fs::temp_directory_path() /
      ("vsynth_retrieval_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<float> embed_one(const Embedder& e, std::string_view text) {
  const std::string_view texts[] = {text};
  return e.embed(texts);
}

std::string load_error(const fs::path& dir, std::shared_ptr<const Embedder> e,
                       IndexOptions options = {}) {
  try {
    Index::load(dir, std::move(e), options);
  } catch (const IndexError& error) {
    return error.what();
  }
  return "";
}

// An index of 12 files with edits and a removal behind it (freed and reused ids).
std::unique_ptr<Index> build(std::shared_ptr<const Embedder> e, IndexOptions options = {}) {
  auto index = std::make_unique<Index>(std::move(e), options);
  for (int f = 0; f < 12; ++f) index->update_file(file_path(f), file_text(f, 6));
  index->update_file(file_path(3), file_text(3, 6, 2, 4));
  index->update_file(file_path(5), file_text(5, 4));
  index->remove_file(file_path(7));
  index->update_file("notes.bin", std::string("\0\1\2", 3));
  return index;
}

TEST_CASE("save then load gives identical search results", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  TempDir tmp;
  for (const uint32_t exact_below : {4096u, 0u}) {
    IndexOptions options;
    options.exact_below = exact_below;
    const auto index = build(embedder, options);
    const fs::path dir = tmp.path / ("index_" + std::to_string(exact_below));
    index->save(dir);
    CHECK(fs::exists(dir / "manifest.json"));
    CHECK(fs::exists(dir / "hnsw.bin"));
    const auto loaded = Index::load(dir, embedder, options);
    CHECK(loaded->files() == index->files());
    CHECK(loaded->chunk_count() == index->chunk_count());
    CHECK(loaded->graph_elements() == index->graph_elements());
    for (const std::string& f : index->files()) {
      CHECK(loaded->content_hash(f) == index->content_hash(f));
      CHECK(loaded->imports(f) == index->imports(f));
    }
    for (int f = 0; f < 12; f += 2) {
      const std::string q = function_text(f, f % 6, 1);
      const auto qv = embed_one(*embedder, q);
      CHECK(described(loaded->search_dense(qv, 10, {})) ==
            described(index->search_dense(qv, 10, {})));
      CHECK(described(loaded->search_lexical(q, 10, {})) ==
            described(index->search_lexical(q, 10, {})));
      const auto a = loaded->search_dense(qv, 5, {});
      const auto b = index->search_dense(qv, 5, {});
      for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        CHECK(a[i].chunk == b[i].chunk);  // ids survive too
        CHECK(a[i].data->text == b[i].data->text);
        CHECK(a[i].data->name == b[i].data->name);
        CHECK(a[i].data->kind == b[i].data->kind);
        CHECK(a[i].data->tokens == b[i].data->tokens);
        CHECK(a[i].data->unit_first_line == b[i].data->unit_first_line);
        CHECK(a[i].data->unit_last_line == b[i].data->unit_last_line);
        CHECK(a[i].data->unit_first_line == a[i].data->first_line);  // one-piece units
      }
    }
    // A loaded index keeps updating: unchanged files cost nothing, freed ids are reused.
    CHECK(loaded->update_file(file_path(0), file_text(0, 6)).unchanged);
    const UpdateStats s = loaded->update_file(file_path(1), file_text(1, 6, 0, 2));
    CHECK(s.embedded == 1);
    CHECK(s.reused_slots == 1);
  }
  // An index without a graph (a task's overlay) is not saved: loading needs the graph.
  IndexOptions graphless;
  graphless.graph = false;
  const auto overlay = build(embedder, graphless);
  CHECK_THROWS_WITH(overlay->save(tmp.path / "overlay"), Catch::Contains("without a graph"));
  CHECK_FALSE(fs::exists(tmp.path / "overlay"));
  // A BM25-only index round-trips too.
  const auto lexical = build(nullptr);
  lexical->save(tmp.path / "lexical");
  const auto back = Index::load(tmp.path / "lexical", nullptr, {});
  CHECK(described(back->search_lexical("apply result", 20, {})) ==
        described(lexical->search_lexical("apply result", 20, {})));
}

TEST_CASE("save then load keeps each chunk's called names and the usage lookups", "[retrieval]") {
  TempDir tmp;
  Index index(nullptr, {});
  index.update_file("a.py", "def fa():\n    load()\n    clean()\n");
  index.update_file("b.py", "def clean():\n    pass\n");
  index.save(tmp.path / "idx");
  const std::unique_ptr<Index> loaded = Index::load(tmp.path / "idx", nullptr, {});
  const std::vector<std::string> names = {"clean", "load"};
  REQUIRE(loaded->callers(names, {}).size() == 1);
  CHECK(loaded->callers(names, {})[0].data->calls == std::vector<std::string>{"clean", "load"});
  CHECK(loaded->caller_counts(names, {}) == index.caller_counts(names, {}));
  REQUIRE(loaded->definitions(names, {}).size() == 1);
  CHECK(loaded->definitions(names, {})[0].data->path == "b.py");
}

TEST_CASE("saving over an index replaces it whole", "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  TempDir tmp;
  const fs::path dir = tmp.path / "index";
  build(embedder)->save(dir);
  Index small(embedder, {});
  small.update_file(file_path(0), file_text(0, 2));
  small.save(dir);
  const auto loaded = Index::load(dir, embedder, {});
  CHECK(loaded->files() == std::vector<std::string>{file_path(0)});
  CHECK(loaded->chunk_count() == 2);
  // Nothing left beside it: no temporary directories.
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(tmp.path)) entries += e.exists() ? 1 : 0;
  CHECK(entries == 1);
}

TEST_CASE("loading with another embedder, format or chunking is an IndexError naming both",
          "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  TempDir tmp;
  const fs::path dir = tmp.path / "index";
  build(embedder)->save(dir);

  std::string e = load_error(dir, std::make_shared<BagEmbedder>(64, "other-model"));
  CHECK(e.find("test-bag-64 (dim 64)") != std::string::npos);
  CHECK(e.find("other-model (dim 64)") != std::string::npos);
  e = load_error(dir, std::make_shared<BagEmbedder>(32, "test-bag-64"));
  CHECK(e.find("(dim 32)") != std::string::npos);
  e = load_error(dir, nullptr);
  CHECK(e.find("loading with none") != std::string::npos);
  IndexOptions options;
  options.chunks.max_tokens = 128;
  e = load_error(dir, embedder, options);
  CHECK(e.find("max_tokens 256") != std::string::npos);
  CHECK(e.find("max_tokens 128") != std::string::npos);

  nlohmann::json manifest = nlohmann::json::parse(slurp(dir / "manifest.json"));
  manifest["format"] = 99;
  spit(dir / "manifest.json", manifest.dump());
  e = load_error(dir, embedder);
  CHECK(e.find("format version 99") != std::string::npos);
  CHECK(e.find("reads version 3") != std::string::npos);

  spit(dir / "manifest.json", "{not json");
  CHECK(load_error(dir, embedder).find("manifest.json is not valid JSON") != std::string::npos);
  CHECK(load_error(tmp.path / "missing", embedder).find("cannot open") != std::string::npos);
}

TEST_CASE("a damaged hnsw.bin, vectors or chunks file is refused before it is read",
          "[retrieval]") {
  auto embedder = std::make_shared<BagEmbedder>();
  TempDir tmp;
  const fs::path dir = tmp.path / "index";
  build(embedder)->save(dir);
  const std::string graph = slurp(dir / "hnsw.bin");
  const std::string manifest = slurp(dir / "manifest.json");

  // A flipped byte, a truncation: the checksum.
  std::string bad = graph;
  bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x5a);
  spit(dir / "hnsw.bin", bad);
  std::string e = load_error(dir, embedder);
  CHECK(e.find("hnsw.bin is damaged") != std::string::npos);
  spit(dir / "hnsw.bin", graph.substr(0, graph.size() / 3));
  CHECK(load_error(dir, embedder).find("hnsw.bin is damaged") != std::string::npos);

  // Damage the manifest agrees with (a file written wrong): the structural check.
  bad = graph;
  const uint32_t huge = 1u << 30;
  std::memcpy(bad.data() + 96 + 4, &huge, sizeof huge);
  spit(dir / "hnsw.bin", bad);
  nlohmann::json m = nlohmann::json::parse(manifest);
  m["checksums"]["hnsw.bin"]["fnv1a64"] = fmt::format("{:016x}", vsynth::base::fnv1a64(bad));
  spit(dir / "manifest.json", m.dump());
  e = load_error(dir, embedder);
  CHECK(e.find("hnsw.bin: element 0 level 0: neighbour") != std::string::npos);
  spit(dir / "hnsw.bin", graph);
  spit(dir / "manifest.json", manifest);
  CHECK(load_error(dir, embedder).empty());

  const std::string vectors = slurp(dir / "vectors.f32");
  spit(dir / "vectors.f32", vectors.substr(4));
  CHECK(load_error(dir, embedder).find("vectors.f32 is damaged") != std::string::npos);
  spit(dir / "vectors.f32", vectors);
  const std::string chunks = slurp(dir / "chunks.jsonl");
  spit(dir / "chunks.jsonl", chunks + "x");
  CHECK(load_error(dir, embedder).find("chunks.jsonl is damaged") != std::string::npos);
  spit(dir / "chunks.jsonl", chunks);
  CHECK(load_error(dir, embedder).empty());
}

}  // namespace
}  // namespace vsynth::stages::retrieval
