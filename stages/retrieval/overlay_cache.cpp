#include "stages/retrieval/overlay_cache.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/hash.h"
#include "graph/stage.h"

namespace vsynth::stages::retrieval {

OverlayCache::OverlayCache(std::shared_ptr<const Embedder> embedder, IndexOptions options,
                           std::size_t budget_bytes)
    : embedder_(std::move(embedder)),
      options_(overlay_options(std::move(options))),
      budget_(budget_bytes) {}

IndexOptions OverlayCache::overlay_options(IndexOptions o) {
  o.graph = false;      // exact scans: order-independent at any size, nothing to build
  o.coarse_files = 0;   // a few files: every chunk is a candidate
  o.reparse_files = 0;  // a parse never depends on which version came before
  return o;
}

std::shared_ptr<const Index> OverlayCache::previous(std::string_view path) const {
  for (const Entry& e : lru_) {
    for (const auto& [p, text] : e.files) {
      if (p == path) return e.index;
    }
  }
  return nullptr;
}

void OverlayCache::insert(Entry entry) {
  if (by_key_.count(entry.key) != 0) return;  // another request built it meanwhile
  if (entry.bytes > budget_) return;          // larger than the whole cache: not kept
  bytes_ += entry.bytes;
  lru_.push_front(std::move(entry));
  by_key_.emplace(lru_.front().key, lru_.begin());
  while (bytes_ > budget_ && !lru_.empty()) {
    bytes_ -= lru_.back().bytes;
    by_key_.erase(lru_.back().key);
    lru_.pop_back();
    ++evictions_;
  }
}

OverlayCache::Result OverlayCache::get(std::vector<OverlayFile> files,
                                       const std::atomic<bool>* stop) {
  std::sort(files.begin(), files.end(),
            [](const OverlayFile& a, const OverlayFile& b) { return a.path < b.path; });
  std::string key;
  for (const OverlayFile& f : files) {
    key += fmt::format("{}\n{:016x}:{}\n", f.path, base::fnv1a64(f.text), f.text.size());
  }
  // --- a hit: the same paths with the same bytes ---
  std::vector<std::shared_ptr<const Index>> donors(files.size());
  {
    std::lock_guard lock(mutex_);
    ++lookups_;
    if (auto it = by_key_.find(key); it != by_key_.end()) {
      const Entry& e = *it->second;
      bool same = e.files.size() == files.size();
      for (std::size_t i = 0; same && i < files.size(); ++i)
        same = e.files[i].second == files[i].text;
      if (same) {
        ++hits_;
        lru_.splice(lru_.begin(), lru_, it->second);
        return {lru_.front().index, true, 0};
      }
    }
    for (std::size_t i = 0; i < files.size(); ++i) donors[i] = previous(files[i].path);
  }
  // --- a miss: built outside the lock, from the previous overlays' chunks where they match ---
  auto index = std::make_shared<Index>(embedder_, options_);
  Result out;
  Entry entry;
  entry.key = std::move(key);
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (stop && stop->load(std::memory_order_relaxed)) {
      throw graph::Cancelled(
          fmt::format("stopped while embedding the task's files ({} of {})", i, files.size()));
    }
    OverlayFile& f = files[i];
    const UpdateStats s = f.units ? index->update_file(f.units, donors[i].get())
                                  : index->update_file(f.path, f.text, donors[i].get());
    out.embedded += s.embedded;
    entry.files.emplace_back(f.path, std::string(f.text));
  }
  entry.bytes = index->bytes() + sizeof(Entry) + entry.key.size();
  for (const auto& [path, text] : entry.files) entry.bytes += path.size() + text.size();
  out.index = index;
  entry.index = std::move(index);
  std::lock_guard lock(mutex_);
  insert(std::move(entry));
  return out;
}

OverlayCache::Counters OverlayCache::counters() const {
  std::lock_guard lock(mutex_);
  return {lookups_, hits_, evictions_, lru_.size(), bytes_};
}

}  // namespace vsynth::stages::retrieval
