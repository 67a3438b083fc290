// The vocabulary, prepared once per tokenizer for masking, in two tables:
//
//   word classes: tokens made of n spaces and then only word bytes (letters, digits, `_`, any
//     byte >= 0x80), keyed by n and whether the word starts with a digit. Both recognisers can
//     fail only where a token, a line or a literal ends, and a word byte after the first ends
//     nothing (it extends the name, number, string or comment the first one started), so every
//     token of a class lives or dies with any one of them: one representative is tried per
//     class. This covers 251,037 of Gemma 3's 262,144 tokens in 64 classes.
//   the rest: their bytes sorted, with the length each shares with the one before it (a
//     flattened token trie). The walk feeds each token's bytes to a copy of the state, reusing
//     the state after the shared prefix and skipping every token below a prefix that already
//     failed: one recogniser step per trie edge still alive.
//
// Tokens whose text is empty (control tokens) are never masked; end-of-generation tokens are
// left to the caller (Program::can_end).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tokenizer/tokenizer.h"
#include "stages/grammar/program.h"

namespace vsynth::stages::grammar {

class VocabTable {
 public:
  explicit VocabTable(const kernels::Tokenizer& tok);

  std::size_t vocab_size() const { return vocab_; }
  const std::vector<kernels::TokenId>& eog() const { return eog_; }
  const std::vector<kernels::TokenId>& empty() const { return empty_; }  // no text, not EOG
  std::size_t max_len() const { return max_len_; }
  double build_ms() const { return build_ms_; }

  // Appends to `dead` the tokens with text that no valid program can take after `s`.
  // `scratch` holds max_len() + 1 states between calls. Returns the recogniser steps taken.
  std::size_t walk(const Program& p, const ProgramState& s, std::vector<ProgramState>& scratch,
                   std::vector<kernels::TokenId>& dead) const;
  std::size_t classes() const { return classes_.size(); }
  std::size_t classed_tokens() const { return class_ids_.size(); }

 private:
  struct WordClass {
    std::string representative;
    uint32_t begin = 0, end = 0;  // its members in class_ids_
  };
  std::size_t vocab_ = 0;
  std::vector<WordClass> classes_;
  std::vector<kernels::TokenId> class_ids_;
  std::vector<kernels::TokenId> order_;  // tokens with text, by their bytes
  std::vector<uint32_t> start_;          // order_.size() + 1 offsets into bytes_
  std::vector<uint16_t> lcp_;            // bytes shared with the previous token in order_
  std::string bytes_;
  std::vector<kernels::TokenId> eog_, empty_;
  std::size_t max_len_ = 0;
  double build_ms_ = 0;
};

}  // namespace vsynth::stages::grammar
