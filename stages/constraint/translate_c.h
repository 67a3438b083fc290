// C -> proof obligations: one function of generated C code, by its tree-sitter AST; and the
// contract signature of a C declaration.
//
// The subset: scalar integer and bool parameters and locals (char, short, int, long, long long,
// their unsigned forms, size_t, intN_t/uintN_t, bool), declarations, = and compound
// assignments, ++/--, + - * / % and unary minus, comparisons, && || !, ?:, >> by a literal and
// & with a literal mask of low bits on unsigned values, INT_MAX-style limits, abs(), if/else,
// return, assert(), for loops (any init/condition/update, unrolled to the bound) with break and
// continue. Anything else (pointers, arrays, while/do/switch, other calls) stops the
// translation as unknown.
//
// Semantics (LP64, as gcc/clang on x86-64 and aarch64 Linux): C's integer promotions and usual
// arithmetic conversions; unsigned arithmetic wraps modulo 2^N; signed overflow, division by
// zero and INT_MIN / -1 are undefined behaviour, so each signed operation gets a Defined
// obligation that its exact result fits its type: a counterexample to it is a real bug.
// Converting a value to a narrower signed type that does not fit it is an obligation too.
#pragma once

#include <string_view>
#include <vector>

#include "solvers/signature.h"
#include "stages/constraint/translation.h"

namespace vsynth::stages::constraint {

// Translates the last function definition named `sig.function` in `source`.
Translation translate_c(std::string_view source, const solvers::Signature& sig,
                        const TranslateOptions& options = {});

struct CSignature {
  solvers::Signature signature;  // integer types -> int, bool -> bool, pointers etc. -> Opaque
  // lo <= p <= hi for each integer parameter: the values its C type can hold.
  std::vector<solvers::Expr> ranges;
};

// A C declaration (`int clamp(int x, int lo, int hi)`, with or without the `;`). Throws
// ConstraintError naming the text when it is not one function declaration.
CSignature parse_c_signature(std::string_view declaration);

}  // namespace vsynth::stages::constraint
