#include "stages/retrieval/index.h"

#include <fmt/format.h>
#include <stdio.h>  // renameat2
#include <unistd.h>

#include <fcntl.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <shared_mutex>
#include <unordered_map>

#include "base/hash.h"
#include "stages/retrieval/chunker.h"
#include "stages/retrieval/dense.h"
#include "stages/retrieval/files.h"
#include "stages/retrieval/lexical.h"
#include "stages/retrieval/terms.h"
#include "stages/retrieval/usage.h"

namespace vsynth::stages::retrieval {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// Bump when anything written by save() changes meaning.
constexpr int kFormat = 3;  // 2: chunks carry their unit's lines; 3: and their calls

DenseOptions dense_options(const IndexOptions& o) {
  DenseOptions d;
  d.m = o.hnsw_m;
  d.ef_construction = o.hnsw_ef_construction;
  d.ef_search = o.hnsw_ef_search;
  return d;
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::string hex(uint64_t v) {
  return fmt::format("{:016x}", v);
}

struct Fail;  // load()'s error maker

struct Slot {
  bool live = false;
  std::shared_ptr<const Chunk> chunk;  // replaced, never changed: hits share it
  uint64_t text_hash = 0;
};

// A file's new chunks, prepared outside the lock.
struct Prepared {
  FileChunks file;
  std::vector<uint64_t> hashes;  // of each chunk's text
  // Of each chunk whose text the file did not hold (the others keep their postings); an
  // empty optional for the rest.
  std::vector<std::optional<std::vector<std::pair<std::string, uint32_t>>>> terms;
  std::unordered_set<uint64_t> held;                         // text hashes of the old chunks
  std::unordered_map<uint64_t, std::vector<float>> vectors;  // by text hash
  // Terms of chunks an earlier version of the file had in another index (update's `previous`)
  std::unordered_map<uint64_t, std::vector<std::pair<std::string, uint32_t>>> adopted;
};

// The parsed trees of the files updated last, for IndexOptions::reparse_files; its own
// mutex (parsing runs outside the index's lock).
class RecentParses {
 public:
  explicit RecentParses(uint32_t capacity) : capacity_(capacity) {}
  std::shared_ptr<const ast::ParsedFile> find(std::string_view path) const {
    std::lock_guard lock(mutex_);
    for (const auto& [p, file] : files_) {
      if (p == path) return file;
    }
    return nullptr;
  }
  void put(std::string path, std::shared_ptr<const ast::ParsedFile> file) {
    if (capacity_ == 0 || !file) return;
    std::lock_guard lock(mutex_);
    std::erase_if(files_, [&](const auto& e) { return e.first == path; });
    files_.emplace(files_.begin(), std::move(path), std::move(file));  // most recent first
    if (files_.size() > capacity_) files_.pop_back();
  }

 private:
  uint32_t capacity_;
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, std::shared_ptr<const ast::ParsedFile>>> files_;
};

}  // namespace

struct Index::Impl {
  explicit Impl(const IndexOptions& o) : options(o), recent(o.reparse_files) {}
  std::shared_ptr<const Embedder> embedder;
  IndexOptions options;
  int dim = 0;
  RecentParses recent;

  // shared: searches and reads; exclusive: the swap of a file. glibc's rwlock prefers
  // readers, so a steady stream of searches could starve an update: a writer holds `gate`
  // while it waits for and holds the exclusive lock, and readers pass through `gate` first.
  mutable std::shared_mutex mutex;
  mutable std::mutex gate;
  std::shared_lock<std::shared_mutex> read_lock() const {
    { std::lock_guard pass(gate); }
    return std::shared_lock(mutex);
  }
  struct WriteLock {
    explicit WriteLock(const Impl& m) : pass(m.gate), lock(m.mutex) {}
    std::unique_lock<std::mutex> pass;
    std::unique_lock<std::shared_mutex> lock;
  };
  std::vector<Slot> slots;     // by chunk id (= hnswlib label)
  std::set<uint32_t> free;     // ids of removed chunks, smallest handed out first
  std::vector<float> vectors;  // slots.size() x dim: exact scores, file means, save
  std::size_t live = 0;
  LexicalIndex lexical;
  UsageIndex usage;
  std::unique_ptr<DenseIndex> dense;
  FileLevel files;

