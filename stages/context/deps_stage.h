// context.deps: the definitions within two hops of the cursor's function,
// across the task's files (deps.h), added to the candidates. Each task resolves
// against an index of its own files and its cursor's file (project_index.h),
// built for it alone: what another task sends, before it or at the same time,
// never changes its result.
//
//   stages:
//     deps: { use: context.deps, with: { hops: 2, max_per_hop: 24 } }
//
// Each task's files come from `files_field` (its help text says the shape). A file several
// tasks send with the same text is parsed and extracted once (file_cache.h), a cache only:
// every task sends every file it relies on. The task's own file (anchor facet) is indexed as
// it was parsed and extracted, never again.
//
// When the item has a `retrieved` facet (retrieval.search ran before), its hits are added too,
// each with its rank as reason (deps.h says how a hit becomes a unit).
//
// Requires: `anchor`. Provides: `context_units`. Ports: `ok`.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "graph/stage.h"
#include "stages/context/deps.h"
#include "stages/context/file_cache.h"
#include "stages/context/project_index.h"

namespace vsynth::stages::context {

class DepsStage : public graph::SyncStage {
 public:
  explicit DepsStage(const graph::StageContext& ctx);
  graph::Port process(graph::Item& item) override;
  const FileUnitsCache& cache() const { return cache_; }

 private:
  // The index view of this task: its `files` (through the cache) and its
  // cursor's file.
  void index_task_files(graph::Item& item, const ContextUnitsFacet& c, ProjectIndex& index);

  nlohmann::json::json_pointer files_;
  DepsOptions options_;
  uint32_t max_files_;
  graph::Port ok_;
  FileUnitsCache cache_;  // shared by every task; locks itself
};

graph::Contract deps_contract();

}  // namespace vsynth::stages::context
