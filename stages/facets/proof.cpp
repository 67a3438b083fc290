#include "stages/facets/proof.h"

#include <cmath>
#include <cstdint>

#include "base/stats.h"

namespace vsynth::stages::facets {

nlohmann::json to_json(const CandidateProof& p, std::size_t index) {
  nlohmann::json j;
  j["index"] = index;
  j["verdict"] = std::string(solvers::verdict_name(p.verdict));
  j["decided"] = p.decided();
  j["message"] = p.message;
  if (p.counterexample) {
    const solvers::Counterexample& cx = *p.counterexample;
    j["counterexample"] = cx.text;
    nlohmann::json inputs = nlohmann::json::object();
    for (const auto& [name, value] : cx.inputs.values) inputs[name] = value.python();
    j["inputs"] = inputs;
    if (cx.returned) j["returned"] = cx.returned->python();
    if (!cx.failed.empty()) j["failed"] = cx.failed;
    if (!cx.error.empty()) j["error"] = cx.error;
    j["line"] = p.failed_line;
  }
  j["caveats"] = p.caveats;
  if (!p.used_requires.empty()) j["used_requires"] = p.used_requires;
  j["obligations"] = p.obligations;
  j["returns"] = p.returns;
  j["translate_us"] = base::round1(p.translate_us);
  j["solver_us"] = base::round1(p.solver_us);
  if (p.testing) {
    const SpecTesting& t = *p.testing;
    j["testing"] = {{"inputs", t.inputs},
                    {"refuted", t.refuted},
                    {"message", t.message},
                    {"seed", t.seed},
                    {"ms", base::round1(t.ms)}};
    if (!t.proof_message.empty()) j["testing"]["proof_message"] = t.proof_message;
  }
  return j;
}

std::string CandidateProof::decided() const {
  const std::string tried =
      testing ? std::to_string(testing->inputs) + (testing->inputs == 1 ? " input" : " inputs")
              : std::string();
  switch (verdict) {
    case solvers::Verdict::Verified:
      return "proved";
    case solvers::Verdict::Refuted:
      return testing && testing->refuted ? "refuted by testing (" + tried + ")"
                                         : "refuted by proof";
    case solvers::Verdict::Unknown:
      break;
  }
  return testing ? "undecided after " + tried : "undecided (not tested)";
}

std::string ProofFacet::verdict() const {
  if (!spec_error.empty()) return "spec_error";
  if (!has_spec) return "no_spec";
  if (candidates.empty()) return "unknown";
  const solvers::Verdict v = candidates.front().verdict;
  for (const CandidateProof& c : candidates) {
    if (c.verdict != v) return "mixed";
  }
  return std::string(solvers::verdict_name(v));
}

ProofFacet::Summary ProofFacet::summary(std::size_t index) const {
  Summary s;
  if (index < candidates.size()) {
    const CandidateProof& p = candidates[index];
    s.verdict = std::string(solvers::verdict_name(p.verdict));
    s.message = p.message;
    if (p.counterexample) s.counterexample = p.counterexample->text;
    s.decided = p.decided();
    return s;
  }
  s.verdict = verdict();
  if (!has_spec) {
    s.message = spec_error.empty() ? note : spec_error;
  } else if (!candidates.empty() && s.verdict != "mixed") {
    const CandidateProof& first = candidates.front();
    s.message = first.message;
    if (first.counterexample) s.counterexample = first.counterexample->text;
    s.decided = first.decided();
  } else if (!candidates.empty()) {
    s.message = "the candidates' verdicts differ (see candidates)";
  }
  return s;
}

nlohmann::json ProofFacet::to_json() const {
  const Summary item = summary(SIZE_MAX);
  nlohmann::json j;
  j["verdict"] = item.verdict;
  j["attempt"] = attempt;
  if (!has_spec) {
    j["message"] = item.message;
    return j;
  }
  double translate_us = 0, solver_us = 0;
  j["candidates"] = nlohmann::json::array();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    j["candidates"].push_back(facets::to_json(candidates[i], i));
    translate_us += candidates[i].translate_us;
    solver_us += candidates[i].solver_us;
  }
  if (!candidates.empty()) j["message"] = item.message;
  if (!item.decided.empty()) j["decided"] = item.decided;
  if (item.counterexample) j["counterexample"] = *item.counterexample;
  j["translate_us"] = base::round1(translate_us);
  j["solver_us"] = base::round1(solver_us);
  return j;
}

}  // namespace vsynth::stages::facets
