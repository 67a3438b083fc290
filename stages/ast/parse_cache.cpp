#include "stages/ast/parse_cache.h"

#include "stages/ast/reclaim.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <utility>

namespace vsynth::stages::ast {

namespace {

std::string file_key_of(std::string_view path, const Language& language) {
  std::string k(path);
  k += '\0';
  k += language.name();
  return k;
}

// An edit that replaces more than half of the new text re-parses about as much as a full
// parse and keeps the old tree's memory alive for nothing: parse afresh.
bool worth_editing(const TextEdit& e, std::size_t new_size) {
  const std::size_t span = std::max(e.old_end, e.new_end) - e.start;
  return 2 * span <= new_size;
}

}  // namespace

const char* to_string(ParseCache::Outcome outcome) {
  switch (outcome) {
    case ParseCache::Outcome::Miss:
      return "miss";
    case ParseCache::Outcome::Hit:
      return "hit";
    case ParseCache::Outcome::Edit:
      return "edit";
  }
  return "?";
}

std::size_t ParseCache::charge(const ParsedFile& file) {
  return kBytesPerSourceByte * file.source().size() + kBytesPerFile;
}

ParseCache::Result ParseCache::parse(const std::string& path, const Language& language,
                                     std::string_view source) {
  std::string file_key = file_key_of(path, language);
  const uint64_t hash = std::hash<std::string_view>{}(source);
  std::string key = file_key + '\0' + fmt::format("{:016x}", hash);

  std::shared_ptr<const ParsedFile> base;
  {
    std::lock_guard lock(mu_);
    if (auto it = by_key_.find(key); it != by_key_.end() && it->second->file->source() == source) {
      touch_locked(it->second);
      ++stats_.hits;
      return {it->second->file, Outcome::Hit};
    }
    // The most recently used version of this file, if any, is the base of an edit.
    if (auto it = by_file_.find(file_key); edits_ && it != by_file_.end()) {
      base = it->second->file;
    }
  }

  Result result;
  if (base && worth_editing(diff_texts(base->source(), source), source.size())) {
    result = {std::make_shared<const ParsedFile>(*base, std::string(source)), Outcome::Edit};
    base.reset();
  } else {
    result = {std::make_shared<const ParsedFile>(path, language, std::string(source)),
              Outcome::Miss};
  }
  std::lock_guard lock(mu_);
  ++(result.outcome == Outcome::Edit ? stats_.edits : stats_.misses);
  if (auto it = by_key_.find(key); it != by_key_.end() && it->second->file->source() == source) {
    // Another request parsed the same text meanwhile: share the first one's tree.
    touch_locked(it->second);
    result.file = it->second->file;
    return result;
  }
  insert_locked(Entry{std::move(file_key), std::move(key), result.file, charge(*result.file)});
  return result;
}

void ParseCache::touch_locked(Lru::iterator it) {
  lru_.splice(lru_.begin(), lru_, it);
  by_file_[it->file_key] = it;
}

void ParseCache::erase_locked(Lru::iterator it) {
  stats_.bytes -= it->bytes;
  retire(std::move(it->file));  // its tree is released off this lock and this request
  by_key_.erase(it->key);
  // Only the file's most recent version is pointed to; an older one leaves it as it is.
  if (auto f = by_file_.find(it->file_key); f != by_file_.end() && f->second == it) {
    by_file_.erase(f);
  }
  lru_.erase(it);
}

void ParseCache::insert_locked(Entry entry) {
  if (entry.bytes > max_bytes_) return;  // larger than the whole cache: not kept
  if (auto it = by_key_.find(entry.key); it != by_key_.end()) {
    // A hash collision (another text under the same key): the newer text wins.
    erase_locked(it->second);
  }
  stats_.bytes += entry.bytes;
  lru_.push_front(std::move(entry));
  by_key_[lru_.front().key] = lru_.begin();
  by_file_[lru_.front().file_key] = lru_.begin();
  while (stats_.bytes > max_bytes_ && !lru_.empty()) {
    erase_locked(std::prev(lru_.end()));
    ++stats_.evictions;
  }
  stats_.entries = lru_.size();
}

ParseCache::Stats ParseCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace vsynth::stages::ast