  std::span<const float> vector(uint32_t id) const {
    return {vectors.data() + static_cast<std::size_t>(id) * dim, static_cast<std::size_t>(dim)};
  }
  // What update_file starts from: a text, a parsed file or its units (one of them).
  struct Source {
    std::string_view path, text;
    std::shared_ptr<const ast::ParsedFile> parsed;
    std::shared_ptr<const context::FileUnits> units;
  };
  // update_file's phases (see index.h).
  UpdateStats update(const Source& source, const Impl* previous);
  // What `previous` holds of path's chunks, into p.vectors / p.adopted (its read lock).
  void lend(std::string_view path, Prepared& p) const;
  // true: unchanged (`skipped` then gets the file's skip reason, if it has one)
  bool snapshot(std::string_view path, uint64_t hash, Prepared& p, std::string& skipped) const;
  void prepare(const Source& source, Prepared& p, UpdateStats& stats);
  bool swap(std::string_view path, uint64_t hash, Prepared& p,
            UpdateStats& stats);  // false: unchanged
  // load()'s phases, on a new index.
  void load_chunks(std::size_t slot_count, std::string_view lines, const Fail& fail);
  void load_graph(const std::filesystem::path& file, std::string_view vector_bytes,
                  const Fail& fail);
  void load_files(const nlohmann::json& list, const Fail& fail);
  uint32_t take_slot(bool& reused);
  void drop_chunk(uint32_t id);
  void add_chunk(uint32_t id, Chunk chunk, uint64_t hash,
                 std::span<const std::pair<std::string, uint32_t>> terms,
                 const std::vector<float>* vec);
  std::vector<float> file_mean(const std::vector<uint32_t>& ids) const;
  // The best k of `scored`: score descending, then path, line, part and name.
  std::vector<Hit> top(std::vector<std::pair<uint32_t, double>> scored, std::size_t k) const;
  bool excluded(uint32_t id, const std::unordered_set<std::string>& exclude) const {
    return !exclude.empty() && exclude.count(slots[id].chunk->path) != 0;
  }
};

uint32_t Index::Impl::take_slot(bool& reused) {
  reused = !free.empty();
  if (reused) {
    const uint32_t id = *free.begin();
    free.erase(free.begin());
    return id;
  }
  slots.emplace_back();
  vectors.resize(slots.size() * static_cast<std::size_t>(dim), 0.0f);
  return static_cast<uint32_t>(slots.size() - 1);
}

void Index::Impl::drop_chunk(uint32_t id) {
  Slot& s = slots[id];
  if (!s.live) return;
  lexical.remove(id);
  usage.remove(id, *s.chunk);
  if (dense) dense->remove(id);
  s = Slot{};
  free.insert(id);
  --live;
}

void Index::Impl::add_chunk(uint32_t id, Chunk chunk, uint64_t hash,
                            std::span<const std::pair<std::string, uint32_t>> terms,
                            const std::vector<float>* vec) {
  Slot& s = slots[id];
  s.live = true;
  s.chunk = std::make_shared<const Chunk>(std::move(chunk));
  s.text_hash = hash;
  lexical.add(id, terms);
  usage.add(id, *s.chunk);
  if (embedder && vec != nullptr) {
    std::copy(vec->begin(), vec->end(), vectors.begin() + static_cast<std::ptrdiff_t>(id) * dim);
    if (dense) dense->set(id, *vec);
  }
  ++live;
}

std::vector<float> Index::Impl::file_mean(const std::vector<uint32_t>& ids) const {
  if (!embedder || ids.empty()) return {};
  std::vector<float> rows;
  rows.reserve(ids.size() * static_cast<std::size_t>(dim));
  for (const uint32_t id : ids) {
    const auto v = vector(id);
    rows.insert(rows.end(), v.begin(), v.end());
  }
  return mean_direction(rows, dim);
}

std::vector<Hit> Index::Impl::top(std::vector<std::pair<uint32_t, double>> scored,
                                  std::size_t k) const {
  const auto before = [&](const std::pair<uint32_t, double>& a,
                          const std::pair<uint32_t, double>& b) {
    if (a.second != b.second) return a.second > b.second;
    const Chunk& x = *slots[a.first].chunk;
    const Chunk& y = *slots[b.first].chunk;
    if (x.path != y.path) return x.path < y.path;
    if (x.first_line != y.first_line) return x.first_line < y.first_line;
    if (x.part != y.part) return x.part < y.part;
    return x.name < y.name;
  };
  const std::size_t n = std::min(k, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(n), scored.end(),
                    before);
  std::vector<Hit> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back({scored[i].first, scored[i].second, slots[scored[i].first].chunk});
  }
  return out;
}

Index::Index(std::shared_ptr<const Embedder> embedder, IndexOptions options)
    : impl_(std::make_unique<Impl>(options)) {
  impl_->embedder = std::move(embedder);
  if (impl_->embedder) {
    impl_->dim = impl_->embedder->dim();
    if (impl_->dim <= 0) {
      throw IndexError(fmt::format("retrieval index: embedder {} has dimension {}, need > 0",
                                   impl_->embedder->fingerprint(), impl_->dim));
    }
    if (options.graph) {
      impl_->dense = std::make_unique<DenseIndex>(impl_->dim, dense_options(options));
    }
  }
}

Index::~Index() = default;

UpdateStats Index::update_file(std::string_view path, std::string_view text,
                               const Index* previous) {
  return impl_->update({path, text, nullptr, nullptr}, previous ? previous->impl_.get() : nullptr);
}

UpdateStats Index::update_file(std::shared_ptr<const ast::ParsedFile> file) {
  const std::string path = file->path();
  const std::string_view text = file->source();
  return impl_->update({path, text, std::move(file), nullptr}, nullptr);
}

UpdateStats Index::update_file(std::shared_ptr<const context::FileUnits> units,
                               const Index* previous) {
  const std::string path = units->file->path();
  const std::string_view text = units->file->source();
  return impl_->update({path, text, nullptr, std::move(units)},
                       previous ? previous->impl_.get() : nullptr);
}

bool Index::Impl::snapshot(std::string_view path, uint64_t hash, Prepared& p,
                           std::string& skipped) const {
  auto lock = read_lock();
  const FileEntry* f = files.find(path);
  if (f == nullptr) return false;
  if (f->hash == hash) {
    skipped = f->skipped;  // an unchanged skipped file is still skipped, and says why
    return true;
  }
  for (const uint32_t id : f->chunks) {
    p.held.insert(slots[id].text_hash);
    if (!embedder) continue;
    const auto v = vector(id);
    p.vectors.try_emplace(slots[id].text_hash, v.begin(), v.end());
  }
  return false;
}

