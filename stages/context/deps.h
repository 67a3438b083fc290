// Two-hop dependencies of the cursor's function, across the project (context.deps).
//
// Hop 1: the definitions the focus names (identifiers nearest the cursor first), resolved
// through the project index from the cursor's file. Hop 2: the definitions those name,
// resolved from their own files. In-file definitions are already candidates (a hop-1 one has
// its ref_rank); they get `hop` set and are followed to hop 2. Definitions in other files are
// copied in as candidates (with the containers around them, texts into the item's arena, and
// their normalised token streams for context.dedup), with reasons.hop and hop_rank (the rank
// of the hop-1 name that led there). context.prune values them; by default a signature form
// carries most of their value, so they show as signatures unless the budget has room.
//
// Retrieval hits (the `retrieved` facet of retrieval.search) join the same candidates: each
// hit is resolved to a unit (resolve_retrieved) and gets reasons.retrieval_rank (its rank
// among the hits, 0-based), in the file as a copy like a dependency, or in the cursor's file
// as the candidate it already is; a unit that is also a dependency keeps both reasons. A hit
// is the unit of its path whose rows overlap the hit's lines most among those of its name,
// found in the task's own files. A hit on a file the task did not send carries the unit's
// text (RetrievedFacet::Hit::text): that text, dedented, is extracted as a file of its own
// (through the stage's FileUnitsCache) and its unit is shown at the hit's lines, as the one
// unit of a file entry for that path (the rows above it count as elided).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/arena.h"
#include "stages/context/context_units.h"
#include "stages/context/file_cache.h"
#include "stages/context/project_index.h"
#include "stages/facets/retrieved.h"

namespace vsynth::stages::context {

struct DepsOptions {
  uint32_t hops = 2;           // 1 or 2
  uint32_t max_per_hop = 24;   // definitions kept at each hop, best ranked first
  uint32_t max_ambiguity = 3;  // see ProjectIndex::resolve
};

struct DepsStats {
  uint32_t hop1 = 0, hop2 = 0;  // definitions reached
  uint32_t copied = 0;          // units copied in from other files (containers included)
  uint32_t retrieved = 0;       // retrieval hits added (or marked, when already candidates)
};

// The units retrieval hits name, best first.
struct RetrievedUnits {
  struct Entry {
    ProjectIndex::Ref ref;
    int rank = 0;             // the hit's index in RetrievedFacet::hits
    uint32_t row_offset = 0;  // rows of the real file above ref's file (outside files)
  };
  std::vector<Entry> entries;
  // Files made from the texts of hits outside the task's files (one per such hit).
  std::vector<std::unique_ptr<ProjectIndex::File>> outside;
  uint32_t unresolved = 0;  // hits whose unit was not found (file changed, no such unit)
};

// Resolves `retrieved`'s hits against the task's `index` (see above); `cache` extracts the
// texts of hits outside it.
RetrievedUnits resolve_retrieved(const facets::RetrievedFacet& retrieved, const ProjectIndex& index,
                                 FileUnitsCache& cache);

// `index` must hold the cursor's file (candidates.files[0]) at its current text. `retrieved`
// (optional) adds the hits' units with their retrieval_rank.
DepsStats expand_dependencies(ContextUnitsFacet& candidates, const ProjectIndex& index,
                              const DepsOptions& options, graph::Arena& arena,
                              const RetrievedUnits* retrieved = nullptr);

}  // namespace vsynth::stages::context
