// A function's parameters and result as the solver sees them: names, sorts, order.
//
// The order is the caller's: counterexamples print `clamp(x=5, lo=0, hi=3)` in it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solvers/ir.h"

namespace vsynth::solvers {

struct Param {
  std::string name;
  Sort sort = Sort::Int;   // Opaque for a type the IR does not model (str, dict, ...)
  std::string annotation;  // as written; empty when the parameter has none
};

struct Signature {
  std::string function;
  std::vector<Param> params;
  // Sort of the return value; nullopt for `-> None` (then ensures cannot mention `result`).
  std::optional<Sort> result = Sort::Int;
  std::string result_annotation;

  const Param* find(std::string_view name) const;
};

// Sort of a Python annotation: int, bool, float, list[int] (also List[int], typing.List[int],
// Sequence[int], tuple[int, ...]); an empty annotation means int (the default for specs over
// unannotated code); anything else is Opaque.
Sort sort_from_annotation(std::string_view annotation);

// Parses one Python signature line, `def clamp(x: int, lo: int, hi: int) -> int:` (the leading
// `def`/`async def` and the trailing ':' are optional). Defaults are skipped; a leading self/cls
// is dropped; `*`, `/` markers are skipped; *args/**kwargs become Opaque parameters. Throws
// SpecError with the column on malformed input.
Signature parse_python_signature(std::string_view line);

}  // namespace vsynth::solvers
