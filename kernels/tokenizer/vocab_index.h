// Lookup structures built once from a Vocab and shared by the SPM and BPE encoders (internal to
// kernels/tokenizer/).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
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

// Open-addressing hash table from strings held elsewhere to int32 values: two words per slot,
// no per-entry allocation (262k Gemma pieces build in a few ms). Keys are looked up through a
// caller-supplied accessor, so the table never points into memory that may move.
class FlatIndex {
 public:
  void reserve(size_t n);
  // Inserts `value` under `hash` unless `same(existing_value)` finds an equal key; returns the
  // value now stored for that key.
  template <class Same>
  int32_t insert(uint64_t hash, int32_t value, Same same);
  template <class Same>
  int32_t find(uint64_t hash, Same same) const;

 private:
  struct Slot {
    uint32_t tag = 0;    // high hash bits, to skip most key comparisons
    int32_t value = -1;  // -1: empty
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

uint64_t hash_bytes(std::string_view s);

struct VocabIndex {
  std::vector<std::string> text;  // per id ("[EMPTY_<id>]" for an empty piece, as llama.cpp)
  std::vector<float> score;       // per id
  std::vector<uint8_t> attr;      // per id, Attr bits
  FlatIndex pieces;               // piece text -> id
  // BPE merges: "left right" per rank, with the split position; the index maps a pair to the
  // first rank that merges it.
  std::vector<std::string> merge_text;
  std::vector<uint32_t> merge_split;
  FlatIndex merges;
  // SPM byte fallback: the token for each byte ("<0xXX>", else the one-byte piece), or kNoToken.
  std::array<TokenId, 256> byte_token{};

  TokenId find(std::string_view piece) const;
  // Rank of merging left+right, or -1.
  int32_t rank(std::string_view left, std::string_view right) const;
};

// Builds the index; throws TokenizerError for a malformed vocabulary (size mismatches,
// duplicate pieces, a Byte token that is not "<0xXX>").
VocabIndex build_index(const Vocab& v, bool with_merges);

}  // namespace vsynth::kernels::tok

// ---- FlatIndex templates ----

namespace vsynth::kernels::tok {

template <class Same>
int32_t FlatIndex::insert(uint64_t hash, int32_t value, Same same) {
  const auto tag = static_cast<uint32_t>(hash >> 32);
  for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.value < 0) {
      s = {tag, value};
      return value;
    }
    if (s.tag == tag && same(s.value)) return s.value;
  }
}

template <class Same>
int32_t FlatIndex::find(uint64_t hash, Same same) const {
  if (slots_.empty()) return -1;
  const auto tag = static_cast<uint32_t>(hash >> 32);
  for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.value < 0) return -1;
    if (s.tag == tag && same(s.value)) return s.value;
  }
}

}  // namespace vsynth::kernels::tok
