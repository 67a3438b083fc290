// Self-draft (kernels/model/self_draft.h): the frequent-token rows and the truncated view.
#include "kernels/model/self_draft.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>

#include "kernels/model/model_view.h"

namespace vsynth::kernels {

namespace {

// One UTF-8 code point (SentencePiece's U+2581 space marker included).
bool one_character(std::string_view s) {
  if (s.empty()) return false;
  const auto lead = static_cast<unsigned char>(s[0]);
  const size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  return s.size() == len;
}

}  // namespace

std::vector<TokenId> frequent_tokens(const Tokenizer& tok, int32_t n) {
  const auto V = static_cast<TokenId>(tok.size());
  // Phase 1: the end-of-generation tokens, always kept.
  std::vector<TokenId> out;
  for (TokenId t = 0; t < V; ++t) {
    if (tok.is_eog(t)) out.push_back(t);
  }
  // Phase 2: ordinary pieces by score, highest first (ties: lower id first); the pieces of one
  // character (up to an eighth of the rows) go first, as their scores rank them below every
  // merged piece.
  std::vector<TokenId> chars, rest;
  for (TokenId t = 0; t < V; ++t) {
    const TokenType ty = tok.type(t);
    const bool ordinary =
        ty != TokenType::Control && ty != TokenType::Unknown && ty != TokenType::Unused;
    if (!ordinary || tok.is_eog(t)) continue;
    (one_character(tok.text(t)) ? chars : rest).push_back(t);
  }
  const auto by_score = [&](TokenId a, TokenId b) { return tok.score(a) > tok.score(b); };
  std::stable_sort(chars.begin(), chars.end(), by_score);
  const size_t want = static_cast<size_t>(std::max<int32_t>(n, 0));
  const size_t char_rows = std::min(chars.size(), std::max<size_t>(want / 8, 1));
  rest.insert(rest.end(), chars.begin() + static_cast<std::ptrdiff_t>(char_rows), chars.end());
  std::stable_sort(rest.begin(), rest.end(), by_score);
  for (size_t i = 0; i < char_rows && out.size() < want; ++i) out.push_back(chars[i]);
  for (size_t i = 0; i < rest.size() && out.size() < want; ++i) out.push_back(rest[i]);
  std::sort(out.begin(), out.end());
  return out;
}

SelfDraft make_self_draft(const std::shared_ptr<const Model>& target, const SelfDraftOptions& o) {
  const ModelConfig& c = target->config();
  const int32_t layers = o.layers == 0 ? c.n_layers : o.layers;
  if (layers < 1 || layers > c.n_layers) {
    throw EngineError("self-draft: layers = " + std::to_string(o.layers) + " is outside [1, " +
                      std::to_string(c.n_layers) + "] (the " + c.arch_name + " target's layers)");
  }
  if (o.vocab < 1) {
    throw EngineError("self-draft: vocab = " + std::to_string(o.vocab) + " is invalid (>= 1)");
  }
  SelfDraft d;
  d.tokens = frequent_tokens(target->tokenizer(), o.vocab);
  ModelViewSpec spec{.layers = layers, .output_rows = d.tokens};
  if (static_cast<int64_t>(d.tokens.size()) >= c.vocab_size) spec.output_rows.clear();
  d.model = make_model_view(target, spec);
  if (spec.output_rows.empty()) {  // the whole vocabulary: logit i is token i
    d.tokens.resize(static_cast<size_t>(c.vocab_size));
    std::iota(d.tokens.begin(), d.tokens.end(), TokenId{0});
  }
  return d;
}

}  // namespace vsynth::kernels
