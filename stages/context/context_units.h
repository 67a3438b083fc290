// The candidate units of one task, as a facet: the cursor file's units with their three forms
// and the reasons each matters (context.summarize builds it, or whichever context stage runs
// first), definitions from other files (context.deps adds them), near-duplicates marked
// removed (context.dedup). context.prune chooses among them.
//
// In-file reasons, computed here from the anchor:
//   focus         the innermost unit holding the cursor (a function, method, field...); when
//                 the cursor sits between units, a unit made of the cursor's row alone
//   on_path       every container around the focus (class, namespace, impl, #ifdef)
//   class_member  fields and constructors of the enclosing class, and the type definitions
//                 named like it (a Rust struct for its impl, a Go struct for its methods'
//                 receiver, a C++ class for an out-of-line method) with their fields
//   at_cursor     definitions named by the identifier touching the cursor (the word typed)
//   ref_rank      definitions named by identifiers of the focus, ranked by their nearest use
//                 to the cursor (0: the identifier at the cursor); imports whose names it uses
//   row_distance  rows between each unit and the cursor
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "graph/item.h"
#include "stages/ast/anchor_stage.h"
#include "stages/context/unit.h"
#include "stages/context/unit_extract.h"

namespace vsynth::stages::context {

class ContextUnitsFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "context_units";

  std::vector<SourceInfo> files;  // [0]: the cursor's file
  std::vector<Unit> units;
  int32_t focus = -1;  // index of the unit holding the cursor
  uint32_t cursor_byte = 0, cursor_row = 0;
  std::shared_ptr<const ast::ParsedFile> file;  // the cursor's file: units of file 0 view it
  // The cursor file's units as extracted, before reasons were added (`units` starts as a copy;
  // their signature and name forms live in its arena). context.deps hands it to the project
  // index so that the file is not extracted a second time.
  std::shared_ptr<const FileUnits> extracted;
  std::vector<std::shared_ptr<const void>> keep_alive;  // storage other units view

  // What context.deps found: one entry per definition it reached.
  struct Dependency {
    std::string name, path;
    int hop = 0;
    std::string via;  // the name that led there from the previous hop
  };
  std::vector<Dependency> deps;

  struct Duplicate {
    uint32_t removed = 0, kept = 0;
    double jaccard = 0;
  };
  std::vector<Duplicate> duplicates;

  // {"files": N, "units": N, "focus": name, "deps": [...], "duplicates": [...]}
  nlohmann::json to_json() const override;
};

// The item's candidates, built from its anchor facet when no stage has built them yet.
// Throws (through Item::get) when the item has no anchor.
ContextUnitsFacet& ensure_candidates(graph::Item& item, const ExtractOptions& options = {});

// Builds candidates for `anchor`'s file (exposed for tests and benchmarks): extracts it
// (extract_file_units) and builds from that. Texts live in the extraction and the file;
// `arena` is not needed any more and is kept for callers.
void build_candidates(ContextUnitsFacet& out, const ast::AnchorFacet& anchor, graph::Arena& arena,
                      const ExtractOptions& options = {});
// The same from units already extracted from the anchor's very file (else ContextError).
void build_candidates(ContextUnitsFacet& out, const ast::AnchorFacet& anchor,
                      std::shared_ptr<const FileUnits> units);

// Adds a unit made of row `row` alone (a cursor between units), inside the innermost
// container around that row at or below `within` (-1: anywhere). Returns its index.
int32_t add_row_unit(ContextUnitsFacet& candidates, uint32_t row, int32_t within = -1);

// Units matching `name` by their simple name ("Widget::run" and "run" both match "run").
bool unit_named(const Unit& unit, std::string_view name);

}  // namespace vsynth::stages::context
