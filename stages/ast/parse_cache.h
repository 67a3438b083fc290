// ParseCache: parsed files kept between requests, so that the IDE case (the same files sent
// again and again, a few characters changed each time) skips parsing.
//
// Entries are keyed by (path, language, content hash) and hold an immutable ParsedFile that
// any number of requests share (std::shared_ptr<const ParsedFile>). A request for a path and
// text finds:
//   hit    the same path and the same text (the hash matches and the bytes compare equal):
//          the cached file and its tree are reused as they are;
//   edit   (with `edits` on) the same path with another text: the path's most recently used
//          version is the base, its tree is copied, ts_tree_edit'ed with the span between the
//          common prefix and suffix of the two texts and re-parsed incrementally (ParsedFile's
//          next-version constructor); the new version is cached beside the old one;
//   miss   a path not cached, `edits` off, or an edit that rewrites over half the file (where
//          reusing the old tree buys nothing): a full parse, cached.
// Edits make a tree depend on which version of the path came before: tree-sitter's
// incremental parse does not always give the tree a fresh parse gives (cutting a file
// mid-row at two rows and re-parsing one cut from the other: 12 of 1332 pairs differ on
// tests/ast/data/sample.c, 19 of 930 on stages/context/deps.cpp, 5 of those with no syntax
// error in either tree). So they are for an editor session that wants the speed; a batch
// whose results must be functions of their tasks leaves them off (ast.anchor's default).
// Old versions of a path stay until LRU evicts them (an editor's undo sends them back).
//
// Size: bounded by bytes, least recently used evicted first. An entry is charged
// kBytesPerSourceByte per byte of its text plus kBytesPerFile: a ParsedFile's heap (text, row
// index, tree, parser) measured with mallinfo2 is 20-48 bytes per source byte on files of
// 40-280 KB (cffi's C and Python, tiktoken's Rust) and ~2 KB for an empty file. Versions of one
// file share their unchanged subtrees, so the charge over-counts edited versions. A file
// larger than the whole cache is parsed and returned but not kept. Evicting an entry never
// invalidates a file a request still holds.
//
// Cost: a lookup, an insertion and an eviction are O(1) in the number of entries (a hash map by
// key, another by path to the path's most recently used version, and the LRU list); hashing
// the text is O(its length).
//
// Thread-safe: lookups and insertions take one mutex; parsing runs outside it, so requests on
// different files parse in parallel (two requests missing the same text at once both parse;
// the first to finish is kept).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "stages/ast/parsed_file.h"

namespace vsynth::stages::ast {

class ParseCache {
 public:
  enum class Outcome { Miss, Hit, Edit };

  struct Result {
    std::shared_ptr<const ParsedFile> file;
    Outcome outcome = Outcome::Miss;
  };

  struct Stats {
    uint64_t hits = 0, misses = 0, edits = 0, evictions = 0;
    std::size_t entries = 0, bytes = 0;
  };

  // What an entry is charged (see above).
  static constexpr std::size_t kBytesPerSourceByte = 32;
  static constexpr std::size_t kBytesPerFile = 2048;

  // `edits`: re-parse a new text for a cached path incrementally (see above).
  explicit ParseCache(std::size_t max_bytes, bool edits = true)
      : max_bytes_(max_bytes), edits_(edits) {}

  // The parsed file for `path` holding `source` in `language` (copied only when parsed).
  // Throws AstError as ParsedFile does (a text over 4 GiB); the cache is unchanged then.
  Result parse(const std::string& path, const Language& language, std::string_view source);

  Stats stats() const;
  std::size_t max_bytes() const { return max_bytes_; }
  bool edits() const { return edits_; }
  // What an entry holding `file` is charged.
  static std::size_t charge(const ParsedFile& file);

 private:
  struct Entry {
    std::string file_key;  // path and language: what versions of one file share
    std::string key;       // file_key and content hash
    std::shared_ptr<const ParsedFile> file;
    std::size_t bytes = 0;
  };
  using Lru = std::list<Entry>;  // most recently used first

  // Moves an entry to the front: the most recently used, overall and of its file.
  void touch_locked(Lru::iterator it);
  // Inserts at the front (replacing a colliding key), then evicts from the back down to
  // max_bytes_.
  void insert_locked(Entry entry);
  // Removes an entry from the list and both maps.
  void erase_locked(Lru::iterator it);

  const std::size_t max_bytes_;
  const bool edits_;
  mutable std::mutex mu_;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> by_key_;
  // file_key -> that file's most recently used version (the base of an edit). Only the most
  // recent version needs a pointer: the LRU list orders a file's versions, and when eviction
  // reaches the most recent one at the back, it is the file's last version.
  std::unordered_map<std::string, Lru::iterator> by_file_;
  Stats stats_;
};

const char* to_string(ParseCache::Outcome outcome);

}  // namespace vsynth::stages::ast
