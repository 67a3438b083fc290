// The retrieval index of one repository: function-level chunks of its files, each with BM25
// terms and an embedding, searchable lexically (an inverted index, BM25) and densely (hnswlib,
// inner product over unit vectors = cosine), with a file level above the chunks (one vector
// per file, the mean of its chunks' vectors, plus its import edges) for a coarse filter on
// large repositories.
//
//   Index index(embedder, {});                       // embedder may be null: BM25 only
//   index.update_file("shop/cart.py", text);         // re-embeds only a changed file
//   std::vector<Hit> d = index.search_dense(query_vec, 20, {});
//   std::vector<Hit> l = index.search_lexical(query_text, 20, {});
//   const Chunk& c = index.chunk(d[0].chunk);
//
// Updates: update_file replaces one file's chunks as a whole; chunks whose text the file
// already held keep their id and embedding (only their lines move), so an edit of one
// function embeds one chunk. Removed chunks are markDelete'd in hnswlib and their labels
// reused by later chunks (a deleted label's element is updated in place), so the graph does
// not grow with edits. Readers never see a half-updated file: one std::shared_mutex guards
// the index; searches hold it shared, update_file computes the new chunks and their
// embeddings outside the lock and swaps them in under the exclusive lock (hnswlib 0.6 is not
// safe for an insert concurrent with a search), and each Hit carries the chunk as searched.
// docs/architecture.md, "Retrieval", has the details.
//
// Persistence: save(dir) writes the chunks, terms, vectors and the hnswlib graph with a manifest
// (format version, embedder fingerprint, options, per-file content hash); load(dir) refuses a
// directory written by another format version or embedder (IndexError naming both) and
// returns per file whether it is still current, so a caller re-validates by content hash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "stages/facets/context.h"
#include "stages/retrieval/embedder.h"
#include "stages/retrieval/lexical.h"

namespace vsynth::stages::ast {
class ParsedFile;
}
namespace vsynth::stages::context {
struct FileUnits;
}

