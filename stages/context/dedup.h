// Near-duplicate removal among candidates (context.dedup): two units whose AST-normalised
// token streams (normalize.h) share at least `threshold` of their k-token shingles (Jaccard)
// say the same thing twice; the one worth less to the prompt is marked removed, so the budget
// goes to something new. The focus and the containers around it are never removed.
//
// Which one stays: the focus side; else the higher full + signature value under the default
// weights of the value model (value.h, which context.prune reads too: an in-file reference
// beats a two-hop dependency, a near one beats a far one); else the cursor's file, then the
// earlier unit. Dedup only marks units removed; it adds nothing to the candidates.
//
// Only units that can matter are compared (those with a reason beyond being near the cursor,
// and not containers), each pair only when their sizes allow the threshold
// (min/max >= threshold), so the cost stays far below all-pairs.
#pragma once

#include <cstdint>

#include "stages/context/context_units.h"

namespace vsynth::stages::context {

struct DedupOptions {
  double threshold = 0.85;
  uint32_t shingle_size = 4;  // tokens per shingle
  uint32_t min_tokens = 12;   // shorter units are never called duplicates
};

// Marks duplicates removed (Unit::removed, duplicate_of; candidates.duplicates lists them).
// Returns how many were removed.
uint32_t remove_duplicates(ContextUnitsFacet& candidates, const DedupOptions& options);

}  // namespace vsynth::stages::context
