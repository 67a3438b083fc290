// Evaluating the constraint IR on concrete values, with the Python semantics of solvers/ir.h:
// the same meaning Z3 gives a spec, computed directly. stages/validation uses it to keep
// generated inputs inside the requires and to re-check, outside the sandboxed run, every
// counterexample that testing reports before it is believed.
//
// Ints are exact while they fit in 128 bits; an operation that leaves that range, a float
// (Real) value, and an Unsupported node make the result NotEvaluable (never a wrapped or
// rounded guess), so a caller treats them as "no verdict".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "solvers/ir.h"

namespace vsynth::solvers {

__extension__ typedef __int128 Int128;

// A concrete value of a modelled sort: Bool, Int or IntSeq.
struct Concrete {
  Sort sort = Sort::Int;
  bool boolean = false;
  Int128 integer = 0;
  std::vector<Int128> elements;  // IntSeq

  static Concrete of_bool(bool b);
  static Concrete of_int(Int128 v);
  static Concrete of_list(std::vector<Int128> xs);
  std::string python() const;  // True, -3, [1, 2]
  bool operator==(const Concrete& o) const;
};

// Decimal text of an Int128 (Python's repr of the int), and its inverse (optional sign and
// digits only; nullopt for anything else or a value beyond 128 bits).
std::string int128_to_string(Int128 v);
std::optional<Int128> parse_int128(std::string_view text);

using Env = std::vector<std::pair<std::string, Concrete>>;

struct Evaluated {
  enum class Kind { Value, Raised, NotEvaluable };
  Kind kind = Kind::NotEvaluable;
  Concrete value;     // Value
  std::string error;  // Raised: Python's exception ("ZeroDivisionError: ..."); NotEvaluable: why
};

// Evaluates `e` with its free variables bound by `env` (a missing name is NotEvaluable).
// Short-circuits and/or/implies/if-else as Python does, so a guarded division never raises.
Evaluated evaluate(const Expr& e, const Env& env);

}  // namespace vsynth::solvers
