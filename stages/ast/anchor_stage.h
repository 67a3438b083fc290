// ast.anchor: parses the task's source file and locates its cursor: the smallest node there,
// the enclosing function and class, every enclosing scope, the module's package, the imports
// and the identifiers used nearest the cursor. Later stages (the context.* stages, and
// generate.llm for the cursor) read the `anchor` facet, parsed tree included, never re-parsing.
//
//   stages:
//     anchor: { use: ast.anchor, with: { cursor_base: one, max_identifiers: 32, cache_mb: 64 } }
//
// Parse cache (parse_cache.h): the stage keeps parsed files between requests, keyed by path
// and content hash, LRU-bounded to `cache_mb` MiB (0: none, every request parses afresh). The
// same text again reuses the tree; with `cache_edits: true`, another text for a cached path is
// parsed incrementally from the path's last version (ts_tree_edit with the changed span, then
// a re-parse): faster in an editor session, but the tree may then differ from a fresh parse's
// (parse_cache.h), so it is off by default. One cache per stage instance, shared by the
// requests it processes concurrently, kept for the run (a `vsynth serve` session, a batch).
//
// Task fields (JSON pointers, each a parameter):
//   /path      the file's name; its extension picks the language (.py, .c/.h, .cc/.cpp/.hpp/
//              .cxx, .go, .java, .js/.mjs/.jsx, .ts, .tsx, .rs) unless /language is given
//   /source    the file's text (UTF-8)
//   /cursor    {"line": L, "column": C} in the `cursor_base` convention (columns count bytes),
//              or {"offset": B}, a 0-based byte offset
//   /language  optional: python, c, cpp, go, java, javascript, typescript, tsx or rust
// A missing or mistyped field, an unknown language or a cursor outside the file fails the item
// with a message naming the task, the field and what would be valid.
//
// Provides: facet `anchor` (AnchorFacet). Ports: `ok`.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "graph/stage.h"
#include "stages/ast/anchor.h"
#include "stages/ast/parse_cache.h"
#include "stages/ast/parsed_file.h"

namespace vsynth::stages::ast {

// The anchor of one task. `anchor` points into `file` (nodes, string views), which the facet
// owns and never changes, so both stay valid as long as the item holds the facet.
class AnchorFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "anchor";
  // `parse`: how the file was obtained: "parsed" (no cache), or a ParseCache outcome ("hit",
  // "edit", "miss"). Not in the record: it depends on what other tasks parsed before (the
  // cache's stats count it), and a result must be a function of its task.
  AnchorFacet(std::shared_ptr<const ParsedFile> file, Anchor anchor,
              std::string_view parse = "parsed")
      : file_(std::move(file)), anchor_(std::move(anchor)), parse_(parse) {}

  const ParsedFile& file() const { return *file_; }
  std::shared_ptr<const ParsedFile> share_file() const { return file_; }
  const Anchor& anchor() const { return anchor_; }
  std::string_view parse() const { return parse_; }

  // path, language, cursor, node, function, class, module, scopes, imports,
  // identifiers, syntax_errors; positions as {"row", "column"}, 0-based, columns in bytes.
  nlohmann::json to_json() const override;

 private:
  std::shared_ptr<const ParsedFile> file_;
  Anchor anchor_;
  std::string parse_;
};

class AnchorStage : public graph::SyncStage {
 public:
  explicit AnchorStage(const graph::StageContext& ctx);
  graph::Port process(graph::Item& item) override;
  // Null when `cache_mb` is 0.
  const ParseCache* cache() const { return cache_.get(); }

 private:
  nlohmann::json::json_pointer path_, source_, cursor_, language_;
  bool one_based_;
  AnchorOptions options_;
  std::unique_ptr<ParseCache> cache_;
  graph::Port ok_;
};

graph::Contract anchor_contract();

}  // namespace vsynth::stages::ast
