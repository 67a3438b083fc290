// SentencePiece-style merging (tokenizer.ggml.model = "llama": Gemma, Llama 1/2).
#pragma once

#include <string_view>
#include <vector>

#include "kernels/tokenizer/vocab_index.h"

namespace vsynth::kernels::tok {

// Tokenizes one fragment of text whose spaces are already U+2581 and appends the ids.
// The fragment is split into UTF-8 characters; then, repeatedly, the adjacent pair whose
// concatenation is a vocabulary piece with the highest score is merged (the leftmost pair on a
// tie), until no pair is a piece. Characters that are not pieces become byte tokens (<0xXX>),
// or `unk` where the vocabulary has no byte token; with neither the byte is dropped.
// Characters are split by their lead byte's announced length without checking continuation
// bytes (as llama.cpp does), so a truncated sequence swallows the next bytes: a space after it
// (already U+2581) then decodes as U+2581, not as a space.
void spm_encode(const VocabIndex& vocab, std::string_view text, TokenId unk,
                std::vector<TokenId>& out);

}  // namespace vsynth::kernels::tok
