// validate.async: checks each candidate program of an item (syntax, compile, tests, spec) in
// the sandbox, asynchronously, and sends the item on with a verdict. Its parameters are
// documented in validate_contract() (`vsynth stages validate.async`).
//
//   resources:
//     box: { use: sandbox.bwrap, with: { workers: 2 } }
//   stages:
//     validate: { use: validate.async,
//                 with: { sandbox: box, checks: [syntax, compile, tests], timeout_ms: 4000 } }
//   edges:
//     - generate -> validate
//     - { from: validate.fail, to: generate, back_edge: true, max_attempts: 4 }
//     - validate.pass -> out
//     - validate.error -> out
//
// Candidates: see candidate.h. The first candidate that passes every check wins; when none
// does, the feedback is that of the candidate that got furthest.
//
// Ports: pass (every check passed or was skipped), fail (failure port: a syntax error, a
// compiler error, a failing or timed-out test, a refuted spec; the feedback attached is the
// trimmed message a retry needs), error (failure port: the furthest candidate's check could
// not run: the sandbox or a tool failed). A malformed task or an item without a candidate is
// no verdict at all: the item fails (status error) with a message naming the task.
// Provides: `verdicts` (VerdictsFacet) and `best_candidate`. The item's status is one of four:
// verified (the spec was proved, every other check passed), tests_passed (tests passed, spec
// not proved or absent), unknown (only syntax / compile could be checked, or a check could not
// run), failed (a check failed). The facet's `outcome` keeps the detail (tests_failed,
// spec_refuted, oracle_tests_passed...); oracle runs also say so in `tests_visibility`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/stage.h"
#include "stages/validation/sandbox_pool.h"
#include "stages/validation/spec_test.h"
#include "stages/validation/verdict.h"

namespace vsynth::stages::validation {

struct ValidateSettings {
  std::vector<Check> checks = {Check::Syntax, Check::Compile, Check::Tests};
  int64_t timeout_ms = 0;
  bool oracle = false;
  std::string language;
  int64_t max_candidates = 0;
  SpecTestSettings spec_test;  // the spec check's testing of unknown proofs (spec_test.h)
};

struct ValidatePorts {
  graph::Port pass = 0, fail = 1, error = 2;
};

// The work for one item, on the calling thread: adds the `verdicts` facet, sets the status
// and feedback, and returns the port. Never throws for what a candidate does; throws
// ValidationError for a malformed task.
graph::Port validate_item(graph::Item& item, const Checker& checker, const ValidateSettings& s,
                          const ValidatePorts& ports, const std::string& stage_name);

class ValidateStage : public graph::AsyncStage {
 public:
  ValidateStage(std::shared_ptr<SandboxPool> pool, ValidateSettings settings, ValidatePorts ports,
                std::string name);
  void submit(graph::ItemPtr item, graph::Completion done) override;

 private:
  // What a job holds. Not the pool: a job that dropped the last reference to its pool would
  // destroy it on one of the pool's own threads. The checker lives as long as the pool, whose
  // destructor finishes running jobs and drops queued ones.
  struct Shared {
    const Checker* checker;
    ValidateSettings settings;
    ValidatePorts ports;
    std::string name;
  };
  std::shared_ptr<SandboxPool> pool_;
  std::shared_ptr<const Shared> shared_;
};

graph::Contract validate_contract();
std::unique_ptr<graph::StageBase> make_validate_stage(const graph::StageContext& ctx);

}  // namespace vsynth::stages::validation
