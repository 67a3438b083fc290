// Python-style spec expressions (requires/ensures) parsed into the constraint IR.
//
// Grammar: Python's expression grammar (ternary, or/and/not, comparison chains incl. `in`,
// `not in`, + - * / // % **, unary -/+, calls, indexing, literals, parentheses, list/tuple
// literals), restricted to what the IR models:
//   calls: abs, min, max (scalars or one list), len, sum, all/any (over a list, or a generator
//   `all(p for x in xs if q)` whose domains are lists or range(a[, b])), range, int, float, bool.
// Valid Python the IR cannot model (sorted(xs), xs[1:], x is None, bit operations, strings...)
// parses into an Unsupported node, so a check answers unknown rather than a wrong verdict.
// Everything else (unknown names, unknown functions, sort errors, bad syntax) throws SpecError
// with the column and a caret line, e.g. for `def clamp(x: int, low: int, high: int) -> int`:
//   ensures: unknown name 'hgih' at column 14; did you mean 'high'? (known: x, low, high, result)
//     low <= x and hgih >= x
//                  ^
#pragma once

#include <string_view>
#include <vector>

#include "solvers/ir.h"
#include "solvers/signature.h"

namespace vsynth::solvers {

enum class SpecKind { Requires, Ensures };

// One requires/ensures expression over the signature's parameters (and `result`, of the
// signature's result sort, in ensures). The result is Bool: Python truthiness is applied, so
// `requires: xs` means len(xs) > 0. Messages start with "requires:" / "ensures:".
Expr parse_spec(std::string_view text, const Signature& sig, SpecKind kind);

// An expression of any sort over the given names; `what` prefixes error messages.
Expr parse_expression(std::string_view text, const std::vector<Param>& names,
                      std::string_view what = "spec");

}  // namespace vsynth::solvers
