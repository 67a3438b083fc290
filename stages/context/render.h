// Rendering a selection of units as prompt text, and what that text costs in tokens.
//
// Each file with anything selected becomes one section: a header line
// ("# file: src/app.py"), then its selected units in the file's own order, each in its
// chosen form, every container around a selected unit shown (its smallest form unless chosen
// otherwise) with its closing rows, and a marker for each run of rows left out
// ("    # ... 40 lines elided ...", indented like the code around it; a run of blank rows
// between two shown siblings stays one blank row). Other files come first, in candidate
// order; the cursor's file comes last, so the cursor's code sits nearest to what the model
// writes next.
//
// The cost of a selection is the sum of the costs of its pieces (counted once each and
// cached), so trying a change costs no tokenization; the caller counts the final text once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stages/context/context_units.h"
#include "stages/context/token_counter.h"

namespace vsynth::stages::context {

inline constexpr int8_t kNotShown = -1;

// Per-unit form as int8_t: kNotShown or a Form.
using Selection = std::vector<int8_t>;

class Renderer {
 public:
  Renderer(const ContextUnitsFacet& candidates, const TokenCounter& counter);

  // The forms actually shown: the selection plus the containers it needs.
  Selection with_containers(const Selection& selection) const;

  // Tokens of the rendered text, from cached piece costs.
  uint64_t cost(const Selection& selection) const;
  // Tokens of one unit's form alone (cached).
  uint32_t form_cost(uint32_t unit, Form form) const;
  uint32_t close_cost(uint32_t unit) const;
  uint32_t header_cost(uint32_t file) const;
  uint32_t marker_cost(uint32_t file) const;

  struct Text {
    std::string text;
    int64_t cursor_offset = -1;  // where the task's cursor falls in `text`; -1 when not shown
    uint32_t markers = 0;        // elision markers written
  };
  Text render(const Selection& selection) const;

  // The smallest form a unit has (the form a container is shown in when only needed).
  static Form smallest_form(const Unit& unit);

 private:
  template <class Sink>
  void traverse(const Selection& shown, Sink& sink) const;
  template <class Sink>
  void children(const std::vector<uint32_t>& list, const Selection& shown, int64_t first_row,
                int64_t last_row, std::string_view outer_indent, Sink& sink) const;

  const ContextUnitsFacet& c_;
  const TokenCounter& counter_;
  std::vector<std::vector<uint32_t>> children_;  // per unit, members in row order
  std::vector<std::vector<uint32_t>> roots_;     // per file, top-level units in row order
  mutable std::vector<int64_t> form_cost_;       // unit * 3 + form; -1: not counted yet
  mutable std::vector<int64_t> close_cost_;
  mutable std::vector<int64_t> header_cost_, marker_cost_;
  uint32_t blank_cost_ = 1;
};

}  // namespace vsynth::stages::context
