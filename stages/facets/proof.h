// The `proof` facet: what constrain.z3 proved about each candidate of an item (the i-th proof
// is the i-th candidate's). validate.async's spec check reads it: a candidate passes when its
// proof is verified and fails with the counterexample when it is refuted.
//
// In the results file: {"verdict", "message", "counterexample"} at the top level (the item's
// summary) and, per candidate, the same three under "candidates"[i] (matched by "index").
//   verdict  verified | refuted | unknown, and at the top level also no_spec (the task has no
//            spec: nothing was checked), spec_error (the task's spec cannot be read or uses
//            what the spec language cannot express: the message names it; nothing was
//            checked, the other checks still run) or mixed (candidates disagree: read them
//            one by one)
//   counterexample  refuted only: one line for people and prompts, e.g.
//            "clamp(x=4, lo=0, hi=3) returned 4; ensures lo <= result <= hi (at line 4)"
//   decided  how the verdict was reached: proved | refuted by proof | refuted by testing (N
//            inputs) | undecided after N inputs | undecided (not tested). validate.async tests
//            the spec of a candidate whose proof is unknown (stages/validation/spec_test.h):
//            a violating input makes the verdict refuted, with that input as the
//            counterexample, so `verified` keeps meaning proved.
//   testing  when the spec was tested: {inputs, refuted, message, seed, ms[, proof_message]}
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/item.h"
#include "solvers/function_contract.h"

namespace vsynth::stages::facets {

// What testing the spec on generated inputs found (validate.async, when the proof is unknown).
struct SpecTesting {
  std::size_t inputs = 0;     // inputs the spec was evaluated on (each within the requires)
  bool refuted = false;       // one broke the spec: CandidateProof::counterexample holds it
  std::string message;        // one line: what was tried, or why testing could not decide
  std::string proof_message;  // refuted: the proof's own message (why Z3 was undecided)
  uint64_t seed = 0;          // of the input generator
  double ms = 0;
};

// The proof of one candidate (constraint/prove.h makes it).
struct CandidateProof {
  solvers::Verdict verdict = solvers::Verdict::Unknown;
  std::string message;  // one line: what was proved, what breaks, or why undecided
  std::optional<solvers::Counterexample> counterexample;
  uint32_t failed_line = 0;  // refuted: the line of the obligation that failed
  std::vector<std::string> caveats;
  std::vector<std::string> used_requires;
  std::size_t obligations = 0;  // checked
  std::size_t returns = 0;      // return paths among them
  double translate_us = 0, solver_us = 0;
  std::optional<SpecTesting> testing;  // set by validate.async when it tested the spec

  // proved | refuted by proof | refuted by testing (N inputs) | undecided after N inputs |
  // undecided (not tested)
  std::string decided() const;
};

class ProofFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "proof";

  bool has_spec = false;
  // The contract proved against (with a spec): validate.async tests it when a proof is
  // unknown, without parsing the task a second time.
  std::shared_ptr<const solvers::FunctionContract> contract;
  std::string note;        // without a spec: why nothing was checked
  std::string spec_error;  // the spec could not be used (verdict spec_error): why
  std::vector<CandidateProof> candidates;
  int attempt = 1;

  // The item's verdict: no_spec, the candidates' common verdict, or mixed.
  std::string verdict() const;

  // What was proved about candidate `index`, or about the item when there is no such
  // candidate (the summary at the top of to_json).
  struct Summary {
    std::string verdict;  // verified | refuted | unknown (+ no_spec | mixed for the item)
    std::string message;
    std::optional<std::string> counterexample;  // refuted: one line for people and prompts
    std::string decided;                        // CandidateProof::decided(); "" for mixed
  };
  Summary summary(std::size_t index) const;

  nlohmann::json to_json() const override;
};

// JSON of one candidate's proof: {index, verdict, decided, message, [counterexample, inputs,
// returned, failed, error, line] (refuted), caveats, [used_requires], obligations, returns,
// translate_us, solver_us, [testing]}.
nlohmann::json to_json(const CandidateProof& p, std::size_t index);

}  // namespace vsynth::stages::facets
