// Splits text around special tokens written in it ("<start_of_turn>", "<|im_end|>"), before
// any merging (internal to kernels/tokenizer/).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/tokenizer/vocab_index.h"

namespace vsynth::kernels::tok {

// A piece of the input: raw text [begin, end) to tokenize, or one special token.
struct Fragment {
  size_t begin;
  size_t end;
  TokenId token;  // kNoToken for raw text
};

class SpecialMatcher {
 public:
  // Matches every Control, UserDefined and Unknown token of the vocabulary.
  explicit SpecialMatcher(const VocabIndex& vocab);

  // Longer tokens take precedence over shorter ones wherever both could match, then the
  // leftmost occurrence (llama.cpp's order: each special, longest first, split out of the
  // remaining text left to right). With parse_control false only UserDefined tokens match, and
  // not those that also carry the Control bit.
  void split(const VocabIndex& vocab, std::string_view text, bool parse_control,
             std::vector<Fragment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    TokenId token = kNoToken;
  };
  int32_t child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_;
  std::vector<TokenId> by_rank_;    // special token ids, longest first (their precedence)
  std::vector<int32_t> rank_;       // per token id: index into by_rank_, or -1
  std::array<bool, 256> starts_{};  // bytes that begin some special token
};

}  // namespace vsynth::kernels::tok
