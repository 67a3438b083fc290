// The file level of the retrieval index: per indexed file its content hash, its chunks, the
// mean of its chunks' vectors (normalised: the file's direction) and the text of its import
// units, from which import edges are resolved the way context's project index resolves them
// (file G is imported by F when G's stem, "cart" for shop/cart.py and "shop" for
// shop/__init__.py, is a word of F's import statements). Used for the coarse filter (the
// files nearest a query first, then an exact scan of their chunks) and by callers that weigh
// import distance. Not thread-safe: Index locks.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace vsynth::stages::retrieval {

struct FileEntry {
  std::string path;
  uint64_t hash = 0;             // of the indexed text
  std::vector<uint32_t> chunks;  // chunk ids in file order
  std::vector<float> mean;       // dim floats of unit length; empty without chunks or embedder
  std::string imports;           // the file's import units, one per line
  std::string stem;
  std::string skipped;  // why the file has no chunks (chunk_file's reason), or ""
};

// The name a file is imported by: its file name without extension, or for a package's
// __init__.py / mod.rs / index.{js,ts} its folder's name.
std::string file_stem(std::string_view path);

// The normalised mean of `rows` (each `dim` floats); empty when rows is empty or the mean is 0.
std::vector<float> mean_direction(std::span<const float> rows, int dim);

class FileLevel {
 public:
  // Adds or replaces the entry of entry.path.
  void put(FileEntry entry);
  void erase(std::string_view path);
  const FileEntry* find(std::string_view path) const;
  std::size_t size() const { return files_.size(); }
  const std::map<std::string, FileEntry, std::less<>>& all() const { return files_; }

  // Indexed files `path` imports (sorted, itself excluded).
  std::vector<std::string> imports_of(std::string_view path) const;

  // The `n` files whose mean direction is nearest `query` (dot product; ties by path), files
  // in `exclude` and files without a mean left out.
  std::vector<const FileEntry*> nearest(std::span<const float> query, std::size_t n,
                                        const std::unordered_set<std::string>& exclude) const;

 private:
  std::map<std::string, FileEntry, std::less<>> files_;  // by path: iteration is sorted
  std::map<std::string, std::vector<std::string>, std::less<>> stems_;  // stem -> paths
};

// Dot product in a fixed order (the exact scores of dense search and the coarse filter).
double dot(std::span<const float> a, std::span<const float> b);

}  // namespace vsynth::stages::retrieval
