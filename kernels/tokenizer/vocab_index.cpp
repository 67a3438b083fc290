#include "kernels/tokenizer/vocab_index.h"

#include <cstdio>

#include "base/hash.h"
#include "base/mix.h"

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

void FlatIndex::reserve(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;  // load factor <= 1/2
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
}

uint64_t hash_bytes(std::string_view s) {
  // FNV-1a, then a final mix so both the low (slot) and high (tag) bits spread.
  return base::fmix64_half(base::fnv1a64(s, base::kFnv1a64ShortOffset));
}

namespace {

uint64_t pair_hash(std::string_view left, std::string_view right) {
  return hash_bytes(left) * base::kGoldenGamma ^ hash_bytes(right);
}

bool is_pair(const VocabIndex& ix, int32_t rank, std::string_view left, std::string_view right) {
  const std::string_view m = ix.merge_text[static_cast<size_t>(rank)];
  const size_t sp = ix.merge_split[static_cast<size_t>(rank)];
  return m.substr(0, sp) == left && m.substr(sp + 1) == right;
}

}  // namespace

TokenId VocabIndex::find(std::string_view piece) const {
  return pieces.find(hash_bytes(piece),
                     [&](int32_t id) { return text[static_cast<size_t>(id)] == piece; });
}

int32_t VocabIndex::rank(std::string_view left, std::string_view right) const {
  return merges.find(pair_hash(left, right),
                     [&](int32_t r) { return is_pair(*this, r, left, right); });
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
  ix.pieces.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TokenId>(i);
    ix.text[i] = v.tokens[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : v.tokens[i];
    if (!v.scores.empty()) ix.score[i] = v.scores[i];
    if (!v.types.empty()) ix.attr[i] = attr_of(v.types[i]);
    const std::string& t = ix.text[i];
    const int32_t first = ix.pieces.insert(
        hash_bytes(t), id, [&](int32_t other) { return ix.text[static_cast<size_t>(other)] == t; });
    if (first != id) {
      throw TokenizerError(src + ": duplicate token " + t + " with ids " + std::to_string(first) +
                           " and " + std::to_string(i));
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
    ix.merge_text = v.merges;
    ix.merge_split.resize(v.merges.size());
    ix.merges.reserve(v.merges.size());
    for (size_t r = 0; r < v.merges.size(); ++r) {
      const std::string_view m = ix.merge_text[r];
      // Split at the first space after the first byte (a piece may itself start with a space).
      const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
      if (sp == std::string_view::npos) {
        throw TokenizerError(src + ": tokenizer.ggml.merges[" + std::to_string(r) + "] = \"" +
                             std::string(m) + "\" is not of the form \"left right\"");
      }
      ix.merge_split[r] = static_cast<uint32_t>(sp);
      // The first rank of a pair wins, as in llama.cpp.
      const std::string_view left = m.substr(0, sp), right = m.substr(sp + 1);
      ix.merges.insert(pair_hash(left, right), static_cast<int32_t>(r),
                       [&](int32_t other) { return is_pair(ix, other, left, right); });
    }
  }
  return ix;
}

}  // namespace vsynth::kernels::tok
