// Text <-> token ids for the two vocabulary kinds GGUF models use, matching llama.cpp's
// llama_tokenize / llama_detokenize:
//   "llama" (SentencePiece-style, Gemma 3 and Llama 1/2): spaces become U+2581 and adjacent
//           pieces merge by score; unknown characters fall back to <0xXX> byte tokens.
//   "gpt2"  (byte-level BPE, Qwen2 and Llama 3): a pre-tokenizer splits words, bytes map to the
//           GPT-2 alphabet, and pairs merge by rank.
// Special tokens written in the text are split out first in both.
//
//   Tokenizer tok(load_vocab(gguf));          // kernels/tokenizer/gguf_vocab.h
//   std::vector<TokenId> ids = tok.encode("<start_of_turn>user\nhi<end_of_turn>\n");
//   std::string text = tok.decode(ids);       // special tokens skipped unless asked for
//
// A Tokenizer is immutable after construction; encode/decode are safe from many threads.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/tokenizer/vocab.h"

namespace vsynth::kernels {

struct EncodeOptions {
  // Add BOS / EOS as the vocabulary asks (tokenizer.ggml.add_bos_token / add_eos_token).
  bool add_special = true;
  // Control tokens written in the text ("<start_of_turn>", "<bos>") become their ids; when
  // false they are tokenized as plain text. User-defined tokens are always matched.
  bool parse_special = true;
};

struct DecodeOptions {
  // Write the text of control and unknown tokens ("<end_of_turn>"); skipped otherwise.
  bool render_special = false;
  // Drop a leading BOS and a trailing EOS when the vocabulary adds them.
  bool remove_special = false;
  // Apply the vocabulary's clean-up rule, if it has one (the gpt-2 and llama3 pre-tokenizers:
  // " ." -> ".", " 's" -> "'s", ...). Never applies to SPM or qwen2 vocabularies.
  bool clean_spaces = true;
};

class Tokenizer {
 public:
  // Validates the vocabulary and builds the lookup structures; throws TokenizerError naming
  // vocab.source and what is wrong (unknown model or pre-tokenizer, sizes that disagree, a
  // special id outside the vocabulary, duplicate pieces, ...).
  explicit Tokenizer(const Vocab& vocab);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  std::vector<TokenId> encode(std::string_view text, const EncodeOptions& opt = {}) const;
  // Appends to `out`.
  void encode(std::string_view text, std::vector<TokenId>& out, const EncodeOptions& opt) const;

  // Throws TokenizerError for an id outside the vocabulary.
  std::string decode(std::span<const TokenId> ids, const DecodeOptions& opt = {}) const;
  // The bytes one token stands for: may be part of a UTF-8 sequence (byte tokens). Control and
  // unknown tokens give "" unless render_special.
  std::string piece(TokenId id, bool render_special = false) const;

  size_t size() const;
  bool is_spm() const;                      // "llama" model; false for "gpt2"
  std::string_view text(TokenId id) const;  // the raw vocabulary entry
  TokenType type(TokenId id) const;
  float score(TokenId id) const;
  std::optional<TokenId> find(std::string_view piece) const;
  bool is_control(TokenId id) const;
  // End of generation: EOS, end of turn and the like ("<end_of_turn>", "<|im_end|>").
  bool is_eog(TokenId id) const;

  TokenId bos() const;
  TokenId eos() const;
  TokenId eot() const;
  TokenId unk() const;
  TokenId pad() const;
  bool add_bos() const;
  bool add_eos() const;
  bool add_space_prefix() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vsynth::kernels
