// The full proof of one candidate: translate its function, then check every obligation with a
// ContractChecker (push / check / pop per obligation on one Z3 session).
//
// Verdicts: refuted as soon as a return, assert or definedness obligation has a counterexample
// (a real input under the requires on which the code breaks the spec, raises, or overflows in
// C), whatever else is unknown; verified only when the whole function was translated and every
// obligation, loop bounds included, was proved; unknown otherwise, with the first reason (the
// construct outside the subset and its line, an unroll bound that may be exceeded, a solver
// timeout, a model that relies on an unmodelled value).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solvers/function_contract.h"
#include "stages/constraint/task_spec.h"
#include "stages/constraint/translation.h"
#include "stages/facets/proof.h"

namespace vsynth::stages::constraint {

using facets::CandidateProof;

// Translates `code` (a whole program in spec.language) and checks it on `checker`, whose
// contract must be spec.contract. Never throws for what the code does.
CandidateProof prove(std::string_view code, const TaskSpec& spec, solvers::ContractChecker& checker,
                     const TranslateOptions& options = {});

// The translator for a language ("python" or "c").
Translation translate(std::string_view code, std::string_view language,
                      const solvers::Signature& sig, const TranslateOptions& options);

// Checks one obligation on `checker`.
solvers::CheckOutcome check_obligation(solvers::ContractChecker& checker, const Obligation& o);

}  // namespace vsynth::stages::constraint
