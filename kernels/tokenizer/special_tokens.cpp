#include "kernels/tokenizer/special_tokens.h"

#include <algorithm>
#include <numeric>

namespace vsynth::kernels::tok {

namespace {
constexpr uint8_t kSpecialAttrs = kAttrControl | kAttrUserDefined | kAttrUnknown;
}

SpecialMatcher::SpecialMatcher(const VocabIndex& vocab) {
  std::vector<TokenId> ids;
  for (size_t i = 0; i < vocab.attr.size(); ++i) {
    if (vocab.attr[i] & kSpecialAttrs) ids.push_back(static_cast<TokenId>(i));
  }
  // Longest first; equal lengths by id (llama.cpp leaves that order unspecified).
  std::stable_sort(ids.begin(), ids.end(), [&](TokenId a, TokenId b) {
    return vocab.text[static_cast<size_t>(a)].size() > vocab.text[static_cast<size_t>(b)].size();
  });
  by_rank_ = ids;
  rank_.assign(vocab.attr.size(), -1);
  nodes_.emplace_back();
  for (size_t r = 0; r < ids.size(); ++r) {
    const TokenId id = ids[r];
    rank_[static_cast<size_t>(id)] = static_cast<int32_t>(r);
    int32_t node = 0;
    starts_[static_cast<uint8_t>(vocab.text[static_cast<size_t>(id)][0])] = true;
    for (char ch : vocab.text[static_cast<size_t>(id)]) {
      const auto b = static_cast<uint8_t>(ch);
      int32_t nx = child(node, b);
      if (nx < 0) {
        nx = static_cast<int32_t>(nodes_.size());
        auto& kids = nodes_[static_cast<size_t>(node)].next;
        kids.insert(std::lower_bound(kids.begin(), kids.end(), std::pair<uint8_t, int32_t>(b, 0)),
                    {b, nx});
        nodes_.emplace_back();
      }
      node = nx;
    }
    nodes_[static_cast<size_t>(node)].token = id;
  }
}

int32_t SpecialMatcher::child(int32_t node, uint8_t byte) const {
  const auto& kids = nodes_[static_cast<size_t>(node)].next;
  const auto it = std::lower_bound(kids.begin(), kids.end(), std::pair<uint8_t, int32_t>(byte, 0));
  return (it != kids.end() && it->first == byte) ? it->second : -1;
}

void SpecialMatcher::split(const VocabIndex& vocab, std::string_view text, bool parse_control,
                           std::vector<Fragment>& out) const {
  if (text.empty()) return;

  // Pass 1: which eligible special tokens occur anywhere, with one trie walk per position.
  std::vector<int32_t> present;
  std::vector<uint8_t> seen(by_rank_.size(), 0);
  for (size_t pos = 0; pos < text.size(); ++pos) {
    if (!starts_[static_cast<uint8_t>(text[pos])]) continue;
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) break;
      const TokenId id = nodes_[static_cast<size_t>(node)].token;
      if (id == kNoToken) continue;
      // Without parse_control, control and unknown tokens are text, even one that is also
      // user-defined (llama.cpp gives a user-defined "</s>" the control bit).
      if (!parse_control && (vocab.attr[static_cast<size_t>(id)] & (kAttrControl | kAttrUnknown))) {
        continue;
      }
      const int32_t r = rank_[static_cast<size_t>(id)];
      if (!seen[static_cast<size_t>(r)]) {
        seen[static_cast<size_t>(r)] = 1;
        present.push_back(r);
      }
    }
  }
  std::sort(present.begin(), present.end());

  // Pass 2, llama.cpp's order: each present token, longest first, is split out of the text
  // that no earlier token took, leftmost occurrence first. An occurrence overlapping taken
  // bytes lies across a fragment boundary, which llama.cpp's per-fragment search never sees.
  std::vector<uint8_t> taken(text.size(), 0);
  std::vector<Fragment> specials;
  for (int32_t r : present) {
    const TokenId id = by_rank_[static_cast<size_t>(r)];
    const std::string_view piece = vocab.text[static_cast<size_t>(id)];
    for (size_t at = 0, hit; (hit = text.find(piece, at)) != std::string_view::npos;) {
      const auto first = taken.begin() + static_cast<std::ptrdiff_t>(hit);
      const auto last = first + static_cast<std::ptrdiff_t>(piece.size());
      if (std::find(first, last, uint8_t{1}) != last) {
        at = hit + 1;
        continue;
      }
      std::fill(first, last, uint8_t{1});
      specials.push_back({hit, hit + piece.size(), id});
      at = hit + piece.size();
    }
  }
  std::sort(specials.begin(), specials.end(),
            [](const Fragment& a, const Fragment& b) { return a.begin < b.begin; });
  size_t at = 0;
  for (const Fragment& f : specials) {
    if (f.begin > at) out.push_back({at, f.begin, kNoToken});
    out.push_back(f);
    at = f.end;
  }
  if (at < text.size()) out.push_back({at, text.size(), kNoToken});
}

}  // namespace vsynth::kernels::tok
