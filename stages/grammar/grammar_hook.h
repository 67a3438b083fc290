// hook.grammar: syntax-constrained decoding (the SynCode / XGrammar idea) inside generate.llm.
//
//   resources:
//     grammar: { use: hook.grammar, with: { languages: [python, c] } }
//     z3:      { use: hook.z3_forward }
//   stages:
//     generate: { use: generate.llm, with: { model: coder, hooks: [grammar, z3] } }
//
// For every candidate it follows the program the text becomes (program.h: complete mode's
// prefix + text + suffix, instruct mode's fenced block) with an incremental recogniser
// (recognizer.h) and keeps the model to text that can still become a valid program:
//
//   after_sample   the sampled token's bytes go through a copy of the state (well under a
//                  microsecond for most tokens); a token after which no valid program exists is
//                  rejected, and so is an end-of-generation token where the program is not
//                  complete (open brackets, strings, a block header without its body);
//   complete_prefix  the token budget ended the candidate while its program was incomplete:
//                  keep the longest prefix where it was complete (the last state can_end),
//                  inside the code (instruct mode: inside the constrained block), with some
//                  non-blank code in it and not cut inside a word; no complete point: no
//                  opinion (`trim_incomplete: false`: never an opinion).
//   before_sample  after a rejection at this position, the full mask: every token of the
//                  vocabulary tried from the state through the precomputed table (vocab_table.h,
//                  built once per tokenizer and shared by all candidates), the impossible ones
//                  banned, so the resample is always viable.
//
// Checking the sampled token first and masking only after a miss keeps the common step cheap;
// the mask is exact where it is applied. The hook only constrains: it never rolls back, and a
// later hook in the list (hook.z3_forward) sees only syntactically viable tokens. A rollback by
// another hook truncates the per-position states this hook keeps.
//
// Languages: the recognisers know Python and C; `languages` (checked at load) says which this
// resource constrains. A task in another language: its candidate is stopped at its first token
// with a verdict naming the supported ones (`other_languages: stop`), or generated without the
// hook (`pass`). When the prompt's own code does not parse (complete mode's prefix) the hook
// stands aside for that candidate and says so in its stats.
//
// Costs per candidate go to the `grammar_stats` facet: time inside the hook per generated
// token (p50 / p99 us, rejected tries and full masks included), rejections, full masks and
// their time, end-of-generation bans, the table's build time.
#pragma once

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graph/item.h"
#include "graph/registry.h"
#include "stages/facets/hook.h"
#include "stages/grammar/program.h"
#include "stages/grammar/vocab_table.h"

namespace vsynth::stages::grammar {

struct GrammarSettings {
  std::vector<Language> languages = {Language::Python, Language::C};
  bool stop_other = true;       // other_languages: stop (else pass)
  bool trim_incomplete = true;  // complete_prefix answers (else no opinion)
};

// One candidate's costs.
struct GrammarStats {
  int candidate = 0;
  int attempt = 1;
  std::string language;
  std::vector<float> token_us;       // time inside the hook per accepted token
  int rejections = 0;                // sampled tokens refused (syntax)
  int eog_rejections = 0;            // end-of-generation refused (program incomplete)
  int full_masks = 0;                // vocabulary walks
  double full_mask_us = 0;           // their total time
  std::size_t full_mask_banned = 0;  // tokens banned by them, summed
  std::size_t walk_steps = 0;        // recogniser steps in them
  double table_ms = 0;               // building the vocabulary table (first candidate only)
  int trimmed_tokens = 0;            // dropped at the end: the budget cut an unfinished program
  std::string stood_aside;           // why the hook did not constrain ("" when it did)

  nlohmann::json to_json() const;
};

// Facet `grammar_stats`: every candidate of every attempt.
class GrammarStatsFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "grammar_stats";
  std::vector<GrammarStats> candidates;
  // {p50_token_us, p99_token_us, tokens, rejections, full_masks, candidates: [...]}
  nlohmann::json to_json() const override;
};

// The MaskHook for one candidate.
class GrammarMask : public kernels::MaskHook {
 public:
  GrammarMask(std::shared_ptr<const VocabTable> table, Program::Shape shape, GrammarStats stats,
              std::function<void(GrammarStats&&)> on_done, bool trim_incomplete = true);
  ~GrammarMask() override;
  GrammarMask(const GrammarMask&) = delete;
  GrammarMask& operator=(const GrammarMask&) = delete;

  void before_sample(const kernels::DecodeView& view, kernels::TokenMask& mask) override;
  kernels::HookVerdict after_sample(const kernels::DecodeView& view, kernels::TokenId token,
                                    std::string_view piece) override;
  void on_rollback(std::size_t kept) override;
  std::optional<kernels::PrefixKeep> complete_prefix(const kernels::DecodeView& view) override;

  const GrammarStats& stats() const { return stats_; }
  const Program& program() const { return program_; }

 private:
  void sync(const kernels::DecodeView& view);

  std::shared_ptr<const VocabTable> table_;
  Program program_;
  GrammarStats stats_;
  std::function<void(GrammarStats&&)> on_done_;
  bool active_ = true;
  bool trim_incomplete_ = true;
  std::vector<ProgramState> states_;  // states_[i]: after i generated tokens
  // The token after_sample accepted last, with the state after it (committed at the next call
  // when the loop kept it).
  std::size_t pending_pos_ = SIZE_MAX;
  kernels::TokenId pending_token_ = kernels::kNoToken;
  ProgramState pending_;
  std::size_t mask_at_ = SIZE_MAX;  // position whose resample needs the full mask
  double position_us_ = 0;          // time spent at the current position so far
  std::vector<ProgramState> scratch_;
  std::vector<kernels::TokenId> dead_;
  std::vector<uint8_t> out_;  // [vocab] 1 = banned, for turning dead_ into an allowed list
};

class GrammarHook : public facets::DecodingHook {
 public:
  explicit GrammarHook(GrammarSettings settings) : settings_(std::move(settings)) {}
  std::unique_ptr<kernels::MaskHook> make(graph::Item& item,
                                          const facets::HookContext& ctx) override;
  // The table for `tok`, built on first use (thread-safe; one per tokenizer).
  std::shared_ptr<const VocabTable> table(const kernels::Tokenizer& tok, double* built_ms);

 private:
  GrammarSettings settings_;
  std::mutex mu_;
  std::vector<std::pair<const kernels::Tokenizer*, std::shared_ptr<const VocabTable>>> tables_;
};

graph::ResourceContract grammar_hook_contract();
std::shared_ptr<graph::Resource> make_grammar_hook_resource(const graph::ResourceContext& ctx);

}  // namespace vsynth::stages::grammar
