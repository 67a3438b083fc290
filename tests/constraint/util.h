// Helpers for the constraint tests: prove a snippet against a spec in one call, read a
// counterexample's inputs.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "solvers/function_contract.h"
#include "stages/constraint/prove.h"
#include "stages/constraint/task_spec.h"

namespace vsynth::constraint_test {

namespace cs = vsynth::stages::constraint;

inline cs::TaskSpec python_spec(const std::string& signature, std::vector<std::string> requires_,
                                std::vector<std::string> ensures) {
  return {"python", vsynth::solvers::parse_contract(signature, requires_, ensures), signature};
}

// Z3 time limit for tests that expect a verdict: far above what any check here needs (< 50 ms
// on a quiet machine), so a loaded CI machine (sanitizers, parallel tests) never turns a
// verdict into "unknown: timeout". Tests of the timeout itself set their own.
inline vsynth::solvers::ContractOptions generous_limits() {
  vsynth::solvers::ContractOptions o;
  o.timeout_ms = 20000;
  return o;
}

inline cs::CandidateProof prove(const std::string& code, const cs::TaskSpec& spec,
                                cs::TranslateOptions opt = {}) {
  vsynth::solvers::ContractChecker checker(spec.contract, generous_limits());
  return cs::prove(code, spec, checker, opt);
}

// The integer the counterexample of `p` gives parameter `name` (fails the test without one).
inline int64_t input(const cs::CandidateProof& p, const std::string& name) {
  const auto* v = p.counterexample->inputs.find(name);
  REQUIRE(v != nullptr);
  REQUIRE(v->integer.has_value());
  return *v->integer;
}

}  // namespace vsynth::constraint_test
