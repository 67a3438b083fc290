// Lookup structures built once from a Vocab and shared by the SPM and BPE encoders (internal to
// kernels/tokenizer/).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/tokenizer/vocab.h"

namespace vsynth::kernels::tok {

// Token attribute bits. A token may carry several (a user-defined token that names an end of
// turn is also Control).
enum Attr : uint8_t {
  kAttrUndefined = 0,
  kAttrNormal = 1 << 0,
  kAttrUnknown = 1 << 1,
  kAttrControl = 1 << 2,
  kAttrUserDefined = 1 << 3,
  kAttrUnused = 1 << 4,
  kAttrByte = 1 << 5,
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct VocabIndex {
  std::vector<std::string> text;  // per id ("[EMPTY_<id>]" for an empty piece, as llama.cpp)
  std::vector<float> score;       // per id
  std::vector<uint8_t> attr;      // per id, Attr bits
  StringMap piece_to_id;
  // BPE merges keyed by merge_key(left, right) -> rank.
  StringMap merge_rank;
  // SPM byte fallback: the token for each byte ("<0xXX>", else the one-byte piece), or kNoToken.
  std::array<TokenId, 256> byte_token{};

  TokenId find(std::string_view piece) const {
    const auto it = piece_to_id.find(piece);
    return it == piece_to_id.end() ? kNoToken : it->second;
  }
  // Rank of merging left+right, or -1. `key` is scratch space.
  int32_t rank(std::string_view left, std::string_view right, std::string& key) const;
};

// The key a merge pair is stored under: unambiguous even if a piece holds a space.
void merge_key(std::string_view left, std::string_view right, std::string& key);

// Builds the index; throws TokenizerError for a malformed vocabulary (size mismatches,
// duplicate pieces, a Byte token that is not "<0xXX>").
VocabIndex build_index(const Vocab& v, bool with_merges);

}  // namespace vsynth::kernels::tok
