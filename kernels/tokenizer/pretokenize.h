// Pre-tokenizers for byte-level BPE vocabularies: split text into words before merging.
//
// Each one is a hand-written state machine over code points equivalent to the regex that the
// model's tokenizer.json declares (leftmost alternative wins, as in PCRE/Oniguruma):
//   Gpt2   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   Llama3 (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//          ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   Qwen2  the Llama3 expression with \p{N} (one digit per word) instead of \p{N}{1,3}
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace vsynth::kernels {

enum class PreTokenizer { Gpt2, Llama3, Qwen2 };

// What a GGUF `tokenizer.ggml.pre` name selects, with the per-name flags llama.cpp sets.
struct PreTokenizerSpec {
  PreTokenizer kind;
  bool clean_spaces;   // decode drops the space in " ." " ," " 's" ... (HF clean_up_tokenization)
  bool ignore_merges;  // a word that is itself a token is emitted whole, without merging
  bool add_bos;        // default for add_bos when the file does not say
};

// The spec for a pre-tokenizer name ("qwen2", "llama-bpe", "gpt-2", ...), or nullopt when this
// build has none for it.
std::optional<PreTokenizerSpec> pre_tokenizer_spec(std::string_view name);
// Every name pre_tokenizer_spec accepts, comma-separated (for error messages).
std::string_view pre_tokenizer_names();

// Appends the length (in code points) of each successive word of `cps` to `word_lengths`;
// the lengths sum to cps.size().
void pre_tokenize(PreTokenizer kind, std::span<const char32_t> cps,
                  std::vector<size_t>& word_lengths);

}  // namespace vsynth::kernels