void Index::Impl::lend(std::string_view path, Prepared& p) const {
  auto lock = read_lock();
  const FileEntry* f = files.find(path);
  if (f == nullptr) return;
  for (const uint32_t id : f->chunks) {
    const uint64_t h = slots[id].text_hash;
    if (p.held.count(h) || p.adopted.count(h)) continue;
    p.adopted.emplace(h, lexical.terms_of(id));
    if (embedder && !p.vectors.count(h)) {
      const auto v = vector(id);
      p.vectors.emplace(h, std::vector<float>(v.begin(), v.end()));
    }
  }
}

void Index::Impl::prepare(const Source& source, Prepared& p, UpdateStats& stats) {
  const std::string_view path = source.path;
  if (source.units) {
    p.file = chunk_units(source.units, options.chunks, embedder.get());
  } else if (source.parsed) {
    p.file = chunk_parsed(source.parsed, options.chunks, embedder.get());
  } else {
    const std::shared_ptr<const ast::ParsedFile> base = recent.find(path);
    p.file = chunk_source(path, source.text, options.chunks, embedder.get(), base.get());
  }
  recent.put(std::string(path), p.file.parsed);
  stats.skipped = p.file.skipped;
  for (const Chunk& c : p.file.chunks) {
    const uint64_t h = base::fnv1a64(c.text);
    p.hashes.push_back(h);
    p.terms.emplace_back();
    if (p.held.count(h) != 0) continue;
    if (auto a = p.adopted.find(h); a != p.adopted.end()) {
      p.terms.back() = a->second;
    } else {
      p.terms.back() = count_terms(bm25_terms(c.text, p.file.language));
    }
  }
  if (!embedder) return;
  // One embed call for the texts the file did not hold (each distinct text once).
  std::vector<std::string_view> texts;
  std::vector<uint64_t> text_hashes;
  for (std::size_t i = 0; i < p.hashes.size(); ++i) {
    const uint64_t h = p.hashes[i];
    if (p.vectors.count(h) != 0 ||
        std::find(text_hashes.begin(), text_hashes.end(), h) != text_hashes.end()) {
      continue;
    }
    texts.push_back(p.file.chunks[i].text);
    text_hashes.push_back(h);
  }
  if (texts.empty()) return;
  const Clock::time_point start = Clock::now();
  const std::vector<float> rows = embedder->embed(texts);
  stats.embed_ms = ms_since(start);
  stats.embedded = static_cast<uint32_t>(texts.size());
  const std::size_t d = static_cast<std::size_t>(dim);
  if (rows.size() != texts.size() * d) {
    throw IndexError(fmt::format("{}: embedder {} returned {} floats for {} texts of dim {}", path,
                                 embedder->fingerprint(), rows.size(), texts.size(), dim));
  }
  for (std::size_t i = 0; i < texts.size(); ++i) {
    p.vectors[text_hashes[i]].assign(rows.begin() + static_cast<std::ptrdiff_t>(i * d),
                                     rows.begin() + static_cast<std::ptrdiff_t>((i + 1) * d));
  }
}

bool Index::Impl::swap(std::string_view path, uint64_t hash, Prepared& p, UpdateStats& stats) {
  WriteLock lock(*this);
  // Chunks whose text the file already had keep their id (their lines are updated); the
  // others' ids are freed first and handed to the new chunks.
  std::unordered_multimap<uint64_t, uint32_t> old;
  if (const FileEntry* f = files.find(path)) {
    if (f->hash == hash) return false;  // another writer brought the same text meanwhile
    for (const uint32_t id : f->chunks) old.emplace(slots[id].text_hash, id);
  }
  std::vector<int64_t> kept(p.file.chunks.size(), -1);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (auto it = old.find(p.hashes[i]); it != old.end()) {
      kept[i] = it->second;
      old.erase(it);
    }
  }
  for (const auto& [h, id] : old) drop_chunk(id);
  stats.removed = static_cast<uint32_t>(old.size());

  FileEntry entry;
  entry.path = std::string(path);
  entry.hash = hash;
  entry.imports = std::move(p.file.imports);
  entry.stem = file_stem(path);
  entry.skipped = std::move(p.file.skipped);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    Chunk& c = p.file.chunks[i];
    if (kept[i] >= 0) {
      const auto id = static_cast<uint32_t>(kept[i]);
      usage.remove(id, *slots[id].chunk);
      slots[id].chunk = std::make_shared<const Chunk>(std::move(c));
      usage.add(id, *slots[id].chunk);
      entry.chunks.push_back(id);
      continue;
    }
    // A text the file held when prepared but no longer does (another update of it since):
    // its terms were not computed.
    if (!p.terms[i]) p.terms[i] = count_terms(bm25_terms(c.text, p.file.language));
    bool reused = false;
    const uint32_t id = take_slot(reused);
    const auto v = p.vectors.find(p.hashes[i]);
    add_chunk(id, std::move(c), p.hashes[i], *p.terms[i],
              v == p.vectors.end() ? nullptr : &v->second);
    entry.chunks.push_back(id);
    ++stats.added;
    stats.reused_slots += reused ? 1 : 0;
  }
  entry.mean = file_mean(entry.chunks);
  files.put(std::move(entry));
  return true;
}

