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
#pragma once

#include <cstdint>

#include "graph/arena.h"
#include "stages/context/candidates.h"
#include "stages/context/project_index.h"

namespace vsynth::stages::context {

struct DepsOptions {
  uint32_t hops = 2;           // 1 or 2
  uint32_t max_per_hop = 24;   // definitions kept at each hop, best ranked first
  uint32_t max_ambiguity = 3;  // see ProjectIndex::resolve
};

struct DepsStats {
  uint32_t hop1 = 0, hop2 = 0;  // definitions reached
  uint32_t copied = 0;          // units copied in from other files (containers included)
};

// `index` must hold the cursor's file (candidates.files[0]) at its current text.
DepsStats expand_dependencies(CandidatesFacet& candidates, const ProjectIndex& index,
                              const DepsOptions& options, graph::Arena& arena);

}  // namespace vsynth::stages::context
