// hook.z3_forward: the Z3 forward check inside generate.llm's decoding loop.
//
//   resources:
//     z3: { use: hook.z3_forward, with: { max_backtracks: 4, timeout_ms: 50 } }
//   stages:
//     generate: { use: generate.llm, with: { model: coder, hooks: [z3] } }
//
// For every candidate of an item whose task has a spec (python or c), generate.llm gets a
// ForwardHook (a kernels::MaskHook). It watches the text as it is sampled; at each statement
// boundary (a token holding a newline in Python, a `;` or `}` in C, and the end of the text)
// it rebuilds the program so far (the prompt's code + the code in the answer, as generate.llm
// assembles it: facets::HookContext says how), cut at the boundary (C: with its open braces
// closed), translates it as a partial program (translation.h) and checks every obligation of each
// statement it has not checked yet: returns against the spec under their path conditions,
// asserts, and exceptions / C overflow. ContractOptions.cores is off (no unsat cores): the
// forward check only needs sat / unsat.
//
// On a violation it rolls the sequence back to the token where the offending statement starts
// and bans that token there (HookVerdict::rollback; the KV cache rolls back, no re-prefill), so
// the model resamples that statement; when the statement starts inside the token being judged,
// it rejects that token instead. After max_backtracks interventions for one candidate it stops
// checking and lets the candidate finish (constrain.z3's proof judges it afterwards).
//
// Costs are recorded per candidate in the `constraint_stats` facet: time inside the hook per
// sampled token (p50 / p99 us: most tokens cost a byte scan, boundaries a parse + translation +
// Z3 checks), checks, Z3 time, translation time, rollbacks.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/stats.h"
#include "graph/item.h"
#include "graph/registry.h"
#include "solvers/function_contract.h"
#include "stages/constraint/translation.h"
#include "stages/facets/hook.h"

namespace vsynth::stages::constraint {

struct ForwardSettings {
  int max_backtracks = 4;  // rollbacks + rejections per candidate, then hands off
  unsigned timeout_ms = 50;
  int unroll_bound = 8;
  unsigned max_seq_len = 8;
};

// One candidate's forward-check costs.
struct ForwardStats {
  int candidate = 0;
  int attempt = 1;
  std::vector<float> token_us;  // time inside the hook, per after_sample call
  int boundaries = 0;           // statement boundaries seen
  int parses_skipped = 0;       // boundaries whose prefix did not parse (mid-expression)
  int checks = 0;               // obligations checked
  int violations = 0;           // refuted obligations
  int rollbacks = 0, rejections = 0;
  bool gave_up = false;  // max_backtracks reached: later statements not checked
  double setup_us = 0;   // building the Z3 session and its first check (once per candidate)
  double translate_us = 0, z3_us = 0;
  double wall_us = 0;               // from the hook's creation to its last call (~ the decode time)
  std::vector<std::string> events;  // "rollback to token 12: clamp(x=4, ...) returned 4; ..."

  nlohmann::json to_json() const;
};

// Facet `constraint_stats`: the forward check's costs for each candidate of every attempt.
class ConstraintStatsFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "constraint_stats";
  std::vector<ForwardStats> candidates;
  // {p50_token_us, p99_token_us, tokens, checks, rollbacks, z3_us, z3_share, candidates: [...]}
  nlohmann::json to_json() const override;
};

// What the program looks like around the model's text (facets::HookContext: generate.llm's
// assembly).
struct ProgramShape {
  bool instruct = false;    // the answer is prose with a fenced code block
  std::string prefix;       // complete mode: the code before the model's text
  std::string given_code;   // instruct mode: code the task gave (a HumanEval prompt)
  std::string entry_point;  // the function the answer must define (else it continues given_code)
  // instruct mode: the code in an answer (a view into it); null: the whole answer is code.
  std::string_view (*extract_code)(std::string_view answer, std::string_view language) = nullptr;
};

// The MaskHook for one candidate. `on_done` receives the statistics when the hook is dropped.
class ForwardHook : public kernels::MaskHook {
 public:
  ForwardHook(const ForwardSettings& settings, const solvers::FunctionContract& contract,
              std::string language, ProgramShape shape, ForwardStats stats = {},
              std::function<void(ForwardStats&&)> on_done = {});
  ~ForwardHook() override;
  ForwardHook(const ForwardHook&) = delete;
  ForwardHook& operator=(const ForwardHook&) = delete;

  kernels::HookVerdict after_sample(const kernels::DecodeView& view, kernels::TokenId token,
                                    std::string_view piece) override;
  const ForwardStats& stats() const { return stats_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ForwardStats stats_;
  std::function<void(ForwardStats&&)> on_done_;
};

class Z3ForwardHook : public facets::DecodingHook {
 public:
  explicit Z3ForwardHook(ForwardSettings settings) : settings_(settings) {}
  std::unique_ptr<kernels::MaskHook> make(graph::Item& item,
                                          const facets::HookContext& ctx) override;
  const ForwardSettings& settings() const { return settings_; }

 private:
  ForwardSettings settings_;
};

graph::ResourceContract forward_hook_contract();
std::shared_ptr<graph::Resource> make_forward_hook_resource(const graph::ResourceContext& ctx);

// Percentile (0..100) of `v` by nearest rank; 0 for an empty vector (base/stats.h).
using base::percentile;

}  // namespace vsynth::stages::constraint
