// Helpers for the constraint tests: prove a snippet against a spec in one call.
#pragma once

#include <string>
#include <vector>

#include "solvers/contract.h"
#include "stages/constraint/prove.h"
#include "stages/constraint/task_spec.h"

namespace vsynth::constraint_test {

namespace cs = vsynth::stages::constraint;

inline cs::TaskSpec python_spec(const std::string& signature, std::vector<std::string> requires_,
                                std::vector<std::string> ensures) {
  return {"python", vsynth::solvers::parse_contract(signature, requires_, ensures), signature};
}

inline cs::CandidateProof prove(const std::string& code, const cs::TaskSpec& spec,
                                cs::TranslateOptions opt = {}) {
  vsynth::solvers::ContractChecker checker(spec.contract);
  return cs::prove(code, spec, checker, opt);
}

}  // namespace vsynth::constraint_test
