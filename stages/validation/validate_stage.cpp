#include "stages/validation/validate_stage.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "stages/validation/candidate.h"
#include "stages/validation/error.h"
#include "stages/validation/task_tests.h"

namespace vsynth::stages::validation {

namespace {

// How far a candidate got: checks passed (or benignly skipped) before the first failure.
std::size_t progress(const CandidateVerdict& c) {
  std::size_t n = 0;
  for (const auto& v : c.checks) {
    if (v.status == Status::Fail || v.status == Status::Error) break;
    ++n;
  }
  return n;
}

// The record's final status is one of four (what a user filters on); the facet's `outcome`
// keeps the detail. verified: the spec was proved (and every other check passed);
// tests_passed: the tests passed, the spec was not proved (none, or unknown); unknown: nothing
// established correctness (only syntax / compile ran) or a check could not run; failed: a check
// failed (the detail says which).
std::string pass_status(const CandidateVerdict& c) {
  auto passed = [&](Check k) {
    return std::any_of(c.checks.begin(), c.checks.end(), [&](const CheckVerdict& v) {
      return v.check == k && v.status == Status::Pass;
    });
  };
  if (passed(Check::Spec)) return "verified";
  if (passed(Check::Tests)) return "tests_passed";
  return "unknown";
}

std::string pass_outcome(const CandidateVerdict& c, bool oracle) {
  auto passed = [&](Check k) {
    return std::any_of(c.checks.begin(), c.checks.end(), [&](const CheckVerdict& v) {
      return v.check == k && v.status == Status::Pass;
    });
  };
  std::string tests = oracle ? "oracle_tests_passed" : "tests_passed";
  if (passed(Check::Spec)) return passed(Check::Tests) ? "verified+" + tests : "verified";
  if (passed(Check::Tests)) return tests;
  if (passed(Check::Compile)) return "compiled";
  if (passed(Check::Syntax)) return "syntax_ok";
  return "checked";
}

std::string fail_status(const CheckVerdict& v, bool oracle) {
  switch (v.check) {
    case Check::Syntax:
      return "syntax_error";
    case Check::Compile:
      return "compile_error";
    case Check::Spec:
      return "spec_refuted";
    case Check::Tests:
      return std::string(oracle ? "oracle_" : "") +
             (v.kind == "timeout" ? "tests_timeout" : "tests_failed");
  }
  return "failed";
}

std::string feedback(const CheckVerdict& v) {
  switch (v.check) {
    case Check::Syntax:
      return "syntax error: " + v.message;
    case Check::Compile:
      return "compile error: " + v.message;
    case Check::Spec:
      return v.message;
    case Check::Tests:
      return (v.kind == "timeout" ? "tests timed out: " : "tests failed: ") + v.message;
  }
  return v.message;
}

// Keeps the item's best candidate over all attempts (BestCandidateFacet): replaced when this
// one passed and the kept one did not, or got strictly further through the checks.
void keep_best(graph::Item& item, const VerdictsFacet& verdicts, const CandidateVerdict& c,
               const std::vector<Program>& programs) {
  const std::size_t got = progress(c);
  const BestCandidateFacet* kept = item.find<BestCandidateFacet>();
  if (kept && (kept->passed || (!c.passed && got <= kept->checks_passed))) return;
  auto& best = item.emplace<BestCandidateFacet>();
  best.attempt = item.attempt();
  best.index = c.index;
  best.passed = c.passed;
  best.checks_passed = got;
  best.outcome = verdicts.outcome;
  best.code.clear();
  for (const Program& p : programs) {
    if (p.index != c.index) continue;
    for (std::string_view piece : p.pieces) best.code += piece;
    break;
  }
}

CheckVerdict skipped(Check check, std::string why) {
  CheckVerdict v;
  v.check = check;
  v.status = Status::Skipped;
  v.message = std::move(why);
  return v;
}

}  // namespace

graph::Port validate_item(graph::Item& item, const Checker& checker, const ValidateSettings& s,
                          const ValidatePorts& ports, const std::string& stage_name) {
  const TaskTests task = read_task_tests(item.task(), s.language);
  std::vector<Program> programs = programs_of(item);
  if (programs.empty()) {
    throw ValidationError(fmt::format("task `{}`: no candidate to validate; looked in {}",
                                      item.id(), kWhereCandidatesComeFrom));
  }
  if (s.max_candidates > 0 && programs.size() > static_cast<std::size_t>(s.max_candidates)) {
    programs.resize(static_cast<std::size_t>(s.max_candidates));
  }
  SandboxLimits limits = checker.limits();
  if (s.timeout_ms > 0) limits.wall_ms = s.timeout_ms;
  limits.stop = item.stop_flag();  // a run that stops (SIGTERM) kills the sandboxed command
  const TestSuite& suite = s.oracle ? task.hidden : task.visible;

  auto& facet = item.emplace<VerdictsFacet>();
  facet.language = task.language;
  facet.tests_visibility = s.oracle ? "oracle" : "visible";
  facet.attempt = item.attempt();
  for (const Program& program : programs) {
    CandidateVerdict cv;
    cv.index = program.index;
    std::optional<Check> failed;  // not a pointer into cv.checks: it grows
    for (const Check check : s.checks) {
      if (item.stop_requested()) {
        throw graph::Cancelled(fmt::format("task `{}`: validation stopped", item.id()));
      }
      if (failed) {
        cv.checks.push_back(
            skipped(check, fmt::format("not run: the {} check did not pass", to_string(*failed))));
        continue;
      }
      switch (check) {
        case Check::Syntax:
          cv.checks.push_back(checker.syntax(program, task.language));
          break;
        case Check::Compile:
          cv.checks.push_back(checker.compile(program, task.language, limits));
          break;
        case Check::Tests:
          cv.checks.push_back(checker.tests(program, task, suite, s.oracle, limits));
          break;
        case Check::Spec:
          cv.checks.push_back(
              check_spec(item, program, task.language, checker, s.spec_test, limits));
          break;
      }
      const CheckVerdict& last = cv.checks.back();
      if (last.status == Status::Fail || last.status == Status::Error) failed = last.check;
    }
    cv.passed = !failed.has_value();
    facet.candidates.push_back(std::move(cv));
    if (facet.candidates.back().passed) {
      facet.passed_candidate = facet.candidates.back().index;
      break;
    }
  }

  // A verdict reached while stopping may be the stop's (a killed run), not the candidate's.
  if (item.stop_requested()) {
    throw graph::Cancelled(fmt::format("task `{}`: validation stopped", item.id()));
  }
  if (facet.passed_candidate) {
    item.set_status(pass_status(facet.candidates.back()));
    facet.outcome = pass_outcome(facet.candidates.back(), s.oracle);
    keep_best(item, facet, facet.candidates.back(), programs);
    return ports.pass;
  }
  const CandidateVerdict* best = &facet.candidates.front();
  for (const auto& c : facet.candidates) {
    if (progress(c) > progress(*best)) best = &c;
  }
  const CheckVerdict& why = *best->first_failure();
  if (why.status == Status::Error) {
    item.set_status("unknown");
    facet.outcome = "validation_error";
    keep_best(item, facet, *best, programs);
    item.add_feedback(stage_name, "error",
                      fmt::format("{} check could not run: {}", to_string(why.check), why.message));
    return ports.error;
  }
  item.set_status("failed");
  facet.outcome = fail_status(why, s.oracle);
  keep_best(item, facet, *best, programs);
  item.add_feedback(stage_name, "fail", feedback(why));
  return ports.fail;
}

ValidateStage::ValidateStage(std::shared_ptr<SandboxPool> pool, ValidateSettings settings,
                             ValidatePorts ports, std::string name)
    : pool_(std::move(pool)),
      shared_(std::make_shared<const Shared>(
          Shared{&pool_->checker(), std::move(settings), ports, std::move(name)})) {}

void ValidateStage::submit(graph::ItemPtr item, graph::Completion done) {
  pool_->submit([shared = shared_, item = std::move(item), done = std::move(done)] {
    try {
      const graph::Port port =
          validate_item(*item, *shared->checker, shared->settings, shared->ports, shared->name);
      done(port);
    } catch (const std::exception& e) {
      done.fail(e.what());
    } catch (...) {
      done.fail("validation failed with an unknown exception");
    }
  });
}

graph::Contract validate_contract() {
  graph::Contract c;
  c.kind = "validate.async";
  c.summary =
      "checks candidate programs (syntax, compile, tests, spec) in a bubblewrap sandbox on a "
      "worker pool; failures carry feedback for a retry";
  c.execution = graph::Execution::Async;
  c.concurrency = graph::Concurrency::unlimited();  // the pool bounds the work, not the node
  c.provides_facets = {std::string(VerdictsFacet::kName), std::string(BestCandidateFacet::kName)};
  c.ports = {
      {"pass", "every configured check passed (or had nothing to check)", false},
      {"fail",
       "a check failed: syntax error, compiler error, failing or timed-out test, refuted spec; "
       "carries feedback",
       true},
      {"error", "a check could not run (sandbox or tool failure, malformed tests)", true},
  };
  c.params = {
      graph::P::strings("checks", std::vector<std::string>{"syntax", "compile", "tests"},
                        "checks to run per candidate, in this order: syntax (tree-sitter: no "
                        "ERROR or MISSING node), compile (py_compile / cc -fsyntax-only), tests, "
                        "spec (constrain.z3's `proof` facet, an unknown proof tested first: "
                        "spec_test; skipped without the facet); a check after a failed one is "
                        "skipped",
                        {"syntax", "compile", "tests", "spec"}),
      graph::P::resource("sandbox", "sandbox",
                         "sandbox.bwrap resource to run in (default: a private pool)",
                         /*required=*/false),
      graph::P::integer("timeout_ms", 0, 0, 600000,
                        "wall-clock limit of each sandboxed check, ms (0: the sandbox's wall_ms)"),
      graph::P::choice("tests_visibility", "visible", {"visible", "oracle"},
                       "visible: the task's visible tests (`tests`, or the prompt's `>>>` "
                       "examples); oracle: its hidden tests (`hidden_tests`, `test`, "
                       "`test_list`), and results say so (status oracle_tests_*, verdicts' "
                       "tests_visibility: oracle)"),
      graph::P::string("language", std::string(),
                       "force a language (default: task `language`, `path` extension, python)"),
      graph::P::integer("max_candidates", 0, 0, 1024,
                        "check at most this many candidates per item (0: all)"),
      graph::P::integer("workers", 2, 1, 64, "threads of the private pool (without `sandbox`)"),
      graph::P::boolean("spec_test", true,
                        "spec check: when a candidate's proof is unknown, test the spec on "
                        "inputs generated from the signature (int boundaries, small and large "
                        "values, bool, short lists and strings; kept when the requires hold), "
                        "one sandboxed run of the candidate (python); a violating input refutes "
                        "it with that counterexample (the proof's `decided`: refuted by testing "
                        "(N inputs)), none leaves it unknown (undecided after N inputs)"),
      graph::P::integer("spec_test_ms", 2000, 1, 600000,
                        "spec testing: time for the candidate's calls, ms (the sandbox adds 2 s "
                        "for start-up)"),
      graph::P::integer("spec_test_inputs", 200, 1, 100000,
                        "spec testing: inputs per candidate (deterministic: seeded from the "
                        "task's /decode/seed, its id and the candidate index)"),
  };
  return c;
}

std::unique_ptr<graph::StageBase> make_validate_stage(const graph::StageContext& ctx) {
  ValidateSettings s;
  s.checks.clear();
  for (const auto& name : ctx.params.strings("checks")) {
    const auto check = parse_check(name);
    if (!check) {
      throw ValidationError(fmt::format("unknown check `{}` (syntax, compile, tests, spec)", name));
    }
    if (std::find(s.checks.begin(), s.checks.end(), *check) == s.checks.end()) {
      s.checks.push_back(*check);
    }
  }
  s.timeout_ms = ctx.params.integer("timeout_ms");
  s.oracle = ctx.params.string("tests_visibility") == "oracle";
  s.language = ctx.params.string("language");
  s.max_candidates = ctx.params.integer("max_candidates");
  s.spec_test.enabled = ctx.params.boolean("spec_test");
  s.spec_test.budget_ms = ctx.params.integer("spec_test_ms");
  s.spec_test.max_inputs = ctx.params.integer("spec_test_inputs");
  std::shared_ptr<SandboxPool> pool;
  if (const std::string& name = ctx.params.string("sandbox"); !name.empty()) {
    pool = ctx.resources.share<SandboxPool>(name);
  } else {
    SandboxPoolConfig config;
    config.workers = static_cast<int>(ctx.params.integer("workers"));
    pool = std::make_shared<SandboxPool>(std::move(config));
  }
  ValidatePorts ports{ctx.port("pass"), ctx.port("fail"), ctx.port("error")};
  return std::make_unique<ValidateStage>(std::move(pool), std::move(s), ports, ctx.name);
}

}  // namespace vsynth::stages::validation
