#include "stages/constraint/constrain_stage.h"

#include "stages/constraint/error.h"
#include "stages/constraint/prove.h"
#include "stages/constraint/task_spec.h"
#include "stages/facets/candidates.h"

namespace vsynth::stages::constraint {

void prove_item(graph::Item& item, const ProofSettings& settings) {
  std::vector<std::string_view> programs;
  if (const auto* c = item.find<facets::CandidatesFacet>()) {
    for (const auto& cand : c->candidates) programs.push_back(cand.code);
  } else if (auto it = item.task().data.find("candidate");
             it != item.task().data.end() && it->is_string()) {
    programs.push_back(it->get_ref<const std::string&>());
  }
  if (settings.max_candidates > 0 && programs.size() > static_cast<size_t>(settings.max_candidates))
    programs.resize(static_cast<size_t>(settings.max_candidates));

  auto& facet = item.emplace<ProofFacet>();
  facet.attempt = item.attempt();
  std::optional<TaskSpec> spec;
  try {
    spec = task_spec(item.task(), settings.language);
  } catch (const ConstraintError& e) {
    // The spec is the task's data: one the language cannot read or express is said in the
    // record (verdict spec_error, naming the construct), and the candidates go on to their
    // other checks; it never turns the task into a run-time `error`.
    facet.spec_error = e.what();
    return;
  }
  if (!spec) {
    facet.note = "the task has no spec: nothing to prove";
    return;
  }
  facet.has_spec = true;
  facet.contract = std::make_shared<const solvers::FunctionContract>(spec->contract);
  if (programs.empty())
    throw ConstraintError("task `" + item.id() +
                          "`: no candidate to prove (no `candidates` facet from generate.llm and "
                          "no `candidate` field)");
  solvers::ContractChecker checker(spec->contract, settings.contract);
  for (std::string_view code : programs)
    facet.candidates.push_back(prove(code, *spec, checker, settings.translate));
}

ConstrainStage::ConstrainStage(ProofSettings settings, int workers, graph::Port ok)
    : settings_(std::move(settings)), ok_(ok), workers_([this](graph::Item& item) {
        prove_item(item, settings_);
        return ok_;
      }) {
  workers_.start(workers);
}

void ConstrainStage::submit(graph::ItemPtr item, graph::Completion done) {
  workers_.submit(std::move(item), std::move(done));
}

graph::Contract constrain_contract() {
  namespace P = graph::P;
  graph::Contract c;
  c.kind = "constrain.z3";
  c.summary =
      "proves each candidate against the task's spec with Z3 (verified / refuted with a "
      "counterexample / unknown with the reason) into the `proof` facet validate.async reads";
  c.execution = graph::Execution::Async;
  c.concurrency = graph::Concurrency::unlimited();  // items queue for the stage's workers
  c.requires_facets = {std::string(facets::CandidatesFacet::kName)};
  c.provides_facets = {std::string(ProofFacet::kName)};
  c.ports = {{"ok",
              "every item, with its proof (refutations fail in validate.async's spec "
              "check)",
              false}};
  c.params = {
      P::integer("timeout_ms", 200, 1, 600000, "Z3 time limit per obligation, ms"),
      P::integer("unroll_bound", 8, 0, 64,
                 "for loops are unrolled this many iterations; a loop that may run longer "
                 "makes the proof unknown"),
      P::integer("max_seq_len", 8, 1, 64, "list[int] values are modelled up to this length"),
      P::boolean("cores", true, "name the requires each proof used (unsat cores; ~2.5x cost)"),
      P::string("language", "", "force a language (python, c); default: the task's language"),
      P::integer("max_candidates", 0, 0, 1024, "prove at most this many candidates (0: all)"),
      P::integer("workers", 1, 1, 64, "items proved at once, each on its own thread"),
  };
  return c;
}

std::unique_ptr<graph::StageBase> make_constrain_stage(const graph::StageContext& ctx) {
  const graph::Params& p = ctx.params;
  ProofSettings s;
  s.contract.timeout_ms = static_cast<unsigned>(p.integer("timeout_ms"));
  s.contract.max_seq_len = static_cast<unsigned>(p.integer("max_seq_len"));
  s.contract.cores = p.boolean("cores");
  s.translate.unroll_bound = static_cast<int>(p.integer("unroll_bound"));
  s.language = p.string("language");
  if (!s.language.empty() && s.language != "python" && s.language != "c")
    throw ConstraintError("language `" + s.language +
                          "` is not supported (valid: python, c, or empty for the task's)");
  s.max_candidates = p.integer("max_candidates");
  return std::make_unique<ConstrainStage>(std::move(s), static_cast<int>(p.integer("workers")),
                                          ctx.port("ok"));
}

}  // namespace vsynth::stages::constraint