UpdateStats Index::Impl::update(const Source& source, const Impl* previous) {
  const Clock::time_point start = Clock::now();
  const std::string_view path = source.path;
  UpdateStats stats;
  const uint64_t hash = base::fnv1a64(source.text);
  // 1. What the index holds of the file: nothing to do, or the embeddings of its chunks.
  Prepared p;
  // 2. The new chunks, their terms and embeddings, outside the lock (searches go on).
  // 3. The swap under the exclusive lock.
  stats.unchanged = snapshot(path, hash, p, stats.skipped);
  if (!stats.unchanged) {
    if (previous != nullptr && previous != this &&
        (previous->embedder == embedder ||
         (previous->embedder && embedder &&
          previous->embedder->fingerprint() == embedder->fingerprint()))) {
      previous->lend(path, p);
    }
    prepare(source, p, stats);
    stats.unchanged = !swap(path, hash, p, stats);
  }
  stats.total_ms = ms_since(start);
  return stats;
}

void Index::remove_file(std::string_view path) {
  Impl::WriteLock lock(*impl_);
  const FileEntry* f = impl_->files.find(path);
  if (f == nullptr) return;
  for (const uint32_t id : f->chunks) impl_->drop_chunk(id);
  impl_->files.erase(path);
}

bool Index::has_file(std::string_view path) const {
  auto lock = impl_->read_lock();
  return impl_->files.find(path) != nullptr;
}

std::optional<uint64_t> Index::content_hash(std::string_view path) const {
  auto lock = impl_->read_lock();
  const FileEntry* f = impl_->files.find(path);
  return f ? std::optional<uint64_t>(f->hash) : std::nullopt;
}

std::vector<Hit> Index::search_dense(std::span<const float> query, std::size_t k,
                                     const std::unordered_set<std::string>& exclude) const {
  const Impl& m = *impl_;
  if (!m.embedder || k == 0) return {};
  if (query.size() != static_cast<std::size_t>(m.dim)) {
    throw IndexError(fmt::format("search_dense: query of {} floats, the index ({}) has dim {}",
                                 query.size(), m.embedder->fingerprint(), m.dim));
  }
  auto lock = m.read_lock();
  if (m.live == 0) return {};
  // Candidates: the chunks of the nearest files (coarse filter), every chunk (small index),
  // or the graph's nearest, over-fetched by the chunks of the excluded files so that k
  // survive the exclusion.
  std::vector<uint32_t> ids;
  if (m.options.coarse_files > 0 && m.files.size() > m.options.coarse_files) {
    for (const FileEntry* f : m.files.nearest(query, m.options.coarse_files, exclude)) {
      ids.insert(ids.end(), f->chunks.begin(), f->chunks.end());
    }
  } else if (!m.dense || m.live < m.options.exact_below) {
    for (uint32_t id = 0; id < m.slots.size(); ++id) {
      if (m.slots[id].live) ids.push_back(id);
    }
  } else {
    std::size_t hidden = 0;
    for (const std::string& path : exclude) {
      if (const FileEntry* f = m.files.find(path)) hidden += f->chunks.size();
    }
    // searchKnn explores max(ef, k) candidates whatever k asks for: asking for ef of them
    // costs nothing more and gives the exact re-rank a margin at the k-th place.
    const std::size_t fetch =
        std::max(k + hidden, static_cast<std::size_t>(std::max(m.options.hnsw_ef_search, 0)));
    ids = m.dense->candidates(query, std::min(fetch, m.live));
  }
  // Exact scores of the candidates.
  std::vector<std::pair<uint32_t, double>> scored;
  scored.reserve(ids.size());
  for (const uint32_t id : ids) {
    if (!m.slots[id].live || m.excluded(id, exclude)) continue;
    scored.emplace_back(id, dot(query, m.vector(id)));
  }
  return m.top(std::move(scored), k);
}

std::vector<Hit> Index::search_lexical(std::string_view query, std::size_t k,
                                       const std::unordered_set<std::string>& exclude) const {
  const Impl& m = *impl_;
  if (k == 0) return {};
  const std::vector<std::string> terms = bm25_terms(query);
  auto lock = m.read_lock();
  std::vector<std::pair<uint32_t, double>> scored = m.lexical.score(terms);
  std::erase_if(scored, [&](const auto& s) { return m.excluded(s.first, exclude); });
  return m.top(std::move(scored), k);
}

std::vector<Hit> Index::search_lexical(std::string_view query, std::size_t k,
                                       const std::unordered_set<std::string>& exclude,
                                       const CorpusStats& corpus) const {
  const Impl& m = *impl_;
  if (k == 0) return {};
  const std::vector<std::string> terms = bm25_terms(query);
  auto lock = m.read_lock();
  std::vector<std::pair<uint32_t, double>> scored = m.lexical.score(terms, corpus);
  std::erase_if(scored, [&](const auto& s) { return m.excluded(s.first, exclude); });
  return m.top(std::move(scored), k);
}

