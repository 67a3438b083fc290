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
  rank_.assign(vocab.attr.size(), -1);
  nodes_.emplace_back();
  for (size_t r = 0; r < ids.size(); ++r) {
    const TokenId id = ids[r];
    rank_[static_cast<size_t>(id)] = static_cast<int32_t>(r);
    int32_t node = 0;
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
  // Every occurrence of every eligible special token, found with one trie walk per position.
  struct Hit {
    int32_t rank;
    size_t pos;
    size_t len;
    TokenId token;
  };
  std::vector<Hit> hits;
  if (nodes_[0].next.empty()) {
    if (!text.empty()) out.push_back({0, text.size(), kNoToken});
    return;
  }
  for (size_t pos = 0; pos < text.size(); ++pos) {
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) break;
      const TokenId id = nodes_[static_cast<size_t>(node)].token;
      if (id == kNoToken) continue;
      const uint8_t a = vocab.attr[static_cast<size_t>(id)];
      // Without parse_control, control and unknown tokens are text, even one that is also
      // user-defined (llama.cpp gives a user-defined "</s>" the control bit).
      if (!parse_control && (a & (kAttrControl | kAttrUnknown))) continue;
      hits.push_back({rank_[static_cast<size_t>(id)], pos, i + 1 - pos, id});
    }
  }
  // Accept in precedence order, each token's occurrences left to right, skipping any that
  // overlaps an accepted one: the same result as splitting token by token.
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos;
  });
  std::vector<uint8_t> taken(text.size(), 0);
  std::vector<Hit> accepted;
  for (const Hit& h : hits) {
    if (std::any_of(taken.begin() + static_cast<std::ptrdiff_t>(h.pos),
                    taken.begin() + static_cast<std::ptrdiff_t>(h.pos + h.len),
                    [](uint8_t t) { return t != 0; })) {
      continue;
    }
    std::fill_n(taken.begin() + static_cast<std::ptrdiff_t>(h.pos), h.len, uint8_t{1});
    accepted.push_back(h);
  }
  std::sort(accepted.begin(), accepted.end(),
            [](const Hit& a, const Hit& b) { return a.pos < b.pos; });
  size_t at = 0;
  for (const Hit& h : accepted) {
    if (h.pos > at) out.push_back({at, h.pos, kNoToken});
    out.push_back({h.pos, h.pos + h.len, h.token});
    at = h.pos + h.len;
  }
  if (at < text.size()) out.push_back({at, text.size(), kNoToken});
}

}  // namespace vsynth::kernels::tok
