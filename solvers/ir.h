// The constraint IR: immutable, shared expression trees over ints, bools, reals and bounded
// integer sequences, with Python semantics (floor division, short-circuit and/or, exceptions).
//
// Who builds it: solvers/spec_parser (requires/ensures text) and stages/constraint (generated
// Python/C code, from the AST). Who consumes it: solvers/z3_backend and the printer.
//
// Semantics, stated once:
//  - Int is a mathematical (unbounded) integer, as in Python. C's fixed-width overflow is not
//    modelled; TruncDiv/TruncMod give C's rounding toward zero.
//  - Real is an exact real number; Python floats (rounding, inf, nan) are NOT modelled, so a proof
//    over Real is a proof for exact arithmetic only (the backend reports this as a caveat).
//  - IntSeq is a finite sequence of Int (a Python list[int]); the backend bounds its length by a
//    per-session maximum, so proofs about sequences hold for lengths up to that bound only.
//  - An expression may raise (ZeroDivisionError, IndexError, ValueError); the backend tracks the
//    conditions under which it is defined, honouring and/or/if-else short-circuits.
//  - Unsupported is a placeholder for a construct the IR cannot express (sorted(xs), a str
//    parameter...). It keeps the expression well-formed; the backend over-approximates it with a
//    fresh unknown, so it can still prove things but never reports a counterexample it cannot
//    trust (it answers unknown instead).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "solvers/error.h"

namespace vsynth::solvers {

// Opaque is only the sort of an Unsupported node whose Python type has no counterpart here (a
// str parameter, None); any builder given an Opaque operand returns an Unsupported result.
enum class Sort : uint8_t { Bool, Int, Real, IntSeq, Opaque };

// Python spelling of a sort: "bool", "int", "float", "list[int]", "<unsupported>".
std::string_view sort_name(Sort s);

enum class Op : uint8_t {
  // Leaves.
  BoolLit,      // bool_value
  IntLit,       // int_value
  RealLit,      // text: the literal as written ("2.5", "1e-3")
  Var,          // text: the name
  Unsupported,  // text: source snippet (printed as is); detail: why it is unsupported
  // Sequences.
  ListLit,  // [a, b, c]: Int elements
  Range,    // range(lo, hi): step 1, only as an iteration domain, `in`, or len()
  Len,      // len(s)
  Index,    // s[i]: raises IndexError unless -len(s) <= i < len(s); negative i counts from the end
  Sum,      // sum(s)
  SeqMin,   // min(s): raises ValueError on an empty sequence
  SeqMax,   // max(s)
  In,       // x in s
  // Arithmetic (Int or Real; mixed operands are promoted to Real by the builders).
  Neg,
  Add,
  Sub,
  Mul,
  Div,       // true division: Real result; raises ZeroDivisionError
  FloorDiv,  // Python //: rounds toward -inf; raises ZeroDivisionError
  Mod,       // Python %: result has the sign of the divisor
  TruncDiv,  // C /: rounds toward zero (Int only)
  TruncMod,  // C %: result has the sign of the dividend (Int only)
  Abs,
  Min,  // min(a, b, ...): two or more arguments
  Max,
  ToReal,  // float(x)
  ToInt,   // int(x): truncates toward zero
  // Comparisons (Bool result).
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  // Logic (Bool operands).
  Not,
  And,  // n-ary, short-circuit left to right
  Or,   // n-ary, short-circuit left to right
  Implies,
  Ite,  // args: cond, then, else
  // Bounded quantification: args: bound Var (Int), domain (IntSeq or Range), body (Bool).
  All,
  Any,
  // sum(body for name in domain): args: bound Var (Int), domain, body (Int; a Bool body counts
  // as 1 or 0, as Python's sum of bools does). Int result.
  SumOf,
};

class Node;
using Expr = std::shared_ptr<const Node>;

class Node {
 public:
  Op op;
  Sort sort;
  std::vector<Expr> args;
  int64_t int_value = 0;
  bool bool_value = false;
  // And built from a comparison chain `a <= b <= c`: the printer writes the chain back.
  bool chain = false;
  // ToReal inserted by a builder to promote an int operand: printed as the bare operand.
  bool implicit = false;
  std::string text;
  std::string detail;
  // Height of the tree (a leaf is 1). Printing and solving recurse over it, so builders refuse
  // trees taller than kMaxExprDepth rather than risk the stack.
  uint32_t depth = 1;