CorpusStats Index::lexical_stats(std::string_view query,
                                 const std::unordered_set<std::string>& exclude) const {
  const Impl& m = *impl_;
  std::vector<std::string> terms = bm25_terms(query);
  std::sort(terms.begin(), terms.end());
  terms.erase(std::unique(terms.begin(), terms.end()), terms.end());
  auto lock = m.read_lock();
  std::vector<uint32_t> without;
  for (const std::string& path : exclude) {
    if (const FileEntry* f = m.files.find(path)) {
      without.insert(without.end(), f->chunks.begin(), f->chunks.end());
    }
  }
  return m.lexical.stats(terms, without);
}

std::vector<Hit> Index::callers(std::span<const std::string> names,
                                const std::unordered_set<std::string>& exclude) const {
  const Impl& m = *impl_;
  auto lock = m.read_lock();
  std::map<uint32_t, double> calling;  // chunk id -> names of `names` it calls
  for (const std::string& name : names) {
    if (const std::set<uint32_t>* ids = m.usage.callers(name)) {
      for (const uint32_t id : *ids) calling[id] += 1;
    }
  }
  std::vector<Hit> out;
  for (const auto& [id, n] : calling) {
    if (!m.excluded(id, exclude)) out.push_back({id, n, m.slots[id].chunk});
  }
  return out;
}

std::vector<uint32_t> Index::caller_counts(std::span<const std::string> names,
                                           const std::unordered_set<std::string>& exclude) const {
  const Impl& m = *impl_;
  auto lock = m.read_lock();
  std::vector<uint32_t> out(names.size(), 0);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::set<uint32_t>* ids = m.usage.callers(names[i]);
    if (!ids) continue;
    out[i] = static_cast<uint32_t>(ids->size());
    // The excluded files' chunks (a task's own file: a few of them) are taken back out.
    for (const std::string& path : exclude) {
      if (const FileEntry* f = m.files.find(path)) {
        for (const uint32_t id : f->chunks) out[i] -= ids->count(id) ? 1 : 0;
      }
    }
  }
  return out;
}

std::vector<Hit> Index::definitions(std::span<const std::string> names,
                                    const std::unordered_set<std::string>& exclude) const {
  const Impl& m = *impl_;
  auto lock = m.read_lock();
  std::set<uint32_t> ids;
  for (const std::string& name : names) {
    if (const std::set<uint32_t>* d = m.usage.definitions(name)) ids.insert(d->begin(), d->end());
  }
  std::vector<Hit> out;
  for (const uint32_t id : ids) {
    if (!m.excluded(id, exclude)) out.push_back({id, 0.0, m.slots[id].chunk});
  }
  return out;
}

std::vector<Hit> Index::file_chunks(std::string_view path) const {
  const Impl& m = *impl_;
  auto lock = m.read_lock();
  std::vector<Hit> out;
  if (const FileEntry* f = m.files.find(path)) {
    for (const uint32_t id : f->chunks) out.push_back({id, 0.0, m.slots[id].chunk});
  }
  return out;
}

Chunk Index::chunk(uint32_t id) const {
  auto lock = impl_->read_lock();
  if (id >= impl_->slots.size() || !impl_->slots[id].live) {
    throw IndexError(
        fmt::format("retrieval index: no chunk {} (removed by an update, or never "
                    "there; {} chunks in {} slots)",
                    id, impl_->live, impl_->slots.size()));
  }
  return *impl_->slots[id].chunk;
}

std::size_t Index::chunk_count() const {
  auto lock = impl_->read_lock();
  return impl_->live;
}

uint64_t Index::token_count() const {
  auto lock = impl_->read_lock();
  uint64_t tokens = 0;
  for (const Slot& slot : impl_->slots) {
    if (slot.live) tokens += slot.chunk->tokens;
  }
  return tokens;
}

std::size_t Index::file_count() const {
  auto lock = impl_->read_lock();
  return impl_->files.size();
}

bool Index::dense() const {
  return impl_->embedder != nullptr;
}

std::vector<std::string> Index::files() const {
  auto lock = impl_->read_lock();
  std::vector<std::string> out;
  for (const auto& [path, f] : impl_->files.all()) out.push_back(path);
  return out;
}

std::vector<std::string> Index::imports(std::string_view path) const {
  auto lock = impl_->read_lock();
  return impl_->files.imports_of(path);
}

std::size_t Index::graph_elements() const {
  auto lock = impl_->read_lock();
  return impl_->dense ? impl_->dense->elements() : 0;
}

std::size_t Index::bytes() const {
  const Impl& m = *impl_;
  auto lock = m.read_lock();
  // Per live chunk: its Chunk and strings, its terms (a posting and a doc entry each, ~24
  // bytes, for about one distinct term per 6 bytes of text), its called names (a string and a
  // usage posting, ~64 bytes each); per slot its vector; per graph element its vector again
  // and ~2M links of 4 bytes at layer 0.
  std::size_t out = m.vectors.size() * sizeof(float) + m.slots.size() * sizeof(Slot);
  for (const Slot& s : m.slots) {
    if (!s.live) continue;
    const Chunk& c = *s.chunk;
    out += sizeof(Chunk) + c.text.size() + c.path.size() + c.name.size() + c.text.size() * 4;
    for (const std::string& name : c.calls) out += sizeof(std::string) + name.size() + 64;
  }
  if (m.dense) {
    out += m.dense->elements() * (static_cast<std::size_t>(m.dim) * sizeof(float) +
                                  static_cast<std::size_t>(m.options.hnsw_m) * 2 * 4 + 64);
  }
  for (const auto& [path, f] : m.files.all()) {
    out += sizeof(FileEntry) + path.size() * 2 + f.imports.size() + f.skipped.size() +
           f.chunks.size() * 4 + f.mean.size() * sizeof(float);
  }
  return out;
}

