// Testing a spec where the proof could not decide it (issue 17): when a candidate's proof is
// unknown, validate.async's spec check runs the candidate on inputs generated from the
// signature (spec_inputs.h, filtered by the requires), once, in the sandbox (spec_runner.h: one
// python process calls the entry point on every input), and evaluates the ensures on each
// (input, result) here with solvers/evaluate. A return value of the wrong type (a str where the
// signature says int) and an exception on a valid input are violations too, as they are for
// the proof. What only says this run has limits gives no verdict for that input: a call past
// its share of the budget (budget_ms / 40 of CPU time), MemoryError, RecursionError or
// OverflowError on a large input, a result past 128 bits. A violation on an input with a str
// argument is reported in the message but not believed: the requires cannot say which strings are
// valid (the IR does not model them), and the task may exclude it (a roman numeral parser given
// '').
//
// The first violating input, re-checked once more on its own (the requires and the ensures
// evaluated again from the runner's raw report, the echoed arguments matched) before it is
// believed, refutes the candidate: its proof becomes `refuted` with that input as the
// counterexample, so the check fails with the same feedback a Z3 counterexample gives
// (Checker::spec). No violation leaves the proof unknown and says how many inputs were tried.
// Either way the proof's `testing` and `decided` say what happened (stages/facets/proof.h).
//
// Deterministic: the inputs depend only on the contract and the seed (spec_test_seed), the
// verdict only on what the candidate returns for them. Bounded: at most `max_inputs` inputs,
// `budget_ms` of calls (the runner stops there), one sandbox run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "graph/item.h"
#include "solvers/function_contract.h"
#include "stages/validation/candidate.h"
#include "stages/validation/checks.h"
#include "stages/validation/verdict.h"

namespace vsynth::stages::validation {

struct SpecTestSettings {
  bool enabled = true;
  int64_t budget_ms = 2000;  // calls of the candidate, after it loaded
  int64_t max_inputs = 200;
};

struct SpecTestResult {
  bool refuted = false;
  std::size_t inputs = 0;  // inputs the spec was evaluated on: it held or broke
  std::optional<solvers::Counterexample> counterexample;  // refuted
  std::string message;  // one line: the violation, what was tried, or why nothing could be
  uint64_t seed = 0;
  double ms = 0;
};

// Tests `contract` on a Python `program`. Never throws for what the candidate does; a sandbox
// that cannot start is an undecided result saying so (testing is a bonus over the proof, never
// a reason for the check to error).
SpecTestResult test_spec(const Checker& checker, const Program& program,
                         const solvers::FunctionContract& contract, uint64_t seed,
                         const SpecTestSettings& settings, const SandboxLimits& limits);

// The generator's seed for candidate `index` of `task`: the task's `seed` field (an unsigned
// integer; 0 without one) mixed with its id and the index. Never time-based.
uint64_t spec_test_seed(const graph::Task& task, std::size_t index);

// validate.async's spec check of one candidate: when testing is enabled, the proof of this
// candidate is unknown and not tested yet, the `proof` facet carries the contract and the
// language is python, tests the spec and records the outcome in that proof; then
// Checker::spec(item, index), with `decided` set from the proof.
CheckVerdict check_spec(graph::Item& item, const Program& program, std::string_view language,
                        const Checker& checker, const SpecTestSettings& settings,
                        const SandboxLimits& limits);

}  // namespace vsynth::stages::validation
