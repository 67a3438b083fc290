#include "stages/constraint/prove.h"

#include <algorithm>
#include <chrono>

#include "solvers/error.h"
#include "stages/constraint/translate_c.h"
#include "stages/constraint/translate_python.h"

namespace vsynth::stages::constraint {

using solvers::Verdict;

namespace {

double us_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

void add_unique(std::vector<std::string>& xs, const std::string& x) {
  if (std::find(xs.begin(), xs.end(), x) == xs.end()) xs.push_back(x);
}

}  // namespace

Translation translate(std::string_view code, std::string_view language,
                      const solvers::Signature& sig, const TranslateOptions& options) {
  if (language == "c") return translate_c(code, sig, options);
  return translate_python(code, sig, options);
}

solvers::CheckOutcome check_obligation(solvers::ContractChecker& checker, const Obligation& o) {
  if (o.kind == ObligationKind::Return) return checker.check_return(o.condition, o.expr, o.where);
  return checker.check_assert(o.condition, o.expr, o.where);
}

CandidateProof prove(std::string_view code, const TaskSpec& spec, solvers::ContractChecker& checker,
                     const TranslateOptions& options) {
  CandidateProof p;
  const auto t0 = std::chrono::steady_clock::now();
  Translation t;
  try {
    t = translate(code, spec.language, spec.contract.signature, options);
  } catch (const std::exception& e) {
    p.message = std::string("translation failed: ") + e.what();
    return p;
  }
  p.translate_us = us_since(t0);
  if (!t.function_found) {
    p.message = t.unknown.value_or("no function to check");
    return p;
  }
  p.caveats = t.caveats;

  std::optional<std::string> undecided;  // the first reason the proof is incomplete
  try {
    // Once per session: requires that nothing satisfies make every check pass vacuously.
    const solvers::CheckOutcome vac = checker.check_paths({});
    p.solver_us += vac.solver_us;
    for (const auto& c : vac.caveats) add_unique(p.caveats, c);

    for (const Obligation& o : t.obligations) {
      const solvers::CheckOutcome r = check_obligation(checker, o);
      ++p.obligations;
      if (o.kind == ObligationKind::Return) ++p.returns;
      p.solver_us += r.solver_us;
      for (const auto& c : r.caveats) add_unique(p.caveats, c);
      for (const auto& u : r.used_requires) add_unique(p.used_requires, u);
      if (o.kind == ObligationKind::Bound) {
        if (r.verdict != Verdict::Verified && !undecided)
          undecided =
              o.where + (r.verdict == Verdict::Refuted ? " does not hold for every input"
                                                       : " could not be proved (" + r.reason + ")");
        continue;
      }
      if (r.verdict == Verdict::Refuted) {
        p.verdict = Verdict::Refuted;
        p.counterexample = r.counterexample;
        p.failed_line = o.line;
        const std::string& failed = r.counterexample->failed;
        switch (o.kind) {
          case ObligationKind::Return:
            p.message = "the return at " + o.where + " breaks the spec" +
                        (failed.empty() ? "" : ": `" + failed + "`");
            break;
          case ObligationKind::Assert:
            p.message = "the assertion at " + o.where + " can fail";
            break;
          default:
            p.message = "the code at " + o.where + " can fail on a valid input";
            break;
        }
        return p;
      }
      if (r.verdict == Verdict::Unknown && !undecided)
        undecided = o.where + ": " + (r.reason.empty() ? "undecided" : r.reason);
    }
  } catch (const solvers::SolverError& e) {
    p.verdict = Verdict::Unknown;
    p.message = std::string("solver: ") + e.what();
    return p;
  }
  if (t.unknown) {
    p.message = *t.unknown;
  } else if (undecided) {
    p.message = *undecided;
  } else {
    p.verdict = Verdict::Verified;
    p.message = "every path of `" + spec.contract.signature.function + "` meets the spec (" +
                std::to_string(p.returns) + " return paths, " +
                std::to_string(p.obligations - p.returns) + " other obligations)";
  }
  return p;
}

}  // namespace vsynth::stages::constraint