// Persistence. A directory of:
//   manifest.json  format version, embedder {fingerprint, dim} (null without one), chunk
//                  options, slot count, per file {path, hash, chunks, imports, skipped}, and
//                  the size and FNV-1a checksum of each other file
//   chunks.jsonl   one live chunk a line: id, path, name, kind, lines, part, parts, tokens,
//                  hash of its text, text, terms [[term, count]...]
//   vectors.f32    slots x dim little-endian floats (removed slots zero); dense only
//   hnsw.bin       hnswlib's saveIndex; dense only
// written into a sibling temporary directory, then swapped into place (renameat2
// RENAME_EXCHANGE, or a rename when there is nothing to replace): a reader sees the old
// index or the new one, never a half-written one.
namespace {

struct FileSum {
  uint64_t bytes = 0, fnv = 0;
};

FileSum write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw IndexError(fmt::format("{}: write failed", path.string()));
  return {bytes.size(), base::fnv1a64(bytes)};
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IndexError(fmt::format("{}: cannot open it", path.string()));
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

json sum_json(const FileSum& s) {
  return {{"bytes", s.bytes}, {"fnv1a64", hex(s.fnv)}};
}

std::optional<facets::UnitKind> kind_named(std::string_view name) {
  for (int k = 0; k <= static_cast<int>(facets::UnitKind::Statement); ++k) {
    const auto kind = static_cast<facets::UnitKind>(k);
    if (name == facets::to_string(kind)) return kind;
  }
  return std::nullopt;
}

// Moves `tmp` to `dir`, replacing what is there in one step.
void publish(const std::filesystem::path& tmp, const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::rename(tmp, dir);
    return;
  }
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0) {
    throw IndexError(fmt::format("{}: cannot replace it with {}: {}", dir.string(), tmp.string(),
                                 std::strerror(errno)));
  }
  std::filesystem::remove_all(tmp, ec);  // the old index, now at tmp
}

std::string embedder_name(const json& e) {
  return e.is_null() ? std::string("none")
                     : fmt::format("{} (dim {})", e.at("fingerprint").get<std::string>(),
                                   e.at("dim").get<int>());
}

}  // namespace

