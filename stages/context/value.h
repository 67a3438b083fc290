// What a candidate unit is worth to the prompt, from its reasons (unit.h) and the form it is
// shown in: the one value model that context.dedup (which of two duplicates stays) and
// context.prune (what the budget buys) both read. It depends on the candidates alone, so the
// request's data flows one way: candidates (summarize, deps) -> values -> dedup, prune.
//
// Reasons, by default weights (a unit with several takes the largest plus kNextReasonShare of
// the next):
//   stmt     a statement of an opened focus: 2 x class / (1 + rows away / 8)         (200 / ...)
//   cursor   the definition of the name at the cursor (in the file or, through
//            context.deps, another file): the word being typed                         150
//   class    fields / constructors / type definitions of the enclosing class          100
//   ref      in-file definitions the focus names, 80 / (1 + rank / 8)
//   edit     blocks overlapping the edit history, 60 x 0.7^recency
//   dep      definitions one hop away in other files (context.deps) as ref, 70 / (1 + rank / 8);
//            two hops kSecondHopShare of that
//   retr     definitions retrieval.search found (the `retrieved` facet, through context.deps),
//            50 / (1 + rank / 8): relevant by what they say, not named by the focus, so below a
//            named dependency
//   import   imports whose names the focus uses 20, others 2
//   near     other units of the cursor's file within kNearRows rows, 8 / (1 + rows away / 20)
// Forms scale that: full 1, signature 0.7 (imports 1.05: the trimmed line says as much),
// name 0.15.
#pragma once

#include <cstdint>
#include <string>

#include "stages/context/unit.h"

namespace vsynth::stages::context {

struct ValueWeights {
  double cursor = 150;
  double class_member = 100;
  double reference = 80;
  double edit = 60;
  double dependency = 70;
  double retrieval = 50;
  double import = 20;
  double near = 8;
};

// A definition two hops away is worth this share of one hop away: it is what the focus's
// dependencies use, which the completion needs less often than what the focus uses itself.
inline constexpr double kSecondHopShare = 0.4;
// A unit's second strongest reason adds this share of its value: two reasons are worth more
// than one, but a unit named once and near is not worth two units.
inline constexpr double kNextReasonShare = 0.25;
// Units farther than this from the cursor get no value for nearness alone (it would be under
// 1/10 of weight_near): they stay out of the knapsack, which keeps it small on long files.
inline constexpr uint32_t kNearRows = 200;

// The value of showing `unit` in `form` (0: no reason to show it, removed, or no such form).
double unit_value(const Unit& unit, Form form, const ValueWeights& w);

// The strongest reason as shown in the context facet: "class", "ref#2", "dep1#0", "retr#3", ...
// ("" for none).
std::string reason_text(const Unit& unit, const ValueWeights& w);

}  // namespace vsynth::stages::context
