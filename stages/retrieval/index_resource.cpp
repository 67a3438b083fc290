#include "stages/retrieval/index_resource.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "base/hash.h"
#include "stages/ast/language.h"

namespace vsynth::stages::retrieval {

namespace fs = std::filesystem;

namespace {

// Directories a repository walk never enters: version control, build outputs, tool caches and
// environments (their files are not the project's code, and can be huge).
bool skipped_dir(const std::string& name) {
  static const std::set<std::string> names = {"build", "node_modules", "__pycache__", "target",
                                              "dist",  "venv",         "third_party"};
  return name.empty() || name[0] == '.' || names.count(name) > 0 || name.rfind("build-", 0) == 0 ||
         name.rfind("cmake-build", 0) == 0;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

fs::path default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return fs::path(xdg) / "vsynth" / "index";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return fs::path(home) / ".cache" / "vsynth" / "index";
  }
  return {};
}

std::vector<std::string> language_names() {
  std::vector<std::string> out;
  for (const ast::Language& l : ast::Language::all()) out.emplace_back(l.name());
  return out;
}

}  // namespace

fs::path resolve_encoder_dir(const std::string& dir) {
  if (!dir.empty()) {
    if (!fs::is_directory(dir)) {
      throw std::runtime_error("encoder directory `" + dir +
                               "` does not exist (retrieval.index `encoder`)");
    }
    return dir;
  }
  if (const char* env = std::getenv("VSYNTH_ENCODER"); env && *env) {
    if (!fs::is_directory(env)) {
      throw std::runtime_error(std::string("encoder directory `") + env +
                               "` named by $VSYNTH_ENCODER does not exist");
    }
    return env;
  }
  std::vector<fs::path> tried{fs::current_path() / kDefaultEncoderDir};
#ifdef VSYNTH_SOURCE_ROOT
  tried.push_back(fs::path(VSYNTH_SOURCE_ROOT) / kDefaultEncoderDir);
#endif
  for (const fs::path& p : tried) {
    if (fs::is_directory(p)) return p;
  }
  std::string where;
  for (const fs::path& p : tried) where += ", " + p.string();
  throw std::runtime_error(
      "no encoder given (`encoder` is empty and $VSYNTH_ENCODER is not set) and the default is "
      "not at " +
      where.substr(2) + " (scripts/setup-embedder.sh installs it)");
}

IndexSettings index_settings(const std::string& name, const graph::Params& p) {
  IndexSettings s;
  s.name = name;
  s.encoder = p.string("encoder");
  s.root = p.string("root");
  s.languages = p.strings("languages");
  s.max_file_bytes = static_cast<uint64_t>(p.integer("max_file_bytes"));
  s.cache_dir = p.string("cache_dir");
  s.cache = p.boolean("cache");
  s.embedder.threads = static_cast<int>(p.integer("threads"));
  s.embedder.q8_0 = p.boolean("q8_0");
  s.embedder.max_tokens = static_cast<int>(p.integer("max_tokens"));
  s.index.chunks.max_tokens = static_cast<uint32_t>(p.integer("max_tokens"));
  s.index.hnsw_m = static_cast<int>(p.integer("hnsw_m"));
  s.index.hnsw_ef_construction = static_cast<int>(p.integer("hnsw_ef_construction"));
  s.index.hnsw_ef_search = static_cast<int>(p.integer("hnsw_ef_search"));
  s.index.coarse_files = static_cast<uint32_t>(p.integer("coarse_files"));
  s.overlay_cache_bytes = static_cast<std::size_t>(p.integer("overlay_cache_mb")) << 20;
  return s;
}

IndexResource::IndexResource(IndexSettings settings) : settings_(std::move(settings)) {
  load_embedder();
  build();
  overlays_ =
      std::make_unique<OverlayCache>(embedder_, settings_.index, settings_.overlay_cache_bytes);
}

std::vector<graph::ResourceCounter> IndexResource::counters() const {
  const OverlayCache::Counters c = overlays_->counters();
  if (c.lookups == 0) return {};
  return {{"overlay_lookups", static_cast<double>(c.lookups)},
          {"overlay_hit_rate", static_cast<double>(c.hits) / static_cast<double>(c.lookups), true},
          {"overlay_evictions", static_cast<double>(c.evictions)},
          {"overlay_mib", static_cast<double>(c.bytes) / (1 << 20)}};
}