namespace vsynth::stages::retrieval {

class IndexError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One searchable piece of a file: a unit as context extraction makes it (function, method,
// class header with its fields...), long units split into pieces that each repeat the unit's
// signature line(s).
struct Chunk {
  std::string path;  // as the task or the repository names the file
  std::string name;  // qualified as extraction names it ("Cart.receipt")
  facets::UnitKind kind = facets::UnitKind::Function;
  uint32_t first_line = 0, last_line = 0;  // 1-based, inclusive, of this piece in the file
  uint32_t part = 0, parts = 1;            // piece index / count of its unit
  // 1-based, inclusive, of the whole unit this is a piece of (= first_line/last_line for a
  // unit in one piece; 0 when unknown): a hit on a piece shows the whole unit.
  uint32_t unit_first_line = 0, unit_last_line = 0;
  std::string text;     // what is embedded and term-indexed
  uint32_t tokens = 0;  // encoder tokens of text (after truncation)
  // The distinct names this piece's own rows call (usage.h's called_names: the unit's name,
  // keywords and the enclosing containers' rows left out), sorted: the usage list's input.
  std::vector<std::string> calls;
};

struct ChunkOptions {
  uint32_t max_tokens = 256;  // per piece, encoder tokens ([CLS]/[SEP] included)
};

// The chunks of one file (language from the path's extension; an unknown language, binary or
// undecodable text gives no chunks and a reason in `skipped`).
std::vector<Chunk> chunk_file(std::string_view path, std::string_view text,
                              const ChunkOptions& options, const Embedder* counter,
                              std::string* skipped = nullptr);

struct IndexOptions {
  ChunkOptions chunks;
  // hnswlib M and ef_construction (a loaded index keeps those it was built with)
  int hnsw_m = 16;
  int hnsw_ef_construction = 200;
  int hnsw_ef_search = 64;    // raised to k when k is larger
  uint32_t coarse_files = 0;  // files kept by the file-level filter; 0 = search all chunks
  // An index with fewer live chunks than this is searched by an exact scan instead of the
  // graph (under ~1 ms at 384 dims): small repositories get exact, order-independent results.
  uint32_t exact_below = 4096;
  // Keep the parse trees of this many most recently updated files and parse their next
  // version incrementally from the last one (an editor session saving one file again and
  // again: a 2,000-line file re-parses in a fraction of a full parse). 0 (default): every
  // text is parsed afresh, since tree-sitter's incremental tree is not always the tree a
  // fresh parse gives (stages/ast/parse_cache.h), and chunks would depend on edit history.
  uint32_t reparse_files = 0;
  // Keep an hnswlib graph of the chunks. false: dense search is always an exact scan (a
  // task's overlay of its own few files, made once per version of them: no graph to build,
  // and results independent of the order chunks came in, at any size).
  bool graph = true;
};

struct Hit {
  uint32_t chunk = 0;  // Index::chunk id
  double score = 0;    // cosine (dense) or BM25 (lexical); higher is better
  // The chunk as it was when the search ran: a result set is one consistent view even when
  // an update replaces the file (and frees or reuses the id) right after the search returns.
  std::shared_ptr<const Chunk> data;
};

struct UpdateStats {
  uint32_t added = 0, removed = 0, reused_slots = 0;
  bool unchanged = false;  // same content hash as indexed: nothing done
  uint32_t embedded = 0;   // texts sent to the embedder (chunks whose text is new to the file)
  std::string skipped;     // why the file has no chunks (chunk_file's reason), or ""
  double embed_ms = 0, total_ms = 0;
};

class Index {
 public:
  Index(std::shared_ptr<const Embedder> embedder, IndexOptions options);
  ~Index();

  // `previous`, when given, is another index holding an earlier version of the file (the
  // last overlay of it): the BM25 terms and embeddings of its chunks of `path` are taken for
  // the chunks of the new text that have the same text, so only chunks whose text is new to
  // both are term-counted and embedded. A chunk's terms and embedding are functions of its text
  // (and the path's language): the index is the same as without it, only made faster.
  UpdateStats update_file(std::string_view path, std::string_view text,
                          const Index* previous = nullptr);
  // The same for a file already parsed (the cursor's file as ast.anchor parsed it): its path
  // and source are the file's, and it is not parsed again.
  UpdateStats update_file(std::shared_ptr<const ast::ParsedFile> file);
  // The same for a file already extracted (context extraction's units of it, made with
  // unit_extract.h's default options): neither parsed nor walked again.
  UpdateStats update_file(std::shared_ptr<const context::FileUnits> units,
                          const Index* previous = nullptr);
  void remove_file(std::string_view path);
  bool has_file(std::string_view path) const;
  std::optional<uint64_t> content_hash(std::string_view path) const;  // of the indexed text

  // Top k chunks by cosine with `query` (unit length, embedder dim; another size is an
  // IndexError) / by BM25 of the query's terms; chunks of files in `exclude` never appear.
  // Scores are exact and ties broken by chunk path, then line, so results do not depend on
  // insertion order (dense: exactly so under exact_below chunks; above it the graph picks the
  // candidates). Empty when the index has no embedder (dense).
  std::vector<Hit> search_dense(std::span<const float> query, std::size_t k,
                                const std::unordered_set<std::string>& exclude) const;
  std::vector<Hit> search_lexical(std::string_view query, std::size_t k,
                                  const std::unordered_set<std::string>& exclude) const;
  // The same scored with `corpus`'s statistics (lexical.h: this index's, from lexical_stats
  // with the same exclusion, plus another's searched with it as one corpus).
  std::vector<Hit> search_lexical(std::string_view query, std::size_t k,
                                  const std::unordered_set<std::string>& exclude,
                                  const CorpusStats& corpus) const;
  // This index's BM25 statistics for the terms of `query`, chunks of files in `exclude` left
  // out.
  CorpusStats lexical_stats(std::string_view query,
                            const std::unordered_set<std::string>& exclude) const;

  // Usage (usage.h, the search's usage list): the chunks calling at least one of `names`
  // (each Hit's score: how many of them it calls; data: the chunk with its calls), chunks of
  // files in `exclude` left out, in id order.
  std::vector<Hit> callers(std::span<const std::string> names,
                           const std::unordered_set<std::string>& exclude) const;
  // Of each of `names`, how many chunks call it, those of files in `exclude` left out.
  std::vector<uint32_t> caller_counts(std::span<const std::string> names,
                                      const std::unordered_set<std::string>& exclude) const;
  // The chunks whose simple name (search.h's simple_name of Chunk::name) is one of `names`,
  // chunks of files in `exclude` left out, in id order (score 0).
  std::vector<Hit> definitions(std::span<const std::string> names,
                               const std::unordered_set<std::string>& exclude) const;

  // The chunks of one file, in file order (score 0); empty when the file is not indexed.
  std::vector<Hit> file_chunks(std::string_view path) const;

  // A copy (the index may change after the call returns).
  Chunk chunk(uint32_t id) const;
  std::size_t chunk_count() const;
  uint64_t token_count() const;  // encoder tokens of every live chunk (Chunk::tokens summed)
  std::size_t file_count() const;
  bool dense() const;  // has an embedder

  // Indexed paths, sorted (after load(): what to re-validate against the disk).
  std::vector<std::string> files() const;
  // Indexed files `path` imports (file level: a file whose stem is a word of its imports).
  std::vector<std::string> imports(std::string_view path) const;
  // Elements of the hnswlib graph, deleted ones included (bounded under edits: slots reused).
  std::size_t graph_elements() const;
  // Approximate heap bytes held: chunk texts, terms, vectors, graph links (for caches of
  // indexes bounded by bytes).
  std::size_t bytes() const;

  void save(const std::filesystem::path& dir) const;
  // Files in the loaded index with their content hashes (to re-validate against the disk).
  static std::unique_ptr<Index> load(const std::filesystem::path& dir,
                                     std::shared_ptr<const Embedder> embedder,
                                     IndexOptions options);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reciprocal-rank fusion: score(c) = sum over lists of weight / (k + rank), rank 1-based.
struct RankedList {
  std::vector<uint32_t> ids;  // best first
  double weight = 1;
};
std::vector<std::pair<uint32_t, double>> reciprocal_rank_fusion(std::span<const RankedList> lists,
                                                                double k = 60);

}  // namespace vsynth::stages::retrieval
