#include "kernels/tokenizer/spm.h"

#include <algorithm>
#include <queue>

#include "kernels/tokenizer/unicode.h"

namespace vsynth::kernels::tok {

namespace {

// A run of bytes [off, off + len) of the text, linked to its neighbours; len 0 once merged away.
struct Symbol {
  int prev;
  int next;
  size_t off;
  size_t len;
};

struct Bigram {
  float score;
  int left;
  int right;
  size_t len;  // len(left) + len(right) when queued: a changed symbol makes the entry stale
};

// Highest score first; on equal scores the leftmost pair first.
struct Lower {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void spm_encode(const VocabIndex& vocab, std::string_view text, TokenId unk,
                std::vector<TokenId>& out) {
  if (text.empty()) return;
  std::vector<Symbol> sym;
  sym.reserve(text.size());
  for (size_t off = 0; off < text.size();) {
    // The lead byte's announced length, unchecked (invalid UTF-8 splits as llama.cpp splits it).
    const size_t len =
        std::min(unicode::utf8_lead_len(static_cast<uint8_t>(text[off])), text.size() - off);
    const int i = static_cast<int>(sym.size());
    sym.push_back({i - 1, off + len == text.size() ? -1 : i + 1, off, len});
    off += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, Lower> queue;
  const auto try_pair = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    const size_t len = sym[l].len + sym[r].len;
    const TokenId id = vocab.find(text.substr(sym[l].off, len));
    if (id == kNoToken) return;
    queue.push({vocab.score[static_cast<size_t>(id)], l, r, len});
  };
  for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = sym[b.left];
    Symbol& r = sym[b.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;  // stale
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    try_pair(l.prev, b.left);
    try_pair(b.left, l.next);
  }

  for (int i = 0; i != -1; i = sym[i].next) {
    const std::string_view piece = text.substr(sym[i].off, sym[i].len);
    const TokenId id = vocab.find(piece);
    if (id != kNoToken) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const TokenId bt = vocab.byte_token[static_cast<uint8_t>(c)];
      if (bt != kNoToken) {
        out.push_back(bt);
      } else if (unk != kNoToken) {
        out.push_back(unk);
      }
    }
  }
}

}  // namespace vsynth::kernels::tok
