// Block-level pruning under a token budget: which units of the candidates to show, and in
// which form, so that the context fits `budget` tokens and carries the most value.
//
// 1. Mandatory: the focus (the unit holding the cursor) in full, inside its containers. When
//    that alone takes more than `focus_share` of the budget (default 3/4) the focus is opened
//    (split_unit) into its statements, the one holding the cursor becomes the focus, and so
//    on down; statements are shown whole or not at all, valued by their distance to the
//    cursor (stmt: 2 x weight_class / (1 + rows away / 8), so 200 / ... by default), so what
//    the function uses still fits. Clauses after a block (else, elif, except...) are
//    statements beside it, so the cursor's branch does not carry the others; a block left
//    unclosed by the line being typed is opened by rows; a cursor on the header rows keeps the
//    header as the focus.
// 2. Every other unit with a reason gets a value per form (value.h: by default the word at
//    the cursor 150, the enclosing class 100, references 80, edits 60, dependencies 70, two
//    hops 0.4x, imports 20, near 8; full 1, signature 0.7, name 0.15).
// 3. A multiple-choice knapsack (knapsack.h) picks at most one form per unit within the
//    budget left, each option charged its form, an elision marker and the containers and file
//    header it may need (an upper bound, so the choice always fits); then the slack this
//    leaves is filled greedily by exact cost (best value per token first).
// 4. The final text is counted once; while a model's tokenizer counts it over the budget, the
//    shown unit of least value per token is dropped. Whatever the counter, the result is
//    within the budget unless the mandatory statement alone exceeds it (`over_budget`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/arena.h"
#include "stages/context/context_units.h"
#include "stages/context/render.h"
#include "stages/context/token_counter.h"
#include "stages/context/value.h"

namespace vsynth::stages::context {

// The value model's weights (value.h), as context.prune's weight_* parameters set them.
using PruneWeights = ValueWeights;

struct PruneOptions {
  uint32_t budget_tokens = 1024;
  PruneWeights weights;
  bool split_focus = true;  // open a focus larger than focus_share x budget into statements
  // The share of the budget the enclosing function may take whole: past it, its statements
  // nearest the cursor are shown (each whole) so the definitions it uses still fit.
  double focus_share = 0.75;
};

struct Shown {
  uint32_t unit = 0;
  Form form = Form::Full;
  uint32_t tokens = 0;  // of this form alone
  double value = 0;     // 0 for containers shown only to hold their members
  std::string reason;   // "focus", "path", "class", "ref#2", "edit#0", "dep1#3", "import", ...
};

struct PruneResult {
  std::string text;
  int64_t cursor_offset = -1;
  uint32_t used_tokens = 0;  // counted on `text`
  uint32_t markers = 0;
  bool over_budget = false;
  uint32_t considered = 0;   // units with a value
  std::vector<Shown> shown;  // in candidate order
};

// Chooses and renders. May split the focus (appending units to `candidates`); `arena` holds
// texts made then.
PruneResult prune(ContextUnitsFacet& candidates, const TokenCounter& counter,
                  const PruneOptions& options, graph::Arena& arena);

}  // namespace vsynth::stages::context
