// Python -> proof obligations: one function of generated code, by its tree-sitter AST.
//
// The subset: assignments (also tuple and augmented), + - * / // % ** (literal exponent) and
// unary minus with Python's semantics, comparisons (chains, in / not in), and / or / not,
// conditional expressions, if / elif / else, return, assert, raise (a reachable raise is a
// failed assertion), pass, for loops over range(...) with a literal step or over a list,
// unrolled to TranslateOptions::unroll_bound, with break and continue; calls to abs, min, max,
// len, sum, int, float, bool; xs[i]; list literals. Other expressions (strings, method calls,
// slices...) become unsupported IR values: a proof may still go through without them, a
// counterexample that depends on them is reported as unknown. Other statements (while, nested
// def, with, try, assignments to xs[i] or attributes, calls for their effects) stop the
// translation: Translation::unknown names the construct and its line.
//
// Parameters are matched to the contract's signature by position, so a candidate may rename
// them; values use the signature's sorts.
#pragma once

#include <string_view>

#include "solvers/signature.h"
#include "stages/constraint/translation.h"

namespace vsynth::stages::constraint {

// Translates the last top-level function named `sig.function` in `source`. A source with
// syntax errors (a prefix cut inside an expression too) translates to unknown with
// function_found false.
Translation translate_python(std::string_view source, const solvers::Signature& sig,
                             const TranslateOptions& options = {});

}  // namespace vsynth::stages::constraint