void Index::save(const std::filesystem::path& dir) const {
  const Impl& m = *impl_;
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path target = std::filesystem::absolute(dir);
  const std::filesystem::path tmp =
      target.parent_path() /
      fmt::format(".{}.tmp-{}-{}", target.filename().string(), ::getpid(), counter++);
  if (m.embedder && !m.dense) {
    throw IndexError(
        fmt::format("{}: an index without a graph (IndexOptions::graph false, a "
                    "task's overlay) is not saved",
                    target.string()));
  }
  auto lock = m.read_lock();
  try {
    std::filesystem::create_directories(tmp);
    json sums = json::object();
    // chunks.jsonl
    std::string lines;
    for (uint32_t id = 0; id < m.slots.size(); ++id) {
      const Slot& s = m.slots[id];
      if (!s.live) continue;
      const Chunk& c = *s.chunk;
      json terms = json::array();
      for (auto& [t, n] : m.lexical.terms_of(id)) terms.push_back({t, n});
      lines += json{{"id", id},
                    {"path", c.path},
                    {"name", c.name},
                    {"kind", facets::to_string(c.kind)},
                    {"lines", {c.first_line, c.last_line}},
                    {"part", c.part},
                    {"parts", c.parts},
                    {"unit", {c.unit_first_line, c.unit_last_line}},
                    {"tokens", c.tokens},
                    {"hash", hex(s.text_hash)},
                    {"text", c.text},
                    {"calls", c.calls},
                    {"terms", std::move(terms)}}
                   .dump(-1, ' ', false, json::error_handler_t::replace);
      lines += '\n';
    }
    sums["chunks.jsonl"] = sum_json(write_file(tmp / "chunks.jsonl", lines));
    if (m.dense) {
      const std::string_view bytes(reinterpret_cast<const char*>(m.vectors.data()),
                                   m.vectors.size() * sizeof(float));
      sums["vectors.f32"] = sum_json(write_file(tmp / "vectors.f32", bytes));
      m.dense->save(tmp / "hnsw.bin");
      const std::string graph = read_file(tmp / "hnsw.bin");
      sums["hnsw.bin"] = sum_json({graph.size(), base::fnv1a64(graph)});
    }
    json files = json::array();
    for (const auto& [path, f] : m.files.all()) {
      files.push_back({{"path", path},
                       {"hash", hex(f.hash)},
                       {"chunks", f.chunks},
                       {"imports", f.imports},
                       {"skipped", f.skipped}});
    }
    const json manifest = {
        {"format", kFormat},
        {"embedder", m.embedder ? json{{"fingerprint", m.embedder->fingerprint()}, {"dim", m.dim}}
                                : json(nullptr)},
        {"options", {{"max_tokens", m.options.chunks.max_tokens}}},
        {"slots", m.slots.size()},
        {"files", std::move(files)},
        {"checksums", std::move(sums)}};
    // The manifest last: a directory without one is never taken for an index.
    write_file(tmp / "manifest.json",
               manifest.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
    publish(tmp, target);
  } catch (const std::exception& e) {
    std::error_code ec;
    std::filesystem::remove_all(tmp, ec);
    if (dynamic_cast<const IndexError*>(&e) != nullptr) throw;
    throw IndexError(
        fmt::format("{}: saving the retrieval index failed: {}", target.string(), e.what()));
  }
}

namespace {

// Makes the IndexErrors of one load, each naming the directory.
struct Fail {
  const std::filesystem::path& dir;
  IndexError operator()(const std::string& what) const {
    return IndexError(fmt::format("{}: {}", dir.string(), what));
  }
};

// Whose index it is: format version, embedder, chunking.
void check_identity(const json& manifest, const Embedder* embedder, const IndexOptions& options,
                    const Fail& fail) {
  const int format = manifest.at("format").get<int>();
  if (format != kFormat) {
    throw fail(fmt::format("index format version {}, this build reads version {} (rebuild it)",
                           format, kFormat));
  }
  const json saved = manifest.at("embedder");
  const json ours = embedder
                        ? json{{"fingerprint", embedder->fingerprint()}, {"dim", embedder->dim()}}
                        : json(nullptr);
  if (saved != ours) {
    throw fail(fmt::format("index built with embedder {}, loading with {} (rebuild it)",
                           embedder_name(saved), embedder_name(ours)));
  }
  const uint32_t max_tokens = manifest.at("options").at("max_tokens").get<uint32_t>();
  if (max_tokens != options.chunks.max_tokens) {
    throw fail(fmt::format("index chunked at max_tokens {}, loading with max_tokens {}", max_tokens,
                           options.chunks.max_tokens));
  }
}

// Every data file, checked against the manifest's size and checksum before anything parses it.
std::unordered_map<std::string, std::string> read_checked(const std::filesystem::path& dir,
                                                          const json& sums, bool dense,
                                                          const Fail& fail) {
  std::unordered_map<std::string, std::string> bytes;
  for (const char* name : {"chunks.jsonl", "vectors.f32", "hnsw.bin"}) {
    const bool needed = dense || std::string_view(name) == "chunks.jsonl";
    if (!sums.contains(name)) {
      if (needed) throw fail(fmt::format("the manifest lists no checksum for {}", name));
      continue;
    }
    std::string b = read_file(dir / name);
    const uint64_t size = sums.at(name).at("bytes").get<uint64_t>();
    const std::string fnv = sums.at(name).at("fnv1a64").get<std::string>();
    if (b.size() != size || hex(base::fnv1a64(b)) != fnv) {
      throw fail(
          fmt::format("{} is damaged: {} bytes, checksum {}; the manifest says {} bytes, "
                      "checksum {}",
                      name, b.size(), hex(base::fnv1a64(b)), size, fnv));
    }
    bytes.emplace(name, std::move(b));
  }
  return bytes;
}

}  // namespace

void Index::Impl::load_chunks(std::size_t slot_count, std::string_view lines, const Fail& fail) {
  if (slot_count > UINT32_MAX) throw fail(fmt::format("{} slots", slot_count));
  slots.resize(slot_count);
  vectors.assign(slot_count * static_cast<std::size_t>(dim), 0.0f);
  for (std::size_t line = 1; !lines.empty(); ++line) {
    const std::size_t nl = lines.find('\n');
    const json c = json::parse(lines.substr(0, nl));
    lines = nl == std::string_view::npos ? std::string_view{} : lines.substr(nl + 1);
    const uint32_t id = c.at("id").get<uint32_t>();
    if (id >= slot_count || slots[id].live) {
      throw fail(fmt::format("chunks.jsonl:{}: chunk id {} (of {} slots) out of range or repeated",
                             line, id, slot_count));
    }
    Chunk chunk;
    chunk.path = c.at("path").get<std::string>();
    chunk.name = c.at("name").get<std::string>();
    const auto kind = kind_named(c.at("kind").get<std::string>());
    if (!kind)
      throw fail(fmt::format("chunks.jsonl:{}: unknown kind {}", line, c.at("kind").dump()));
    chunk.kind = *kind;
    chunk.first_line = c.at("lines").at(0).get<uint32_t>();
    chunk.last_line = c.at("lines").at(1).get<uint32_t>();
    chunk.part = c.at("part").get<uint32_t>();
    chunk.parts = c.at("parts").get<uint32_t>();
    chunk.unit_first_line = c.at("unit").at(0).get<uint32_t>();
    chunk.unit_last_line = c.at("unit").at(1).get<uint32_t>();
    chunk.tokens = c.at("tokens").get<uint32_t>();
    chunk.text = c.at("text").get<std::string>();
    chunk.calls = c.at("calls").get<std::vector<std::string>>();
    const uint64_t h = base::fnv1a64(chunk.text);
    if (hex(h) != c.at("hash").get<std::string>()) {
      throw fail(fmt::format("chunks.jsonl:{}: the text's hash is not the one saved", line));
    }
    const auto terms = c.at("terms").get<std::vector<std::pair<std::string, uint32_t>>>();
    slots[id] = Slot{true, std::make_shared<const Chunk>(std::move(chunk)), h};
    lexical.add(id, terms);
    usage.add(id, *slots[id].chunk);
    ++live;
  }
  for (uint32_t id = 0; id < slot_count; ++id) {
    if (!slots[id].live) free.insert(id);
  }
}

void Index::Impl::load_graph(const std::filesystem::path& file, std::string_view vector_bytes,
                             const Fail& fail) {
  if (vector_bytes.size() != vectors.size() * sizeof(float)) {
    throw fail(fmt::format("vectors.f32 holds {} bytes, {} slots x dim {} need {}",
                           vector_bytes.size(), slots.size(), dim, vectors.size() * sizeof(float)));
  }
  std::memcpy(vectors.data(), vector_bytes.data(), vector_bytes.size());
  // hnswlib's loadIndex does not bounds-check what it reads: check the structure first.
  if (std::string why = DenseIndex::check_file(file, dim); !why.empty()) {
    throw fail("hnsw.bin: " + why);
  }
  dense = DenseIndex::load(file, dim, dense_options(options));
  if (dense->elements() > slots.size()) {
    throw fail(fmt::format("hnsw.bin: {} elements for {} slots", dense->elements(), slots.size()));
  }
  for (uint32_t id = 0; id < slots.size(); ++id) {
    if (dense->live(id) != slots[id].live) {
      throw fail(fmt::format("hnsw.bin: chunk {} is {} in the graph but {} in chunks.jsonl", id,
                             dense->live(id) ? "live" : "absent",
                             slots[id].live ? "live" : "absent"));
    }
  }
}

void Index::Impl::load_files(const json& list, const Fail& fail) {
  std::size_t owned = 0;
  for (const json& f : list) {
    FileEntry e;
    e.path = f.at("path").get<std::string>();
    e.hash = std::stoull(f.at("hash").get<std::string>(), nullptr, 16);
    e.chunks = f.at("chunks").get<std::vector<uint32_t>>();
    e.imports = f.at("imports").get<std::string>();
    e.skipped = f.at("skipped").get<std::string>();
    e.stem = file_stem(e.path);
    for (const uint32_t id : e.chunks) {
      if (id >= slots.size() || !slots[id].live || slots[id].chunk->path != e.path) {
        throw fail(fmt::format("manifest.json: file {} lists chunk {}, not one of its chunks",
                               e.path, id));
      }
    }
    owned += e.chunks.size();
    e.mean = file_mean(e.chunks);
    files.put(std::move(e));
  }
  if (owned != live) {
    throw fail(
        fmt::format("manifest.json: its files own {} chunks, chunks.jsonl holds {}", owned, live));
  }
}

std::unique_ptr<Index> Index::load(const std::filesystem::path& dir,
                                   std::shared_ptr<const Embedder> embedder, IndexOptions options) {
  const Fail fail{dir};
  json manifest;
  try {
    manifest = json::parse(read_file(dir / "manifest.json"));
  } catch (const json::exception& e) {
    throw fail(fmt::format("manifest.json is not valid JSON: {}", e.what()));
  }
  try {
    check_identity(manifest, embedder.get(), options, fail);
    const auto bytes = read_checked(dir, manifest.at("checksums"), embedder != nullptr, fail);
    auto index = std::make_unique<Index>(embedder, options);
    Impl& m = *index->impl_;
    m.load_chunks(manifest.at("slots").get<std::size_t>(), bytes.at("chunks.jsonl"), fail);
    if (m.dense) m.load_graph(dir / "hnsw.bin", bytes.at("vectors.f32"), fail);
    m.load_files(manifest.at("files"), fail);
    return index;
  } catch (const IndexError&) {
    throw;
  } catch (const json::exception& e) {
    throw fail(fmt::format("malformed index: {}", e.what()));
  } catch (const std::logic_error& e) {  // stoull
    throw fail(fmt::format("malformed index: {}", e.what()));
  } catch (const std::runtime_error& e) {  // filesystem, hnswlib
    throw fail(e.what());
  }
}

std::vector<std::pair<uint32_t, double>> reciprocal_rank_fusion(std::span<const RankedList> lists,
                                                                double k) {
  struct Fused {
    double score = 0;
    std::size_t best_rank = SIZE_MAX, first_list = SIZE_MAX;
  };
  std::unordered_map<uint32_t, Fused> fused;
  for (std::size_t l = 0; l < lists.size(); ++l) {
    std::unordered_set<uint32_t> seen;  // an id listed twice counts at its better rank
    for (std::size_t r = 0; r < lists[l].ids.size(); ++r) {
      const uint32_t id = lists[l].ids[r];
      if (!seen.insert(id).second) continue;
      Fused& f = fused[id];
      f.score += lists[l].weight / (k + static_cast<double>(r + 1));
      f.best_rank = std::min(f.best_rank, r);
      f.first_list = std::min(f.first_list, l);
    }
  }
  std::vector<std::pair<uint32_t, Fused>> order(fused.begin(), fused.end());
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    if (a.second.score != b.second.score) return a.second.score > b.second.score;
    if (a.second.best_rank != b.second.best_rank) return a.second.best_rank < b.second.best_rank;
    if (a.second.first_list != b.second.first_list) {
      return a.second.first_list < b.second.first_list;
    }
    return a.first < b.first;
  });
  std::vector<std::pair<uint32_t, double>> out;
  out.reserve(order.size());
  for (const auto& [id, f] : order) out.emplace_back(id, f.score);
  return out;
}

}  // namespace vsynth::stages::retrieval
