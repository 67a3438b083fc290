#include "stages/grammar/vocab_table.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <string_view>

namespace vsynth::stages::grammar {

namespace {

bool is_word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c >= 0x80;
}

// The word class of `p` (spaces * 3 + 0: spaces only, 1: a word, 2: a word starting with a
// digit), or -1 when `p` holds other bytes.
long word_class(std::string_view p) {
  std::size_t n = 0;
  while (n < p.size() && p[n] == ' ') ++n;
  for (std::size_t i = n; i < p.size(); ++i) {
    if (!is_word_byte(static_cast<unsigned char>(p[i]))) return -1;
  }
  if (n == p.size()) return static_cast<long>(n * 3);
  const bool digit = p[n] >= '0' && p[n] <= '9';
  return static_cast<long>(n * 3 + (digit ? 2 : 1));
}

}  // namespace

VocabTable::VocabTable(const kernels::Tokenizer& tok) : vocab_(tok.size()) {
  const auto t0 = std::chrono::steady_clock::now();
  // Phase 1: every token's bytes.
  std::vector<std::string> pieces(vocab_);
  std::vector<kernels::TokenId> ids;                       // the rest
  std::vector<std::pair<long, kernels::TokenId>> classed;  // (word class, id)
  for (std::size_t i = 0; i < vocab_; ++i) {
    const auto id = static_cast<kernels::TokenId>(i);
    if (tok.is_eog(id)) {
      eog_.push_back(id);
      continue;
    }
    pieces[i] = tok.piece(id);
    if (pieces[i].empty()) {
      empty_.push_back(id);
    } else if (const long k = word_class(pieces[i]); k >= 0) {
      classed.emplace_back(k, id);
    } else {
      ids.push_back(id);
    }
  }
  // Phase 2: the word classes, each with its members contiguous.
  std::sort(classed.begin(), classed.end());
  for (std::size_t i = 0; i < classed.size(); ++i) {
    if (i == 0 || classed[i].first != classed[i - 1].first) {
      if (!classes_.empty()) classes_.back().end = static_cast<uint32_t>(i);
      classes_.push_back(
          {pieces[static_cast<std::size_t>(classed[i].second)], static_cast<uint32_t>(i), 0});
    }
    class_ids_.push_back(classed[i].second);
  }
  if (!classes_.empty()) classes_.back().end = static_cast<uint32_t>(classed.size());
  // Phase 3: the rest sorted by bytes, with the prefix each shares with its predecessor.
  std::sort(ids.begin(), ids.end(), [&](kernels::TokenId a, kernels::TokenId b) {
    return pieces[static_cast<std::size_t>(a)] < pieces[static_cast<std::size_t>(b)];
  });
  order_ = ids;
  start_.reserve(ids.size() + 1);
  lcp_.reserve(ids.size());
  std::string_view prev;
  for (kernels::TokenId id : ids) {
    const std::string& p = pieces[static_cast<std::size_t>(id)];
    std::size_t l = 0;
    while (l < prev.size() && l < p.size() && prev[l] == p[l]) ++l;
    lcp_.push_back(static_cast<uint16_t>(std::min<std::size_t>(l, 0xFFFF)));
    start_.push_back(static_cast<uint32_t>(bytes_.size()));
    bytes_ += p;
    max_len_ = std::max(max_len_, p.size());
    prev = p;
  }
  start_.push_back(static_cast<uint32_t>(bytes_.size()));
  build_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::size_t VocabTable::walk(const Program& p, const ProgramState& s,
                             std::vector<ProgramState>& scratch,
                             std::vector<kernels::TokenId>& dead) const {
  std::size_t steps = 0;
  // Word classes: one representative each.
  for (const WordClass& c : classes_) {
    ProgramState t = s;
    steps += c.representative.size();
    if (!p.feed(t, c.representative)) {
      dead.insert(dead.end(), class_ids_.begin() + c.begin, class_ids_.begin() + c.end);
    }
  }
  // The rest: the flattened trie.
  scratch.resize(max_len_ + 1);
  scratch[0] = s;
  constexpr std::size_t kAlive = std::numeric_limits<std::size_t>::max();
  // The depth at which the current token's path first failed (kAlive: it did not);
  // scratch[0 .. min(len, failed - 1)] are the states along that path.
  std::size_t failed = kAlive;
  const char* bytes = bytes_.data();
  for (std::size_t k = 0; k < order_.size(); ++k) {
    const std::size_t shared = lcp_[k];
    const std::size_t len = start_[k + 1] - start_[k];
    if (failed <= shared) {  // below a prefix that already failed
      dead.push_back(order_[k]);
      continue;
    }
    failed = kAlive;
    const char* b = bytes + start_[k];
    for (std::size_t j = shared; j < len; ++j) {
      scratch[j + 1] = scratch[j];
      ++steps;
      if (!p.feed(scratch[j + 1], b[j])) {
        failed = j + 1;
        break;
      }
    }
    if (failed != kAlive) dead.push_back(order_[k]);
  }
  return steps;
}

}  // namespace vsynth::stages::grammar
