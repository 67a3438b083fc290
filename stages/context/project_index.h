// A project's files, parsed into units and indexed by the names they define; the dependency
// graph context.deps walks. Edges are resolved on demand from the names a definition uses
// (calls, attribute accesses, type uses, imported names alike), which is what keeps an update
// local to the file that changed.
//
// Updates are incremental: a file whose text is unchanged costs one comparison; a changed
// file is re-parsed from its previous tree (the edit is the span between the common prefix
// and suffix of the old and new texts, so a one-line change re-parses a few subtrees), or
// takes a tree already parsed (the cursor's file from the anchor facet), and its units are
// re-extracted, or taken as they are when the caller extracted them already (the cursor's
// file from the candidates facet); only its own entries in the name index change. Superseded
// versions are freed on ast's reclaimer thread (stages/ast/reclaim.h), off the request path.
// An incremental re-parse may give another tree than a fresh parse (ast/parse_cache.h), so an
// index updated in place depends on the versions it saw: context.deps builds one per task from
// FileUnitsCache (file_cache.h), which never re-parses incrementally.
//
// Name resolution, from a file F: definitions of the name in F itself; else those in files F
// imports (a file whose stem, "core" for src/click/core.py and "pkg" for pkg/__init__.py,
// appears as a word in F's import statements); else, through re-exports, those in the files
// an imported file imports when its own imports name it (`from pkg import build` where
// pkg/__init__.py has `from ._impl import build`: pkg/_impl.py), up to kMaxReexportHops files
// deep; else, when the name is defined in at most `max_ambiguity` places in the project (test
// files counted only from a test file: no code imports them), all of them; else none (a name
// like `get` defined 40 times says nothing).
//
// Not thread-safe: the caller locks (context.deps holds one lock per project).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/arena.h"
#include "stages/ast/parsed_file.h"
#include "stages/context/unit.h"
#include "stages/context/unit_extract.h"

namespace vsynth::stages::context {

class ProjectIndex {
 public:
  struct File {
    std::string path;
    std::string stem;   // the name it is imported by: file name without extension, or package
    bool test = false;  // test code (tests/, test_*.py, *_test.go, conftest.py)
    // Kept for incremental re-parses; immutable, so it may be the very file ast.anchor parsed.
    std::shared_ptr<const ast::ParsedFile> parsed;
    // Its units (default ExtractOptions) with the storage of their texts; may be the very
    // extraction a request's candidates were built from.
    std::shared_ptr<const FileUnits> extracted;
    std::span<const Unit> units;  // extracted->units
    std::string imports;          // text of its import units, for resolution
    uint32_t rows = 0;
  };
  struct Ref {
    const File* file = nullptr;
    uint32_t unit = 0;
  };

  // Brings `path` to `source`; returns whether anything changed. A path whose extension no
  // language claims is ignored (returns false).
  bool update(const std::string& path, std::string_view source);
  // Brings `path` to an already parsed file (the cursor's file as ast.anchor parsed it):
  // nothing is parsed again, only its units are extracted and indexed.
  bool update(const std::string& path, std::shared_ptr<const ast::ParsedFile> parsed);
  // Brings `path` to the file `units` were extracted from (ContextUnitsFacet::extracted):
  // nothing is parsed or extracted again when they were made with the default ExtractOptions
  // (the index's own); otherwise as update(path, units->file).
  bool update(const std::string& path, std::shared_ptr<const FileUnits> units);
  void remove(const std::string& path);

  const File* find(std::string_view path) const;
  std::size_t size() const { return files_.size(); }
  uint64_t reparses() const { return reparses_; }  // incremental re-parses so far
  uint64_t parses() const { return parses_; }      // full parses so far

  // Definitions of `name` as seen from `from` (see above).
  std::vector<Ref> resolve(std::string_view name, const File* from, uint32_t max_ambiguity) const;
  // How many re-exporting files resolve() follows in a chain (pkg/__init__.py ->
  // pkg/sub/__init__.py -> pkg/sub/_impl.py is two).
  static constexpr int kMaxReexportHops = 3;

  // The distinct names a unit's code uses (identifiers, nearest-first order not kept).
  std::vector<std::string_view> names_used_by(const File& file, uint32_t unit) const;

 private:
  // update() of a file by its new parse (and its extracted units when the caller has them,
  // else nullptr: index() extracts): false when the text is unchanged.
  bool replace(const std::string& path, std::shared_ptr<const ast::ParsedFile> parsed,
               std::shared_ptr<const FileUnits> units);
  bool adopt(const std::string& path, std::shared_ptr<const ast::ParsedFile> parsed,
             std::shared_ptr<const FileUnits> units);
  void unindex(File& f);
  // resolve()'s second step: the definitions among `all` in the files `from` imports, else
  // (depth > 0) through the ones that re-export the name.
  void resolve_imported(std::string_view name, const File& from, const std::vector<Ref>& all,
                        int depth, std::vector<const File*>& visited, std::vector<Ref>& out) const;
  // Indexes f.parsed, from `units` when they are its default extraction, else extracting it.
  void index(File& f, std::shared_ptr<const FileUnits> units);

  std::unordered_map<std::string, std::unique_ptr<File>> files_;
  std::unordered_map<std::string, std::vector<Ref>> names_;
  std::unordered_map<std::string, std::vector<const File*>> stems_;  // in indexing order
  uint64_t reparses_ = 0, parses_ = 0;
};

// Whether a unit kind is a definition other code can name (and the index keeps).
bool is_definition(UnitKind kind);

}  // namespace vsynth::stages::context
