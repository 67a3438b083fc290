// An incremental Z3 session over the constraint IR.
//
// A Solver owns one z3::context and one solver. Facts are IR expressions with Python
// semantics: add(e) means "e evaluates to True without raising", add_not(e) means "e evaluates to
// False or raises". push()/pop() scope facts, variable declarations and tracked assertions.
// check(timeout_ms) answers Sat/Unsat/Unknown; after Sat, model() and eval() read values back;
// after Unsat, unsat_core() names the tracked assertions used.
//
// Soundness rules the session keeps (see solvers/ir.h for the semantics):
//  - A fact containing an Unsupported node is over-approximated by fresh unknowns; while such a
//    fact is in scope a Sat answer is reported as Unknown (the model may be spurious), Unsat
//    stays Unsat.
//  - Sequence variables have 0 <= len <= max_seq_len; results about them hold up to that bound.
// Costs (this machine, Z3 4.8.12): ~10-30 us per push/add/check/pop on small integer specs;
// see docs/performance.md. Not thread-safe: one Solver per thread (sessions are independent).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "solvers/ir.h"

namespace vsynth::solvers {

// A value read from a model, printable as a Python literal.
struct Value {
  Sort sort = Sort::Int;
  bool boolean = false;            // Bool
  std::optional<int64_t> integer;  // Int, when it fits in 64 bits
  std::string number;              // Int/Real as Python would print it: "5", "2.5", "0.1"
  std::vector<Value> elements;     // IntSeq (at most 64 shown; `truncated` if more)
  bool truncated = false;
  bool exact = true;  // false when a Real is an irrational algebraic number shown rounded

  std::string python() const;  // True, -3, 2.5, [1, 2, 3]
};

struct Model {
  std::vector<std::pair<std::string, Value>> values;  // declared variables, declaration order
  const Value* find(std::string_view name) const;
};

// Name -> expression substitutions for add/add_not/eval, evaluated first and unconditionally
// (call-by-value, as Python computes a return value before the ensures sees it as `result`).
using Bindings = std::vector<std::pair<std::string, Expr>>;

enum class Status { Sat, Unsat, Unknown };
std::string_view status_name(Status s);

struct CheckResult {
  Status status = Status::Unknown;
  std::string reason;  // Unknown: "timeout after 5 ms", "z3: (incomplete (theory arithmetic))",
                       // "model may be spurious: ..." (an unsupported construct is in scope)
  double elapsed_us = 0;
};

// The outcome of evaluating an expression in the last model.
struct Evaluation {
  bool raised = false;
  std::string error;        // when raised: Python's exception, e.g. "ZeroDivisionError: ..."
  Value value;              // when not raised
  bool abstracted = false;  // the expression has unsupported parts: the value is a guess
};

struct SolverOptions {
  unsigned max_seq_len = 8;  // upper bound on the length of every list[int] variable
  // Z3 logic for the solver; "" is Z3's default solver. A fixed logic ("QF_AUFLIRA", "QF_LIA")
  // measured no faster per incremental check here (tests/bench/bench_solvers), so the default
  // stays the one that accepts everything the translation emits (quantifiers, nonlinear terms).
  std::string logic;
};

class Solver {
 public:
  explicit Solver(SolverOptions options = {});
  ~Solver();
  Solver(Solver&&) noexcept;
  Solver& operator=(Solver&&) noexcept;
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  // Declares a variable at the current scope (variables used in facts are declared on first
  // use too; declaring first fixes the order model() lists them in). Redeclaring with the same
  // sort is a no-op; with another sort, SolverError. Opaque cannot be declared.
  void declare(const std::string& name, Sort sort);

  void add(const Expr& fact, const Bindings& bindings = {});
  void add_not(const Expr& fact, const Bindings& bindings = {});
  // Like add(), named for unsat_core(): assumed in every check while in scope.
  void add_tracked(const std::string& label, const Expr& fact);

  void push();
  void pop(unsigned n = 1);  // SolverError when n exceeds depth()
  unsigned depth() const;

  // timeout_ms == 0: no limit.
  CheckResult check(unsigned timeout_ms = 0);

  // After a Sat (or a Sat reported as Unknown because of abstractions): declared variables.
  Model model() const;
  Evaluation eval(const Expr& e, const Bindings& bindings = {}) const;

  // After Unsat: labels of tracked assertions that suffice for unsat. With `minimize`, each is
  // dropped in turn and kept only if the rest stop being unsat (a few extra checks).
  std::vector<std::string> unsat_core(bool minimize = false);

  // Why facts in scope are over-approximated (empty when everything is modelled exactly).
  std::vector<std::string> abstractions() const;
  const SolverOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vsynth::solvers
