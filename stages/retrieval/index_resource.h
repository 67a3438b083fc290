// retrieval.index: the `index` resource. The retrieval Index (index.h) of one repository, built
// once per run before any stage starts and shared by every retrieval.search that names it.
// Its parameters are documented in index_contract() (`vsynth stages retrieval.index`).
//
//   resources:
//     code: { use: retrieval.index, with: { encoder: "${VSYNTH_ENCODER:-}", root: "." } }
//
// The declared shared state is the repository at `root`: walked once (files of `languages`,
// skipping .git, build and other tool directories and files over max_file_bytes), chunked and
// embedded; the texts indexed are kept, so a hit outside a task's own files can carry its
// unit's text. With a cache directory the index is loaded from the last run (keyed by the
// root's real path and the embedder's fingerprint), re-validated file by file by content
// (unchanged files cost a hash, changed ones are re-indexed, vanished ones removed) and saved
// back. No root: an empty shared index (each task searches its own files only).
//
// The overlays of the tasks' own files (retrieval.search) are kept here, in an OverlayCache of
// overlay_cache_mb, for every search of the run.
//
// Degradation: when the encoder cannot load, one warning naming why goes to stderr, the index
// is BM25-only, and every search says served_by "lexical" with that reason.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/contract.h"
#include "graph/params.h"
#include "graph/resource.h"
#include "stages/retrieval/embedder.h"
#include "stages/retrieval/index.h"
#include "stages/retrieval/overlay_cache.h"

namespace vsynth::stages::retrieval {

inline constexpr const char* kDefaultEncoderDir = "models/all-MiniLM-L6-v2";

struct IndexSettings {
  std::string name = "index";          // the resource's name, for messages
  std::string encoder;                 // empty: $VSYNTH_ENCODER, else kDefaultEncoderDir
  std::string root;                    // empty: no repository
  std::vector<std::string> languages;  // ast language names; empty: every language
  uint64_t max_file_bytes = 1 << 20;
  std::string cache_dir;  // empty: $XDG_CACHE_HOME/vsynth/index, else ~/.cache/vsynth/index
  bool cache = true;
  BertEmbedderOptions embedder;
  IndexOptions index;
  std::size_t overlay_cache_bytes = std::size_t{256} << 20;  // OverlayCache budget
  // Called after each repository file is brought up to date (indexed, found unchanged or
  // skipped), on the building thread: `done` of `total` files. For `vsynth index`'s progress.
  std::function<void(std::size_t done, std::size_t total, const std::string& path)> on_file;
};
IndexSettings index_settings(const std::string& name, const graph::Params& params);

// The encoder directory to load: `dir` when non-empty, else $VSYNTH_ENCODER, else the default
// under the working directory, then under the source tree. Throws std::runtime_error naming
// every place it looked.
std::filesystem::path resolve_encoder_dir(const std::string& dir);

class IndexResource : public graph::Resource {
 public:
  explicit IndexResource(IndexSettings settings);

  const Index& index() const { return *index_; }
  // Null when the encoder did not load (then degraded_reason() says why).
  const std::shared_ptr<const Embedder>& embedder() const { return embedder_; }
  const std::string& degraded_reason() const { return degraded_; }
  const IndexSettings& settings() const { return settings_; }
  // The text of a repository file as indexed (path relative to root, '/'-separated).
  const std::string* text(const std::string& path) const;
  // The tasks' overlays (overlay_cache.h), kept across requests for the whole run.
  OverlayCache& overlays() const { return *overlays_; }
  // overlay lookups, hit rate, evictions and MiB, for the run summary.
  std::vector<graph::ResourceCounter> counters() const override;

  struct BuildStats {
    uint32_t files = 0, indexed = 0, unchanged = 0, removed = 0, skipped = 0;
    std::size_t chunks = 0;
    uint64_t tokens = 0;  // encoder tokens of every chunk
    bool loaded = false;  // started from the cache
    double seconds = 0;
  };
  const BuildStats& build_stats() const { return stats_; }
  // Where the cache of this root and embedder lives (empty when caching is off or no root).
  const std::filesystem::path& cache_path() const { return cache_path_; }

 private:
  void load_embedder();
  void build();
  // The repository's indexable files, sorted by path (relative, '/'-separated).
  std::vector<std::string> walk() const;

  IndexSettings settings_;
  std::shared_ptr<const Embedder> embedder_;
  std::string degraded_;
  std::unique_ptr<Index> index_;
  std::unique_ptr<OverlayCache> overlays_;
  std::map<std::string, std::string, std::less<>> texts_;
  std::filesystem::path cache_path_;
  BuildStats stats_;
};

graph::ResourceContract index_contract();

}  // namespace vsynth::stages::retrieval
