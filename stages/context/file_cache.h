// FileUnitsCache: project files parsed and extracted once and shared by every task that sends
// the same text, so that context.deps builds each task's own index view (its own files, and
// nothing another task sent) without parsing or extracting a file that was seen before.
//
// A cache only: get(path, text) returns what parsing that text and extracting its units gives,
// whatever was asked before or is asked at the same time. So a miss parses the text afresh and
// never incrementally from another version of the path (which version another task sent last
// must not be able to change a tree), and two tasks missing the same text at once both parse
// it, the first to finish being kept (the two are the same).
//
// Entries are keyed by path and content hash (a hit compares the bytes too) and hold an
// immutable FileUnits (default ExtractOptions, as ProjectIndex adopts them). Bounded by bytes,
// least recently used evicted first; an entry is charged what the parse cache charges for its
// parsed file (ast::ParseCache::charge: 32 bytes per source byte + 2 KiB) plus its units and
// their arena. An entry larger than the whole cache is returned but not kept. Evicting never
// invalidates a FileUnits a task still holds. Thread-safe (one mutex; parsing runs outside it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "stages/context/unit_extract.h"

namespace vsynth::stages::context {

class FileUnitsCache {
 public:
  struct Stats {
    uint64_t hits = 0, misses = 0, evictions = 0;
    std::size_t entries = 0, bytes = 0;
  };

  explicit FileUnitsCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // The units of `path` holding `source`; nullptr when no language claims the path's
  // extension. Throws AstError as ParsedFile does (a text over 4 GiB); the cache is unchanged.
  std::shared_ptr<const FileUnits> get(const std::string& path, std::string_view source);

  Stats stats() const;
  std::size_t max_bytes() const { return max_bytes_; }
  // What an entry holding `units` is charged.
  static std::size_t charge(const FileUnits& units);

 private:
  struct Entry {
    std::string key;  // path and content hash
    std::shared_ptr<const FileUnits> units;
    std::size_t bytes = 0;
  };
  using Lru = std::list<Entry>;  // most recently used first

  const std::size_t max_bytes_;
  mutable std::mutex mu_;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> by_key_;
  Stats stats_;
};

}  // namespace vsynth::stages::context
