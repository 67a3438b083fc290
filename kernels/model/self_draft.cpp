// Self-draft (kernels/model/self_draft.h): the frequent-token rows and the truncated view.
#include "kernels/model/self_draft.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "kernels/model/model_view.h"

namespace vsynth::kernels {

std::vector<TokenId> frequent_tokens(const Tokenizer& tok, int32_t n) {
  const auto V = static_cast<TokenId>(tok.size());
  // Phase 1: the end-of-generation tokens, always kept.
  std::vector<TokenId> out;
  for (TokenId t = 0; t < V; ++t) {
    if (tok.is_eog(t)) out.push_back(t);
  }
  // Phase 2: ordinary pieces by score, highest first (ties: lower id first).
  std::vector<TokenId> rank;
  rank.reserve(static_cast<size_t>(V));
  for (TokenId t = 0; t < V; ++t) {
    const TokenType ty = tok.type(t);
    const bool ordinary =
        ty != TokenType::Control && ty != TokenType::Unknown && ty != TokenType::Unused;
    if (ordinary && !tok.is_eog(t)) rank.push_back(t);
  }
  std::stable_sort(rank.begin(), rank.end(),
                   [&](TokenId a, TokenId b) { return tok.score(a) > tok.score(b); });
  const size_t want = static_cast<size_t>(std::max<int32_t>(n, 0));
  for (TokenId t : rank) {
    if (out.size() >= want) break;
    out.push_back(t);
  }
  std::sort(out.begin(), out.end());
  return out;
}

SelfDraft make_self_draft(const std::shared_ptr<const Model>& target, const SelfDraftOptions& o) {
  const ModelConfig& c = target->config();
  if (o.layers < 1 || o.layers > c.n_layers) {
    throw EngineError("self-draft: layers = " + std::to_string(o.layers) + " is outside [1, " +
                      std::to_string(c.n_layers) + "] (the " + c.arch_name + " target's layers)");
  }
  if (o.vocab < 1) {
    throw EngineError("self-draft: vocab = " + std::to_string(o.vocab) + " is invalid (>= 1)");
  }
  SelfDraft d;
  d.tokens = frequent_tokens(target->tokenizer(), o.vocab);
  ModelViewSpec spec{.layers = o.layers, .output_rows = d.tokens};
  if (static_cast<int64_t>(d.tokens.size()) >= c.vocab_size) spec.output_rows.clear();
  d.model = make_model_view(target, spec);
  if (spec.output_rows.empty()) {  // the whole vocabulary: logit i is token i
    d.tokens.resize(static_cast<size_t>(c.vocab_size));
    std::iota(d.tokens.begin(), d.tokens.end(), TokenId{0});
  }
  return d;
}

}  // namespace vsynth::kernels
