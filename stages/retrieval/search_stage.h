// retrieval.search: the project's functions most relevant to the cursor, from a
// retrieval.index resource, into the `retrieved` facet that context.deps adds to the
// candidates (so context.prune packs them with the dependency hops under one budget).
//
//   resources:
//     code: { use: retrieval.index, with: { root: "." } }
//   stages:
//     retrieve: { use: retrieval.search, with: { index: code, top_k: 8 } }
//   edges:
//     - anchor -> retrieve -> summarize -> deps -> dedup -> prune -> out
//
// Per-task overlay, for determinism: the task's own files (files_field and its cursor's file)
// whose text differs from what the shared index holds are indexed for this task alone (in
// path order) and searched with the shared index, from which those paths are excluded. A task
// never sees another task's files, and its result does not depend on what ran before or beside
// it. Overlays are kept across requests by the index resource (overlay_cache.h: the same
// files again cost a lookup, an edited file re-embeds only its changed chunks), and the
// cursor's file is chunked from the units its query was made from (ast.anchor's tree, one
// extraction), never parsed again. The query,
// lists, fusion and threshold are in search.h; every parameter in search_contract().
//
// Requires: `anchor`. Provides: `retrieved`. Ports: `ok`.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "graph/stage.h"
#include "stages/ast/anchor_stage.h"
#include "stages/context/unit_extract.h"
#include "stages/retrieval/index_resource.h"
#include "stages/retrieval/search.h"

namespace vsynth::stages::retrieval {

// What the anchor says of the cursor, as retrieval.search queries with it: the outermost
// function around the cursor (else the rows around it), the names it uses, the file's imports,
// the definitions the file itself holds, and the task's `instruction`. task_paths is left for
// the caller (the task's files). `units`: the anchor file's units when already extracted
// (unit_extract.h's default options), else null.
SearchQuery anchor_query(const ast::AnchorFacet& anchor, std::string instruction = {},
                         std::shared_ptr<const context::FileUnits> units = nullptr);

class SearchStage : public graph::SyncStage {
 public:
  explicit SearchStage(const graph::StageContext& ctx);
  graph::Port process(graph::Item& item) override;

 private:
  std::shared_ptr<IndexResource> index_;
  SearchOptions options_;
  nlohmann::json::json_pointer files_, instruction_;
  graph::Port ok_;
};

graph::Contract search_contract();

}  // namespace vsynth::stages::retrieval
