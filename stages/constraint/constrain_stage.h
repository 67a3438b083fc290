// constrain.z3: the full proof of every candidate after generation.
//
//   stages:
//     check: { use: constrain.z3, with: { timeout_ms: 200, unroll_bound: 8 } }
//   edges:
//     - generate -> check
//     - check -> validate          # validate.async with checks: [..., spec, ...]
//
// For each candidate of the `candidates` facet (generate.llm) it translates the task's entry
// point (translate_python.h / translate_c.h) and checks every obligation against the task's
// spec (task_spec.h) on one Z3 session per item, and records the `proof` facet
// (stages/facets/proof.h): verified, refuted with a counterexample, or unknown with the
// reason. A task without a spec gets a proof facet saying so (verdict no_spec): nothing is
// checked. Items always leave through `ok`: validate.async's spec check turns a refutation
// into a failure with the counterexample as feedback, next to the other checks.
//
// Asynchronous: a proof costs up to (obligations x timeout_ms) of solver time, so items queue
// for the stage's own worker threads (each with its own Z3 sessions) and graph threads never
// wait on Z3.
#pragma once

#include <memory>
#include <string>

#include "graph/item_workers.h"
#include "graph/stage.h"
#include "solvers/function_contract.h"
#include "stages/constraint/translation.h"
#include "stages/facets/proof.h"

namespace vsynth::stages::constraint {

using facets::ProofFacet;

struct ProofSettings {
  solvers::ContractOptions contract;
  TranslateOptions translate;
  std::string language;        // empty: the task's
  int64_t max_candidates = 0;  // 0: all
};

// The work for one item on the calling thread: adds the `proof` facet. Throws ConstraintError
// for a malformed spec.
void prove_item(graph::Item& item, const ProofSettings& settings);

class ConstrainStage : public graph::AsyncStage {
 public:
  ConstrainStage(ProofSettings settings, int workers, graph::Port ok);
  void submit(graph::ItemPtr item, graph::Completion done) override;

 private:
  ProofSettings settings_;
  graph::Port ok_;
  graph::ItemWorkers workers_;  // last: stops before the members its work uses
};

graph::Contract constrain_contract();
std::unique_ptr<graph::StageBase> make_constrain_stage(const graph::StageContext& ctx);

}  // namespace vsynth::stages::constraint
