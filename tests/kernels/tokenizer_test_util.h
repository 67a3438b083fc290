// Small hand-made vocabularies for the tokenizer tests.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "kernels/tokenizer/tokenizer.h"
#include "kernels/tokenizer/unicode.h"

namespace vsynth::kernels::test {

// SPM vocabulary: 0 <unk>, 1 <s>, 2 </s> (control), 3..258 <0x00>..<0xFF> (byte), then
// `pieces` (normal, with their scores, spaces written as U+2581), then `user_defined`.
inline Vocab spm_vocab(const std::vector<std::pair<std::string, float>>& pieces,
                       const std::vector<std::string>& user_defined = {}, bool byte_tokens = true) {
  Vocab v;
  v.model = "llama";
  auto add = [&](std::string t, float s, TokenType ty) {
    v.tokens.push_back(std::move(t));
    v.scores.push_back(s);
    v.types.push_back(ty);
  };
  add("<unk>", 0, TokenType::Unknown);
  add("<s>", 0, TokenType::Control);
  add("</s>", 0, TokenType::Control);
  if (byte_tokens) {
    for (int b = 0; b < 256; ++b) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      add(buf, 0, TokenType::Byte);
    }
  }
  for (const auto& [t, s] : pieces) add(t, s, TokenType::Normal);
  for (const auto& t : user_defined) add(t, 0, TokenType::UserDefined);
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  v.add_space_prefix = false;
  return v;
}

// Byte-level BPE vocabulary: ids 0..255 are the GPT-2 alphabet in byte order, then one token per
// merge (its concatenation, in merge order), then `control` tokens. No BOS (add_bos false).
inline Vocab bpe_vocab(const std::vector<std::pair<std::string, std::string>>& merges,
                       const std::string& pre = "qwen2",
                       const std::vector<std::string>& control = {}) {
  Vocab v;
  v.model = "gpt2";
  v.pre = pre;
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(unicode::to_utf8(unicode::byte_to_gpt2(static_cast<uint8_t>(b))));
    v.types.push_back(TokenType::Normal);
  }
  for (const auto& [l, r] : merges) {
    v.merges.push_back(l + " " + r);
    v.tokens.push_back(l + r);
    v.types.push_back(TokenType::Normal);
  }
  for (const auto& c : control) {
    v.tokens.push_back(c);
    v.types.push_back(TokenType::Control);
  }
  v.add_bos = false;
  return v;
}

// GPT-2 alphabet spelling of UTF-8 text (" " -> "Ġ", "\n" -> "Ċ").
inline std::string g2(std::string_view s) {
  std::string out;
  for (char c : s) unicode::append_utf8(out, unicode::byte_to_gpt2(static_cast<uint8_t>(c)));
  return out;
}

// Texts of the ids, for readable failure messages.
inline std::vector<std::string> texts(const Tokenizer& tok, const std::vector<TokenId>& ids) {
  std::vector<std::string> out;
  for (TokenId id : ids) out.emplace_back(tok.text(id));
  return out;
}

}  // namespace vsynth::kernels::test
