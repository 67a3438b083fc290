// What a translator (translate_python.h, translate_c.h) makes of one generated function: the
// proof obligations its code raises, in source order, for solvers::ContractChecker to check.
//
// Every `return e` reached under path condition P gives a Return obligation (P, e); every
// `assert c` an Assert (P, c); every evaluated expression that can raise (a // b, xs[i]) or, in
// C, overflow gives a Defined obligation (P, "it does not raise"); every loop unrolled to the
// bound gives a Bound obligation (P, "no iteration past the bound"). Return, Assert and Defined
// are the function's correctness: a counterexample to one of them is a real bug. A Bound
// obligation that fails only means the translation does not cover every input: the verdict is
// then unknown, never refuted, never verified.
//
// Anything outside the subset stops the translation at that statement: `unknown` names the
// construct and its line, and the obligations gathered before it stay (a counterexample to
// them is still real; a proof of them is not a proof of the function).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solvers/ir.h"

namespace vsynth::stages::constraint {

enum class ObligationKind { Return, Assert, Defined, Bound };

struct Obligation {
  ObligationKind kind = ObligationKind::Return;
  solvers::Expr condition;  // path condition (Bool); null means True
  // Return: the returned value. Assert / Defined / Bound: a Bool that must hold (Defined: an
  // expression that is True whenever the checked expression evaluates without raising).
  solvers::Expr expr;
  uint32_t line = 0;        // 1-based line of the statement in the translated source
  uint32_t stmt_start = 0;  // byte offset of the statement's first character
  std::string where;        // "line 5", "line 5 (iteration 3 of the loop at line 4)"
};

struct TranslateOptions {
  // for-range loops are unrolled this many iterations; more becomes a Bound obligation.
  int unroll_bound = 8;
  // The source is a prefix cut at a statement boundary (the forward check): no obligation for
  // falling off the end of the function, and a loop whose node ends after `open_end` (a byte
  // offset) may still grow, so it and what follows are not translated.
  bool partial = false;
  uint32_t open_end = UINT32_MAX;
  // Expressions larger than this many IR nodes (unrolled loops nest values) stop the
  // translation as unknown rather than hand Z3 a term it cannot finish.
  std::size_t max_expr_nodes = 20000;
};

struct Translation {
  bool function_found = false;
  std::vector<Obligation> obligations;
  // Set when the translation stopped short: the construct and its line ("while loop at line
  // 7 is not supported"), or why no function was translated.
  std::optional<std::string> unknown;
  // What a verdict over these obligations does not cover ("C integer types are modelled with
  // their ranges; ...").
  std::vector<std::string> caveats;
};

// Number of nodes of an expression tree, counting shared subtrees once per use (what a tree
// walk over it costs), capped at `cap`.
std::size_t tree_size(const solvers::Expr& e, std::size_t cap);

}  // namespace vsynth::stages::constraint
