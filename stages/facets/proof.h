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
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/item.h"
#include "solvers/contract.h"

namespace vsynth::stages::facets {

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
};

class ProofFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "proof";

  bool has_spec = false;
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
  };
  Summary summary(std::size_t index) const;

  nlohmann::json to_json() const override;
};

// JSON of one candidate's proof: {index, verdict, message, [counterexample, inputs, returned,
// failed, error, line] (refuted), caveats, [used_requires], obligations, returns,
// translate_us, solver_us}.
nlohmann::json to_json(const CandidateProof& p, std::size_t index);

}  // namespace vsynth::stages::facets
