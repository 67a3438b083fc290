// ProofFacet (`proof`): what constrain.z3 proved about each candidate of an item.
//
// validate.async's spec check reads it through its JSON: {"verdict", "message",
// "counterexample"} at the top level (the item's summary) and, per candidate, the same three
// under "candidates"[i] (matched by "index"), which it prefers when present.
//   verdict  verified | refuted | unknown, and at the top level also no_spec (the task has no
//            spec: nothing was checked) or mixed (candidates disagree: read them one by one)
//   counterexample  refuted only: one line for people and prompts, e.g.
//            "clamp(x=4, lo=0, hi=3) returned 4; ensures lo <= result <= hi (at line 4)"
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "graph/item.h"
#include "stages/constraint/prove.h"

namespace vsynth::stages::constraint {

class ProofFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "proof";

  bool has_spec = false;
  std::string note;  // without a spec: why nothing was checked
  std::vector<CandidateProof> candidates;
  int attempt = 1;

  // The item's verdict: no_spec, the candidates' common verdict, or mixed.
  std::string verdict() const;
  nlohmann::json to_json() const override;
};

// JSON of one candidate's proof: {index, verdict, message, [counterexample, inputs, returned,
// failed, line], [reason], caveats, used_requires, obligations, returns, translate_us,
// solver_us}.
nlohmann::json to_json(const CandidateProof& p, std::size_t index);

}  // namespace vsynth::stages::constraint
