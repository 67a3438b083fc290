#include "stages/context/file_cache.h"

#include <fmt/format.h>

#include <functional>
#include <utility>

#include "stages/ast/language.h"
#include "stages/ast/parse_cache.h"
#include "stages/ast/reclaim.h"

namespace vsynth::stages::context {

std::size_t FileUnitsCache::charge(const FileUnits& units) {
  return ast::ParseCache::charge(*units.file) + units.arena.bytes() +
         units.units.size() * sizeof(Unit);
}

std::shared_ptr<const FileUnits> FileUnitsCache::get(const std::string& path,
                                                     std::string_view source) {
  const ast::Language* lang = ast::Language::find_for_path(path);
  if (!lang) return nullptr;
  std::string key = path;
  key += '\0';
  key += fmt::format("{:016x}", std::hash<std::string_view>{}(source));
  {
    std::lock_guard lock(mu_);
    if (auto it = by_key_.find(key);
        it != by_key_.end() && it->second->units->file->source() == source) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++stats_.hits;
      return it->second->units;
    }
  }

  // Parsed afresh (see the header: never from another version of the path) and extracted.
  std::shared_ptr<const FileUnits> units =
      extract_file_units(std::make_shared<const ast::ParsedFile>(path, *lang, std::string(source)));
  const std::size_t bytes = charge(*units);

  std::lock_guard lock(mu_);
  ++stats_.misses;
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    if (it->second->units->file->source() == source) {
      // Another task parsed the same text meanwhile: share the first one's.
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->units;
    }
    // A hash collision (another text under the same key): the newer text wins.
    stats_.bytes -= it->second->bytes;
    ast::retire(std::move(it->second->units));
    lru_.erase(it->second);
    by_key_.erase(it);
  }
  if (bytes > max_bytes_) return units;  // larger than the whole cache: not kept
  stats_.bytes += bytes;
  lru_.push_front(Entry{std::move(key), units, bytes});
  by_key_[lru_.front().key] = lru_.begin();
  while (stats_.bytes > max_bytes_) {
    Entry& victim = lru_.back();
    stats_.bytes -= victim.bytes;
    ast::retire(std::move(victim.units));  // released off this lock and this request
    by_key_.erase(victim.key);
    lru_.pop_back();
    ++stats_.evictions;
  }
  stats_.entries = lru_.size();
  return units;
}

FileUnitsCache::Stats FileUnitsCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace vsynth::stages::context