const std::string* IndexResource::text(const std::string& path) const {
  auto it = texts_.find(path);
  return it == texts_.end() ? nullptr : &it->second;
}

void IndexResource::load_embedder() {
  try {
    embedder_ = load_bert_embedder(resolve_encoder_dir(settings_.encoder), settings_.embedder);
  } catch (const std::exception& e) {
    // Said once, here, for the whole run; each record repeats the reason (served_by lexical).
    degraded_ = std::string("encoder not loaded: ") + e.what();
    std::fprintf(stderr,
                 "warning: retrieval.index `%s`: %s; searching lexically (BM25 + "
                 "usage + local + structure)\n",
                 settings_.name.c_str(), degraded_.c_str());
  }
}

std::vector<std::string> IndexResource::walk() const {
  const fs::path root(settings_.root);
  std::vector<std::string> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    throw std::runtime_error(fmt::format("retrieval.index `{}`: cannot read root `{}`: {}",
                                         settings_.name, settings_.root, ec.message()));
  }
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::file_status st = it->symlink_status();
    const std::string name = it->path().filename().string();
    if (fs::is_directory(st)) {
      if (skipped_dir(name)) it.disable_recursion_pending();
      continue;
    }
    if (!fs::is_regular_file(st)) continue;  // symlinks, devices: not the project's own files
    const ast::Language* lang = ast::Language::find_for_path(name);
    if (!lang) continue;
    if (!settings_.languages.empty() &&
        std::find(settings_.languages.begin(), settings_.languages.end(), lang->name()) ==
            settings_.languages.end()) {
      continue;
    }
    out.push_back(fs::relative(it->path(), root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void IndexResource::build() {
  const auto t0 = std::chrono::steady_clock::now();
  if (settings_.root.empty()) {
    index_ = std::make_unique<Index>(embedder_, settings_.index);
    return;
  }
  if (!fs::is_directory(settings_.root)) {
    throw std::runtime_error(fmt::format("retrieval.index `{}`: root `{}` is not a directory",
                                         settings_.name, settings_.root));
  }
  // --- the cache of this root and embedder, when there is one ---
  const std::string fingerprint = embedder_ ? embedder_->fingerprint() : "lexical";
  if (settings_.cache) {
    const fs::path dir =
        settings_.cache_dir.empty() ? default_cache_dir() : fs::path(settings_.cache_dir);
    if (!dir.empty()) {
      const std::string key = fs::weakly_canonical(settings_.root).string() + "\n" + fingerprint;
      cache_path_ = dir / fmt::format("{:016x}", base::fnv1a64(key));
    }
  }
  std::set<std::string> cached_files;
  if (!cache_path_.empty() && fs::exists(cache_path_)) {
    try {
      index_ = Index::load(cache_path_, embedder_, settings_.index);
      for (std::string& path : index_->files()) cached_files.insert(std::move(path));
      stats_.loaded = true;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "warning: retrieval.index `%s`: cache %s not used (%s); rebuilding\n",
                   settings_.name.c_str(), cache_path_.c_str(), e.what());
      index_.reset();
    }
  }
  if (!index_) index_ = std::make_unique<Index>(embedder_, settings_.index);

  // --- every file brought to its text on disk (unchanged ones cost a hash) ---
  bool changed = !stats_.loaded;
  const fs::path root(settings_.root);
  const std::vector<std::string> paths = walk();
  std::size_t done = 0;
  for (const std::string& path : paths) {
    if (settings_.on_file && done > 0) settings_.on_file(done, paths.size(), paths[done - 1]);
    ++done;
    std::error_code ec;
    const uintmax_t size = fs::file_size(root / path, ec);
    if (ec || size > settings_.max_file_bytes) {
      std::fprintf(
          stderr, "warning: retrieval.index `%s`: %s skipped: %s\n", settings_.name.c_str(),
          path.c_str(),
          ec ? ec.message().c_str()
             : fmt::format("{} bytes, over max_file_bytes {}", size, settings_.max_file_bytes)
                   .c_str());
      ++stats_.skipped;
      continue;
    }
    std::string text = read_file(root / path);
    const UpdateStats u = index_->update_file(path, text);
    cached_files.erase(path);
    changed |= !u.unchanged;
    if (!u.skipped.empty()) {  // binary, not UTF-8, a 64 KiB line, unparsable: said, not indexed
      std::fprintf(stderr, "warning: retrieval.index `%s`: %s skipped: %s\n",
                   settings_.name.c_str(), path.c_str(), u.skipped.c_str());
      ++stats_.skipped;
      continue;
    }
    ++stats_.files;
    (u.unchanged ? stats_.unchanged : stats_.indexed) += 1;
    texts_.emplace(path, std::move(text));
  }
  for (const std::string& gone : cached_files) {
    index_->remove_file(gone);
    ++stats_.removed;
    changed = true;
  }
  if (settings_.on_file && done > 0) settings_.on_file(done, paths.size(), paths[done - 1]);
  stats_.chunks = index_->chunk_count();
  stats_.tokens = index_->token_count();
  // --- saved back for the next run ---
  if (!cache_path_.empty() && changed) {
    try {
      fs::create_directories(cache_path_.parent_path());
      index_->save(cache_path_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "warning: retrieval.index `%s`: cannot save the cache at %s: %s\n",
                   settings_.name.c_str(), cache_path_.c_str(), e.what());
    }
  }
  stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

graph::ResourceContract index_contract() {
  graph::ResourceContract c;
  c.kind = "retrieval.index";
  c.interface = "index";
  c.summary =
      "A repository's functions and classes, searchable by BM25 and by embedding "
      "(all-MiniLM-L6-v2 through our encoder), built or loaded from its cache once per run";
  c.params = {
      graph::P::string("encoder", "",
                       "sentence-encoder directory (config.json, model.safetensors, "
                       "tokenizer.json); empty: $VSYNTH_ENCODER, else models/all-MiniLM-L6-v2 "
                       "under the working directory, then the source tree. If it cannot load, "
                       "one warning and the index is BM25-only (served_by: lexical)"),
      graph::P::string("root", "",
                       "repository directory indexed before the run (paths relative to it, as "
                       "tasks name their files); empty: no shared index, each task searches its "
                       "own files only"),
      graph::P::strings("languages", std::vector<std::string>{},
                        "languages of the files indexed under root; empty: every language",
                        language_names()),
      graph::P::integer("max_file_bytes", 1 << 20, 1, int64_t{1} << 32,
                        "files under root larger than this are skipped"),
      graph::P::boolean("cache", true,
                        "load the index from cache_dir and save it back (re-validated by file "
                        "content: changed files are re-indexed, vanished ones removed)"),
      graph::P::string("cache_dir", "",
                       "where indexes are cached, one per root real path and encoder "
                       "fingerprint; empty: $XDG_CACHE_HOME/vsynth/index, else "
                       "~/.cache/vsynth/index"),
      graph::P::integer("threads", 0, 0, 1024, "encoder threads; 0: every core"),
      graph::P::boolean("q8_0", false,
                        "encoder linear weights quantized to Q8_0 at load (a quarter of their "
                        "memory; slightly different vectors: its own cache; no faster than F32 "
                        "on AVX2 CPUs)"),
      graph::P::integer("max_tokens", 256, 8, 512,
                        "encoder tokens per chunk ([CLS]/[SEP] included); longer units are "
                        "split into pieces that repeat their signature"),
      graph::P::integer("hnsw_m", 16, 2, 128, "hnswlib M (graph degree)"),
      graph::P::integer("hnsw_ef_construction", 200, 8, 4096, "hnswlib ef at construction"),
      graph::P::integer("hnsw_ef_search", 64, 8, 4096,
                        "hnswlib ef at search (raised to k when k is larger)"),
      graph::P::integer("coarse_files", 0, 0, 1 << 20,
                        "files kept by the file-level filter before chunks are searched; 0: "
                        "search every chunk"),
      graph::P::integer("overlay_cache_mb", 256, 0, 1 << 20,
                        "MiB of task overlays (the index of a task's own files that differ from "
                        "the repository's, e.g. the file being edited) kept between requests, "
                        "least recently used evicted first; an edited file's next overlay "
                        "embeds only its changed chunks. 0: none kept (every request indexes "
                        "its files afresh; results are the same)"),
  };
  return c;
}

}  // namespace vsynth::stages::retrieval
