// NgramDrafter (kernels/sampler/drafter.h): prompt lookup over hash chains.
#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>

#include "base/mix.h"
#include "kernels/sampler/drafter.h"

namespace vsynth::kernels {

NgramDrafter::NgramDrafter(double prior_rate) : prior_rate_(prior_rate) {}

double NgramDrafter::class_rate(int c) const {
  const double below = c == 0 ? prior_rate_ : class_rate(c - 1);
  return (levels_[c].hits + 2.0 * below) / (levels_[c].trials + 2.0);
}

double NgramDrafter::verify_cost(int k) {
  constexpr int n = static_cast<int>(std::size(kVerifyCost));
  return k <= n ? kVerifyCost[k - 1] : kVerifyCost[n - 1] + kVerifyCostStep * (k - n);
}

int NgramDrafter::best_length(double rate, int max_tokens, double* gain) {
  int best = 1;
  double best_gain = 0.0, expected = 1.0, term = 1.0;  // expected = sum_{i<=d} rate^i
  for (int d = 1; d <= max_tokens; ++d) {
    term *= rate;
    expected += term;
    const double g = expected / verify_cost(d + 1);
    if (g > best_gain) {
      best_gain = g;
      best = d;
    }
  }
  *gain = best_gain;
  return best;
}

int NgramDrafter::match_class(int length) {
  if (length <= 3) return std::max(length, 1) - 1;
  if (length <= 5) return 3;
  if (length <= 8) return 4;
  return length <= 15 ? 5 : 6;
}

uint64_t NgramDrafter::key(std::size_t end, int n) const {
  uint64_t h = static_cast<uint64_t>(n);
  for (std::size_t i = end - static_cast<std::size_t>(n); i < end; ++i) {
    h = base::splitmix64(h ^ static_cast<uint32_t>(tokens_[i]));
  }
  return h;
}

void NgramDrafter::index_end(std::size_t end) {
  for (int n = 1; n <= kMaxN && static_cast<std::size_t>(n) <= end; ++n) {
    Chains& c = chains_[n];
    const auto e = static_cast<int32_t>(end);
    auto [it, inserted] = c.newest.try_emplace(key(end, n), e);
    if (!inserted) {
      c.prev[end] = it->second;
      it->second = e;
    }
  }
}

NgramDrafter::Match NgramDrafter::find(std::size_t end) const {
  // The longest n with an earlier occurrence; among its newest kMaxCandidates occurrences the
  // one matching furthest back (a hash collision matches fewer than n tokens and is skipped).
  for (int n = std::min<int>(kMaxN, static_cast<int>(end)); n >= 1; --n) {
    const Chains& c = chains_[n];
    const auto it = c.newest.find(key(end, n));
    if (it == c.newest.end()) continue;
    Match best;
    int seen = 0;
    for (int32_t e = it->second; e >= 0 && seen < kMaxCandidates;
         e = c.prev[static_cast<std::size_t>(e)], ++seen) {
      const auto room = static_cast<std::size_t>(std::min<int32_t>(e, kMaxMatch));
      std::size_t len = 0;
      while (len < room && tokens_[static_cast<std::size_t>(e) - 1 - len] == tokens_[end - 1 - len])
        ++len;
      if (static_cast<int>(len) >= n && static_cast<int>(len) > best.length) {
        best = {e, static_cast<int>(len)};
      }
    }
    if (best.end >= 0) return best;
  }
  return {};
}

void NgramDrafter::calibrate(TokenId next) {
  const Match m = find(tokens_.size());
  if (m.end < 0) return;
  Level& lv = levels_[match_class(m.length)];
  lv.hits = kDecay * lv.hits + (tokens_[static_cast<std::size_t>(m.end)] == next ? 1.0 : 0.0);
  lv.trials = kDecay * lv.trials + 1.0;
}

std::span<const TokenId> NgramDrafter::propose(std::span<const TokenId> context,
                                               int32_t max_tokens) {
  // Phase 1: each token appended since the last call is a trial of the match before it, then
  // indexed.
  if (context.size() < tokens_.size()) {
    throw std::invalid_argument("NgramDrafter: the context shrank from " +
                                std::to_string(tokens_.size()) + " to " +
                                std::to_string(context.size()) + " tokens without rewind()");
  }
  for (std::size_t i = tokens_.size(); i < context.size(); ++i) {
    calibrate(context[i]);
    tokens_.push_back(context[i]);
    for (int n = 1; n <= kMaxN; ++n) chains_[n].prev.push_back(-1);
    index_end(i);
  }
  draft_.clear();
  if (max_tokens <= 0) return {};

  // Phase 2: the best match, and the draft length its class's keep rate pays for.
  const std::size_t end = tokens_.size();
  const Match m = find(end);
  if (m.end < 0) return {};
  double gain = 0.0;
  const int32_t len = best_length(class_rate(match_class(m.length)), max_tokens, &gain);
  if (gain < 1.0) return {};  // plain decoding is cheaper

  // Phase 3: copy what followed the match; past the context's end the copy reads its own
  // output, so a periodic tail ("a b a b") extends itself.
  for (int32_t j = 0; j < len; ++j) {
    const std::size_t src = static_cast<std::size_t>(m.end) + static_cast<std::size_t>(j);
    draft_.push_back(src < end ? tokens_[src] : draft_[src - end]);
  }
  last_match_ = m.length;
  return draft_;
}

void NgramDrafter::observe(int32_t, int32_t) {}

void NgramDrafter::rewind(std::size_t length) {
  if (length >= tokens_.size()) return;
  // Unindex the n-grams ending at the removed positions, newest first, so every chain's head
  // goes back to the occurrence before it. The keep rates stay: the removed tokens were trials
  // of what this context does.
  for (std::size_t end = tokens_.size() - 1; end >= length; --end) {
    for (int n = 1; n <= kMaxN && static_cast<std::size_t>(n) <= end; ++n) {
      Chains& c = chains_[n];
      const auto it = c.newest.find(key(end, n));
      if (it == c.newest.end() || it->second != static_cast<int32_t>(end)) continue;
      if (c.prev[end] >= 0) {
        it->second = c.prev[end];
      } else {
        c.newest.erase(it);
      }
    }
    if (end == 0) break;
  }
  tokens_.resize(length);
  for (int n = 1; n <= kMaxN; ++n) chains_[n].prev.resize(length);
  if (length == 0) {
    for (Level& lv : levels_) lv = Level{};
    last_match_ = 0;
  }
  draft_.clear();
}

}  // namespace vsynth::kernels
