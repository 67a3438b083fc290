// The `retrieved` facet: what retrieval.search found for one task, best first. context.deps
// (stages/context) adds each hit's unit to the task's candidates with its rank as a reason, so
// context.prune packs retrieved code and dependency hops under one token budget (one knapsack).
// Retrieval never renders context itself.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "graph/item.h"
#include "stages/facets/context.h"

namespace vsynth::stages::facets {

class RetrievedFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "retrieved";

  struct Hit {
    std::string path;  // the file, as the task or the repository names it
    std::string name;  // the unit ("Cart.receipt")
    UnitKind kind = UnitKind::Function;
    uint32_t first_line = 0, last_line = 0;  // 1-based, inclusive: the whole unit
    double score = 0;                        // fused score (reciprocal-rank fusion)
    // 1-based ranks in each list that found it; 0 = not in that list.
    uint32_t lexical_rank = 0, dense_rank = 0, structural_rank = 0, usage_rank = 0, local_rank = 0;
    // The unit's source rows (first_line..last_line of the file as the index read it), set
    // only when the file is not one of the task's own (its files_field and cursor file):
    // context.deps cannot find such a unit among the task's files, so it shows it from this
    // text, as the one unit of a file entry of its own. Empty for a file the task sent.
    std::string text;
  };
  std::vector<Hit> hits;  // best first, at most the stage's `top_k`

  // Which path served the search: "fusion" (BM25 + dense + usage + local + structure), "lexical"
  // (the encoder or the dense index could not load: BM25 + usage + local + structure), "none" (no
  // index).
  std::string served_by;
  std::string degraded_reason;  // why it is not "fusion", empty otherwise
  double min_score = 0;         // the threshold this task's search used
  uint32_t searched_chunks = 0, searched_files = 0;
  double ms = 0;  // not in the record, which must not depend on timing

  // {served_by, degraded_reason?, min_score, searched_chunks, searched_files,
  //  hits: [{path, name, kind, lines: [a, b], score,
  //          ranks: {lexical, dense, structural, usage, local},
  //          outside_task?: true (the hit carries its text)}]}
  nlohmann::json to_json() const override;
};

}  // namespace vsynth::stages::facets
