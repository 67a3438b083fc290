// Symbolic execution state shared by the translators: which variables hold which IR value, and
// under which condition a point of the function is reached.
//
// The translators execute a function once, forking at branches and merging after them: a State
// is "the program is at this point exactly when `alive` holds, and then each variable has its
// value in `env`". Merging states whose alive conditions are disjoint gives one state whose
// values are if-then-else over those conditions, so paths never multiply; every return records
// its state's `alive` as its path condition.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solvers/ir.h"

namespace vsynth::stages::constraint {

struct State {
  solvers::Expr alive;  // Bool; null means True
  bool dead = false;    // statically unreachable (after a return, break, continue)
  std::map<std::string, solvers::Expr, std::less<>> env;
};

// a and b, where null means True.
solvers::Expr conj(const solvers::Expr& a, const solvers::Expr& b);

// `s` restricted to `cond` (a Bool).
State branch(const State& s, const solvers::Expr& cond);

// One state for several whose alive conditions are disjoint (the branches of an if, the exits
// of a loop). Dead states are dropped; all dead gives a dead state. A variable bound in only
// some of the live states, or with sorts that cannot be merged, becomes an unsupported value
// whose reason names it and `where` (Python would raise UnboundLocalError on such a path).
State merge(std::vector<State> states, std::string_view where);

// The value of a Bool built only from literals (comparisons of int literals, not, and, or);
// nullopt when it depends on anything else. Lets loops over range(3) stop after 3 iterations.
std::optional<bool> const_bool(const solvers::Expr& e);

// Does evaluating `e` possibly raise (division, modulo, indexing, min/max of a sequence)?
bool can_raise(const solvers::Expr& e);

// A Bool that is True whenever `e` evaluates without raising: the Defined obligation's body.
solvers::Expr defined(const solvers::Expr& e);

}  // namespace vsynth::stages::constraint
