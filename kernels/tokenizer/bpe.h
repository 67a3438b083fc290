// Byte-level BPE merging (tokenizer.ggml.model = "gpt2": Qwen2, Llama 3).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernels/tokenizer/vocab_index.h"

namespace vsynth::kernels::tok {

// Tokenizes one pre-tokenized word, already mapped to the GPT-2 byte alphabet, and appends the
// ids. With `ignore_merges` a word that is itself a piece is emitted whole. Otherwise the word
// is split into characters and, repeatedly, the adjacent pair with the lowest merge rank is
// merged (leftmost on a tie). A final symbol that is not a piece is emitted byte by byte, each
// byte that is itself a piece as that piece (others are dropped, as llama.cpp drops them).
void bpe_encode_word(const VocabIndex& vocab, std::string_view word, bool ignore_merges,
                     std::vector<TokenId>& out);

}  // namespace vsynth::kernels::tok
