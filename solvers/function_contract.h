// Checking a function against its requires/ensures contract, path by path.
//
// The caller (stages/constraint) turns code into return paths: for each `return e` reached
// under path condition P, the pair (P, e); and for each `assert c` reached under P, (P, c). With
// R the requires and E(result) the ensures, a return path is refuted by inputs where
// R and P hold and E[result := e] does not (it is False or raises, or e itself raises); it is
// verified when no such input exists. Asserts likewise: R and P and not c.
//
// A ContractChecker keeps one incremental Solver with the parameters declared and the requires
// asserted once (each conjunct tracked for unsat cores, unless cores are off); every check is a
// push / add / check / pop on top, which is what the forward check during decoding pays per
// statement boundary.
//
// Usage:
//   auto c = parse_contract("def clamp(x: int, lo: int, hi: int) -> int:",
//                           {"lo <= hi"}, {"lo <= result <= hi"});
//   ContractChecker checker(c);
//   using namespace vsynth::solvers::ir;
//   auto x = var("x", Sort::Int), lo = var("lo", Sort::Int), hi = var("hi", Sort::Int);
//   CheckOutcome o = checker.check_return(gt(x, hi), x);   // buggy `if x > hi: return x`
//   // o.verdict == Verdict::Refuted, and o.counterexample->text reads like
//   //   "clamp(x=1, lo=0, hi=0) returned 1; ensures result <= hi" (values from Z3's model)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solvers/ir.h"
#include "solvers/signature.h"
#include "solvers/z3_backend.h"

namespace vsynth::solvers {

struct FunctionContract {
  Signature signature;
  std::vector<Expr> requires_clauses;  // Bool; top-level conjunctions are split for cores
  std::vector<Expr> ensures_clauses;   // Bool; may mention `result`
};

// Parses a Python signature line and the requires/ensures texts (SpecError on bad input).
FunctionContract parse_contract(std::string_view signature_line,
                                const std::vector<std::string>& requires_texts,
                                const std::vector<std::string>& ensures_texts);

struct ReturnPath {
  Expr condition;     // path condition (Bool); null means True
  Expr value;         // the returned expression; null only when the function returns None
  std::string where;  // optional label for messages, e.g. "line 7"
};

enum class Verdict { Verified, Refuted, Unknown };
std::string_view verdict_name(Verdict v);

struct Counterexample {
  size_t path = 0;                // index of the refuted path (0 for single checks)
  Model inputs;                   // parameter values, in signature order
  std::optional<Value> returned;  // the value returned (absent if it raised, and for asserts)
  std::string failed;             // the ensures conjunct or assert that failed, as Python
  std::string error;              // Python's exception when something raised
  // One line for people and prompts, e.g.
  //   clamp(x=5, lo=0, hi=3) returned 5; ensures result <= hi
  //   div(a=1, b=0) raised ZeroDivisionError: integer division or modulo by zero in `a // b`
  //   f(x=-1): assert x >= 0 failed
  std::string text;
};

struct CheckOutcome {
  Verdict verdict = Verdict::Unknown;
  std::string reason;  // Unknown: timeout, incompleteness, unsupported construct
  std::optional<Counterexample> counterexample;
  // Verified: the requires conjuncts the proof uses (a minimal set with minimize_cores).
  std::vector<std::string> used_requires;
  // What a verdict does not cover: "float is modelled as exact real arithmetic", "lists are
  // modelled up to length 8", "requires are unsatisfiable: every path verifies vacuously".
  std::vector<std::string> caveats;
  double solver_us = 0;  // time spent in Z3 checks
};

struct ContractOptions {
  unsigned timeout_ms = 100;  // per check; 0 = none
  unsigned max_seq_len = 8;
  // Fill used_requires on Verified. Tracking the requires makes every check pass them as
  // assumptions (~2.5x the cost of a plain check, see docs/performance.md): the forward check
  // during decoding should turn this off; the final proof keeps it.
  bool cores = true;
  bool minimize_cores = true;  // a few extra checks per Verified outcome
  std::string logic;           // Z3 logic, "" = default solver (see SolverOptions)
};

class ContractChecker {
 public:
  explicit ContractChecker(FunctionContract contract, ContractOptions options = {});

  // One return path. `value` must have the signature's result sort (int promotes to float).
  CheckOutcome check_return(const Expr& path_condition, const Expr& value,
                            std::string_view where = {});
  // One assert reached under the path condition.
  CheckOutcome check_assert(const Expr& path_condition, const Expr& assertion,
                            std::string_view where = {});
  // Every path: the first refuted one wins; Verified only if all are; Unknown otherwise (with
  // the first reason). Also checks once that the requires are satisfiable (caveat if not).
  CheckOutcome check_paths(const std::vector<ReturnPath>& paths);

  const FunctionContract& contract() const { return contract_; }
  // The session: parameters declared, requires asserted at depth 0.
  Solver& solver() { return solver_; }

 private:
  CheckOutcome run(const Expr& path_condition, const Expr& goal, const Bindings& bindings,
                   const Expr& value, bool is_assert, std::string_view where);
  Counterexample explain(const Expr& value, const Expr& assertion, bool is_assert,
                         std::string_view where);
  std::vector<std::string> caveats(const std::vector<Expr>& extra) const;
  static void scan_sorts(const Expr& e, bool& real, bool& seq);

  FunctionContract contract_;
  ContractOptions options_;
  Solver solver_;
  Expr ensures_;  // conjunction of all ensures clauses
  std::vector<Expr> ensures_conjuncts_;
  std::optional<bool> requires_sat_;
  bool contract_real_ = false, contract_seq_ = false;  // sorts the caveats depend on
};

// One-shot: a ContractChecker over `paths`.
CheckOutcome check_function_contract(const FunctionContract& contract,
                                     const std::vector<ReturnPath>& paths,
                                     const ContractOptions& options = {});

}  // namespace vsynth::solvers
