#include "kernels/tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include "kernels/tokenizer/unicode.h"

namespace vsynth::kernels::tok {

namespace {

struct Symbol {
  int prev;
  int next;
  size_t off;
  size_t len;  // 0 once merged into its left neighbour
};

struct Bigram {
  int32_t rank;
  int left;
  int right;
  size_t left_len;  // lengths when queued: a changed symbol makes the entry stale
  size_t right_len;
};

// Lowest rank first; on equal ranks the leftmost pair first.
struct Later {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

void bpe_encode_word(const VocabIndex& vocab, std::string_view word, bool ignore_merges,
                     std::vector<TokenId>& out) {
  if (word.empty()) return;
  if (ignore_merges) {
    if (const TokenId id = vocab.find(word); id != kNoToken) {
      out.push_back(id);
      return;
    }
  }
  std::vector<Symbol> sym;
  sym.reserve(word.size());
  for (size_t off = 0; off < word.size();) {
    const size_t len =
        std::min(unicode::utf8_lead_len(static_cast<uint8_t>(word[off])), word.size() - off);
    const int i = static_cast<int>(sym.size());
    sym.push_back({i - 1, off + len == word.size() ? -1 : i + 1, off, len});
    off += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, Later> queue;
  const auto try_pair = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    const int32_t rank =
        vocab.rank(word.substr(sym[l].off, sym[l].len), word.substr(sym[r].off, sym[r].len));
    if (rank >= 0) queue.push({rank, l, r, sym[l].len, sym[r].len});
  };
  for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = sym[b.left];
    Symbol& r = sym[b.right];
    if (l.len != b.left_len || r.len != b.right_len || r.len == 0) continue;  // stale
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    try_pair(l.prev, b.left);
    try_pair(b.left, l.next);
  }

  for (int i = 0; i != -1; i = sym[i].next) {
    const std::string_view piece = word.substr(sym[i].off, sym[i].len);
    const TokenId id = vocab.find(piece);
    if (id != kNoToken) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const TokenId bt = vocab.find(std::string_view(&c, 1));
      if (bt != kNoToken) out.push_back(bt);
    }
  }
}

}  // namespace vsynth::kernels::tok
