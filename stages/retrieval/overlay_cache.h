// OverlayCache: the overlay indexes of retrieval.search (search_stage.h), kept between requests.
//
// An overlay is the small Index of a task's own files whose text the shared repository index
// does not hold (the cursor's file being edited, files the task sends). Building one costs a
// parse, a chunking, terms and embeddings of every chunk: on an 8,171-line C file (509 chunks)
// far more than the search itself. An IDE sends the same file again and again, a few characters
// changed each time, so overlays are kept and built from what was kept:
//   hit   the same files with the same texts (paths and 64-bit content hashes, then the bytes
//         compared): the overlay is shared as it is (immutable once made);
//   miss  a new overlay, each file indexed from its units when the caller has them (the
//         cursor's file as ast.anchor parsed it: no second parse), else from its text; the
//         chunks whose text the last overlay holding the same path already had take their
//         terms and embeddings from it (Index::update_file's `previous`), so an edit of one
//         function embeds one chunk.
// Results never depend on what was cached: an overlay is a function of its files' texts (a
// chunk's terms and embedding are functions of its text; overlays have no hnswlib graph, their
// dense search is an exact scan, and their chunk ids follow path order), so a hit, a miss
// built from a previous version and a cold build are the same index.
//
// Size: bounded by bytes (Index::bytes() plus the texts kept to compare), least recently used
// evicted first; an overlay larger than the whole budget is built, returned and not kept.
// Evicting never invalidates an overlay a request still holds (shared_ptr).
//
// Thread-safe: one mutex for lookups and insertions; building runs outside it (two requests
// missing the same files at once both build; the first to finish is kept, and both are equal).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "stages/retrieval/index.h"

namespace vsynth::stages::retrieval {

struct OverlayFile {
  std::string path;
  std::string_view text;  // the task's version of the file
  // Its units when already extracted (the cursor's file; unit_extract.h's default options, of
  // exactly `text`), else null: parsed from `text`.
  std::shared_ptr<const context::FileUnits> units;
};

class OverlayCache {
 public:
  // `options`: the shared index's; overlays drop the graph and the coarse filter.
  OverlayCache(std::shared_ptr<const Embedder> embedder, IndexOptions options,
               std::size_t budget_bytes);

  struct Result {
    std::shared_ptr<const Index> index;
    bool hit = false;
    uint32_t embedded = 0;  // chunk texts sent to the embedder to build it (0 on a hit)
  };
  // The overlay of `files` (distinct paths, any order; indexed in path order).
  // `stop` (may be null): checked between files while building; once set, get throws
  // graph::Cancelled (embedding a big file takes seconds; a stopping run must not wait).
  Result get(std::vector<OverlayFile> files, const std::atomic<bool>* stop = nullptr);

  struct Counters {
    uint64_t lookups = 0, hits = 0, evictions = 0;
    std::size_t entries = 0, bytes = 0;
  };
  Counters counters() const;

  static IndexOptions overlay_options(IndexOptions shared);

 private:
  struct Entry {
    std::string key;                                         // paths and content hashes
    std::vector<std::pair<std::string, std::string>> files;  // (path, text), path order
    std::shared_ptr<const Index> index;
    std::size_t bytes = 0;
  };
  using Lru = std::list<Entry>;  // most recently used first

  // The most recently used overlay holding `path` (any version), or null. Caller locks.
  std::shared_ptr<const Index> previous(std::string_view path) const;
  void insert(Entry entry);  // caller locks

  std::shared_ptr<const Embedder> embedder_;
  IndexOptions options_;
  std::size_t budget_;
  mutable std::mutex mutex_;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> by_key_;
  std::size_t bytes_ = 0;
  uint64_t lookups_ = 0, hits_ = 0, evictions_ = 0;
};

}  // namespace vsynth::stages::retrieval
