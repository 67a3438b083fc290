#include "kernels/tokenizer/vocab_index.h"

#include <cstdio>

namespace vsynth::kernels::tok {

namespace {

uint8_t attr_of(TokenType t) {
  switch (t) {
    case TokenType::Normal:
      return kAttrNormal;
    case TokenType::Unknown:
      return kAttrUnknown;
    case TokenType::Control:
      return kAttrControl;
    case TokenType::UserDefined:
      return kAttrUserDefined;
    case TokenType::Unused:
      return kAttrUnused;
    case TokenType::Byte:
      return kAttrByte;
    case TokenType::Undefined:
      break;
  }
  return kAttrUndefined;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

void merge_key(std::string_view left, std::string_view right, std::string& key) {
  // Length prefix of the left piece, then both pieces: "a b"+"c" and "a"+"b c" never collide.
  key.clear();
  const auto n = static_cast<uint32_t>(left.size());
  key.push_back(static_cast<char>(n & 0xFF));
  key.push_back(static_cast<char>((n >> 8) & 0xFF));
  key.append(left);
  key.append(right);
}

int32_t VocabIndex::rank(std::string_view left, std::string_view right, std::string& key) const {
  merge_key(left, right, key);
  const auto it = merge_rank.find(std::string_view(key));
  return it == merge_rank.end() ? -1 : it->second;
}

VocabIndex build_index(const Vocab& v, bool with_merges) {
  const size_t n = v.tokens.size();
  const std::string& src = v.source;
  if (n == 0) throw TokenizerError(src + ": tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX)) throw TokenizerError(src + ": too many tokens");
  if (!v.scores.empty() && v.scores.size() != n) {
    throw TokenizerError(src + ": tokenizer.ggml.scores has " + std::to_string(v.scores.size()) +
                         " entries for " + std::to_string(n) + " tokens (must match)");
  }
  if (!v.types.empty() && v.types.size() != n) {
    throw TokenizerError(src + ": tokenizer.ggml.token_type has " + std::to_string(v.types.size()) +
                         " entries for " + std::to_string(n) + " tokens (must match)");
  }

  VocabIndex ix;
  ix.text.resize(n);
  ix.score.assign(n, 0.0f);
  ix.attr.assign(n, kAttrNormal);
  ix.piece_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TokenId>(i);
    ix.text[i] = v.tokens[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : v.tokens[i];
    if (!v.scores.empty()) ix.score[i] = v.scores[i];
    if (!v.types.empty()) ix.attr[i] = attr_of(v.types[i]);
    const auto [it, fresh] = ix.piece_to_id.emplace(ix.text[i], id);
    if (!fresh) {
      throw TokenizerError(src + ": duplicate token " + ix.text[i] + " with ids " +
                           std::to_string(it->second) + " and " + std::to_string(i));
    }
  }

  ix.byte_token.fill(kNoToken);
  for (size_t i = 0; i < n; ++i) {
    if (!(ix.attr[i] & kAttrByte)) continue;
    const std::string& t = ix.text[i];
    const int hi = t.size() == 6 ? hex_digit(t[3]) : -1;
    const int lo = t.size() == 6 ? hex_digit(t[4]) : -1;
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>' || hi < 0 || lo < 0) {
      throw TokenizerError(src + ": token " + std::to_string(i) + " (" + t +
                           ") has type byte but is not of the form <0xXX>");
    }
  }
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    TokenId id = ix.find(buf);
    if (id == kNoToken) id = ix.find(std::string(1, static_cast<char>(b)));
    ix.byte_token[static_cast<size_t>(b)] = id;
  }

  if (with_merges) {
    ix.merge_rank.reserve(v.merges.size());
    std::string key;
    for (size_t r = 0; r < v.merges.size(); ++r) {
      const std::string& m = v.merges[r];
      // Split at the first space after the first byte (a piece may itself start with a space).
      const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
      if (sp == std::string::npos) {
        throw TokenizerError(src + ": tokenizer.ggml.merges[" + std::to_string(r) + "] = \"" + m +
                             "\" is not of the form \"left right\"");
      }
      merge_key(std::string_view(m).substr(0, sp), std::string_view(m).substr(sp + 1), key);
      ix.merge_rank.emplace(key, static_cast<int32_t>(r));  // the first rank of a pair wins
    }
  }
  return ix;
}

}  // namespace vsynth::kernels::tok
