// Verdicts: what each check said about each candidate, and the `verdicts` facet validate.async
// adds to an item.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/item.h"
#include "stages/validation/sandbox.h"

namespace vsynth::stages::validation {

enum class Check { Syntax, Compile, Tests, Spec };
const char* to_string(Check c);
// "syntax" | "compile" | "tests" | "spec"; nullopt otherwise.
std::optional<Check> parse_check(std::string_view name);

enum class Status {
  Pass,
  Fail,     // the candidate's fault: a syntax error, a compiler error, a failing test, a timeout
  Error,    // the infrastructure's: the sandbox could not start, a tool is missing, a bad task
  Skipped,  // not run: an earlier check failed, nothing to check, unsupported language
};
const char* to_string(Status s);

// One check of one candidate.
struct CheckVerdict {
  Check check = Check::Syntax;
  Status status = Status::Skipped;
  // Failures: what the next attempt needs, trimmed (the first syntax error with its position,
  // the compiler's first error, the failing assertion with values). Skips: why.
  std::string message;
  std::string kind;     // the runner's failure kind (assertion, exception, timeout...) or ""
  int tests = -1;       // tests run (tests check), -1 when unknown
  bool oracle = false;  // ran hidden tests (oracle mode or scoring)
  double ms = 0;        // wall time of the check
  // Spec check: how the verdict was reached (facets::CandidateProof::decided(): proved,
  // refuted by proof, refuted by testing (N inputs), undecided after N inputs...); "" for others.
  std::string decided;
  // For sandboxed checks: how the process ended.
  std::optional<SandboxResult> run;

  nlohmann::json to_json() const;
};

struct CandidateVerdict {
  std::size_t index = 0;  // position in the item's candidates
  bool passed = false;    // every configured check passed or was skipped for a benign reason
  std::vector<CheckVerdict> checks;

  // The furthest check reached: the first that did not pass (or the last one).
  const CheckVerdict* first_failure() const;
  nlohmann::json to_json() const;
};

// Facet `verdicts`.
class VerdictsFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "verdicts";

  std::string language;
  std::string tests_visibility;  // visible | oracle
  std::vector<CandidateVerdict> candidates;
  std::optional<std::size_t> passed_candidate;  // the first candidate that passed
  int attempt = 1;
  // The detail behind the item's status: tests_passed | oracle_tests_passed | verified |
  // verified+tests_passed | compiled | syntax_ok | checked (pass), syntax_error | compile_error
  // | tests_failed | tests_timeout | spec_refuted (oracle_ before tests_* in oracle runs)
  // (fail), validation_error (error).
  std::string outcome;

  // {language, tests_visibility, attempt, outcome, passed, passed_candidate, candidates: [{index,
  // passed, checks: [{check, status, message, kind, tests, oracle, ms, exit, signal,
  // timed_out, killed, cpu_ms, stdout_truncated, stderr_truncated, stdout, stderr (the end of
  // each stream, failed checks only), decided (spec)}]}]}
  nlohmann::json to_json() const override;
};

// Facet `best_candidate`: over every attempt of the item, the candidate that got furthest
// through the checks (the passing one when one passed; on a tie the earlier attempt, sampled
// cooler). When the loop runs out of attempts this, not the last attempt's candidate, is the
// answer to use. {attempt, index, passed, checks_passed, outcome, code}.
class BestCandidateFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "best_candidate";

  int attempt = 0;
  std::size_t index = 0;          // the candidate's position in its attempt
  bool passed = false;            // it passed every check
  std::size_t checks_passed = 0;  // checks passed (or benignly skipped) before the first failure
  std::string outcome;            // that attempt's VerdictsFacet::outcome
  std::string code;               // the whole program

  nlohmann::json to_json() const override;
};

// Keeps at most `max_lines` lines and `max_bytes` bytes of `text` (cut at a UTF-8 boundary),
// saying how much was cut.
std::string trim_message(std::string_view text, std::size_t max_lines = 20,
                         std::size_t max_bytes = 1500);

// Keeps the last `max_lines` lines and `max_bytes` bytes of `text` (from a UTF-8 boundary),
// saying how much was cut before them: the end of a program's output, where tracebacks and
// compiler errors finish.
std::string tail_output(std::string_view text, std::size_t max_lines = 15,
                        std::size_t max_bytes = 1200);

}  // namespace vsynth::stages::validation
