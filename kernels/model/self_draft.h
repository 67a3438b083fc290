// The self-draft: a cheap draft model made from the target itself, for speculative decoding
// without a second GGUF. It runs the target's first `layers` layers, then the final norm and an
// output projection restricted to the `vocab` most frequent tokens (logits over those only; the
// drafter maps the argmax back to its token id). On Gemma 3 270M the tied 262,144 x 640 output
// projection is about 60% of a decode step, so a draft that kept it could not win.
//
//   SelfDraft d = make_self_draft(target, {.layers = 6, .vocab = 32768});
//   auto seq = d.model->new_sequence();          // logit rows of d.tokens.size() floats
//   TokenId t = d.tokens[argmax(seq->prefill(prompt))];
//
// Frequency: tokenizer.ggml.scores (SentencePiece: the higher score, the earlier and more
// frequent piece); with no scores (BPE vocabularies) the lowest ids, which BPE assigns to its
// earliest, most frequent merges. SentencePiece scores the pieces of one character below every
// merged piece although `(`, `_`, digits and the space marker are among the most frequent tokens
// of code (Gemma 3: ids 236743 and up, in character-frequency order; by score alone the top
// 32768 cover only 73% of the target's greedy tokens on Python), so the best-scored eighth of
// the rows goes to one-character pieces first. Control, unknown and unused tokens are left out;
// every end-of-generation token is always kept (a draft must be able to stop).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/engine.h"

namespace vsynth::kernels {

struct SelfDraftOptions {
  int32_t layers = 0;     // the target's first layers the draft runs (1 .. n_layers); 0: all
  int32_t vocab = 32768;  // tokens the draft can propose (>= 1; the whole vocabulary at most)
};

struct SelfDraft {
  std::shared_ptr<Model> model;  // shares the target's mapped weights (kernels/model/model_view.h)
  std::vector<TokenId> tokens;   // [logit index] -> token id, ascending ids
};

// The `n` most frequent tokens by the rule above (all of them when n >= the vocabulary),
// ascending ids.
std::vector<TokenId> frequent_tokens(const Tokenizer& tok, int32_t n);

// Throws EngineError for options out of range (naming the option, the value and the range) or a
// target that is not the CPU engine.
SelfDraft make_self_draft(const std::shared_ptr<const Model>& target, const SelfDraftOptions& o);

}  // namespace vsynth::kernels