  Node(Op o, Sort s) : op(o), sort(s) {}
};

inline constexpr uint32_t kMaxExprDepth = 512;

// Python-like source text of an expression, with the fewest parentheses that keep its meaning.
// TruncDiv/TruncMod print as cdiv(a, b)/cmod(a, b) (they have no Python spelling).
std::string to_python(const Expr& e);

namespace ir {

// --- Leaves -------------------------------------------------------------------------------------
Expr bool_lit(bool v);
Expr int_lit(int64_t v);
// A real literal as written in Python (optional '-', digits, optional '.', optional exponent);
// throws
// SolverError for anything else ("inf", "1/3").
Expr real_lit(std::string_view python_text);
// A variable; sort must not be Opaque. Names are Python identifiers (checked).
Expr var(std::string_view name, Sort sort);
// A placeholder for something the IR cannot model. `source` is what the printer shows,
// `why` says what is missing ("sorted() is not modelled").
Expr unsupported(Sort sort, std::string_view source, std::string_view why);

// --- Sequences ----------------------------------------------------------------------------------
Expr list_lit(std::vector<Expr> elems);  // Int elements
Expr range(Expr lo, Expr hi);            // Int bounds
Expr len(Expr seq);
Expr index(Expr seq, Expr i);
Expr sum(Expr seq);
Expr seq_min(Expr seq);
Expr seq_max(Expr seq);
Expr in(Expr x, Expr seq);  // Int x, IntSeq or Range seq

// --- Arithmetic ---------------------------------------------------------------------------------
Expr neg(Expr a);
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr div(Expr a, Expr b);  // Python `/`: always Real
Expr floor_div(Expr a, Expr b);
Expr mod(Expr a, Expr b);
Expr trunc_div(Expr a, Expr b);
Expr trunc_mod(Expr a, Expr b);
Expr abs(Expr a);
Expr min(std::vector<Expr> args);  // two or more
Expr max(std::vector<Expr> args);
Expr to_real(Expr a);
Expr to_int(Expr a);
// a ** n for a constant n in [0, 64] (unrolled into multiplications); Unsupported otherwise.
Expr pow(Expr a, Expr n);

// --- Comparisons --------------------------------------------------------------------------------
Expr eq(Expr a, Expr b);  // Int/Real (promoted), Bool, or IntSeq (element-wise) on both sides
Expr ne(Expr a, Expr b);
Expr lt(Expr a, Expr b);  // Int/Real only
Expr le(Expr a, Expr b);
Expr gt(Expr a, Expr b);
Expr ge(Expr a, Expr b);
// A Python comparison chain: operands [a, b, c], ops [Lt, Le] means a < b <= c, i.e.
// a < b and b <= c with b evaluated once. One operator gives the plain comparison.
Expr compare_chain(std::vector<Expr> operands, const std::vector<Op>& ops);
// The And of already-built chain links (`a < b`, `b <= c`), marked so that the printer writes
// `a < b <= c` back; one link is returned as is.
Expr chain(std::vector<Expr> links);

// --- Logic --------------------------------------------------------------------------------------
Expr not_(Expr a);
Expr and_(std::vector<Expr> args);  // Bool operands; and_({}) is True, one operand is itself
Expr or_(std::vector<Expr> args);
Expr implies(Expr a, Expr b);
Expr ite(Expr cond, Expr then_e, Expr else_e);  // branches of one sort (Int/Real promoted)
// Python truthiness: Bool as is, number != 0, sequence non-empty.
Expr truthy(Expr a);
// Python `a and b` / `a or b` on any operands: Bool operands give And/Or; operands of one other
// sort give the operand-valued form (`x or 0` is x when x is truthy, else 0).
Expr py_and(Expr a, Expr b);
Expr py_or(Expr a, Expr b);

// --- Quantification over a finite domain ---------------------------------------------------------
// all(body for name in domain) / any(...); `bound` must be an Int var() used in body.
Expr all(Expr bound, Expr domain, Expr body);
Expr any(Expr bound, Expr domain, Expr body);
// sum(body for name in domain): a Bool body counts as 1 if true else 0.
Expr sum_of(Expr bound, Expr domain, Expr body);

}  // namespace ir

// --- Queries ------------------------------------------------------------------------------------

// Top-level conjuncts: And nodes (chains included) flattened; a non-And is its own conjunct.
std::vector<Expr> conjuncts(const Expr& e);
// Free variables in first-occurrence order (quantifier-bound names excluded).
std::vector<std::pair<std::string, Sort>> free_vars(const Expr& e);
// The first Unsupported node's detail, if any (an Unsupported node makes a check inconclusive
// unless it can be proved without it).
std::optional<std::string> find_unsupported(const Expr& e);
// Static bounds of an Int expression from literals, len() (>= 0 always; above by a list
// literal's size, a range() with bounded ends, or any sequence `seq_max_len` can bound), + -
// unary minus, min/max, abs, if-else. Each side is known or not on its own: min(abs(b), 9) is
// within [0, 9] whatever b is. The backend uses them to unroll all()/any() over range(a, b)
// exactly when the span has a static bound.
using SeqMaxLen = std::function<std::optional<int64_t>(const Expr& seq)>;
struct IntInterval {
  std::optional<int64_t> lo, hi;
};
IntInterval int_interval(const Expr& e, const SeqMaxLen& seq_max_len);
// Both sides of int_interval, or nullopt when either is unknown.
std::optional<std::pair<int64_t, int64_t>> int_bounds(const Expr& e, const SeqMaxLen& seq_max_len);

}  // namespace vsynth::solvers
