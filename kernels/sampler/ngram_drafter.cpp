// NgramDrafter (kernels/sampler/drafter.h): prompt lookup over hash chains.
#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>

#include "kernels/sampler/drafter.h"

namespace vsynth::kernels {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser: a full-avalanche 64-bit hash step
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

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

uint64_t NgramDrafter::key(std::size_t end, int n) const {
  uint64_t h = static_cast<uint64_t>(n);
  for (std::size_t i = end - static_cast<std::size_t>(n); i < end; ++i) {
    h = mix(h ^ static_cast<uint32_t>(tokens_[i]));
  }
  return h;
}

void NgramDrafter::index_end(std::size_t end) {
  for (int n = 1; n <= kMaxN && static_cast<std::size_t>(n) <= end; ++n) {
    Level& lv = levels_[n];
    const auto e = static_cast<int32_t>(end);
    auto [it, inserted] = lv.newest.try_emplace(key(end, n), e);
    if (!inserted) {
      lv.prev[end] = it->second;
      it->second = e;
    }
  }
}

int32_t NgramDrafter::find(std::size_t end, int n) const {
  const Level& lv = levels_[n];
  const auto it = lv.newest.find(key(end, n));
  if (it == lv.newest.end()) return -1;
  // Walk the chain past hash collisions (vanishingly rare with 64-bit keys; checked anyway).
  const auto len = static_cast<std::ptrdiff_t>(n);
  const auto query = tokens_.begin() + static_cast<std::ptrdiff_t>(end) - len;
  for (int32_t e = it->second; e >= 0; e = lv.prev[static_cast<std::size_t>(e)]) {
    if (std::equal(query, query + len, tokens_.begin() + e - len)) return e;
  }
  return -1;
}

std::span<const TokenId> NgramDrafter::propose(std::span<const TokenId> context,
                                               int32_t max_tokens) {
  // Phase 1: index the tokens appended since the last call.
  if (context.size() < tokens_.size()) {
    throw std::invalid_argument("NgramDrafter: the context shrank from " +
                                std::to_string(tokens_.size()) + " to " +
                                std::to_string(context.size()) + " tokens without rewind()");
  }
  for (std::size_t i = tokens_.size(); i < context.size(); ++i) {
    tokens_.push_back(context[i]);
    for (int n = 1; n <= kMaxN; ++n) levels_[n].prev.push_back(-1);
    index_end(i);
  }
  draft_.clear();
  pending_n_ = 0;
  if (max_tokens <= 0) return {};

  // Phase 2: the longest n whose last n tokens occurred before and that is not paused.
  const std::size_t end = tokens_.size();
  for (int n = std::min<int>(kMaxN, static_cast<int>(end)); n >= 1; --n) {
    const int32_t at = find(end, n);
    if (at < 0) continue;
    Level& lv = levels_[n];
    double gain = 0.0;
    int32_t len = best_length(lv.hits / lv.trials, max_tokens, &gain);
    if (gain < 1.0) {  // plain decoding is cheaper: probe now and then
      if (++lv.skipped % kProbeEvery != 0) continue;
      len = 1;
    }

    // Phase 3: copy what followed the match; past the context's end the copy reads its own
    // output, so a periodic tail ("a b a b") extends itself.
    for (int32_t j = 0; j < len; ++j) {
      const std::size_t src = static_cast<std::size_t>(at) + static_cast<std::size_t>(j);
      draft_.push_back(src < end ? tokens_[src] : draft_[src - end]);
    }
    pending_n_ = last_n_ = n;
    return draft_;
  }
  return {};
}

void NgramDrafter::observe(int32_t drafted, int32_t accepted) {
  if (pending_n_ == 0 || drafted <= 0) return;
  Level& lv = levels_[pending_n_];
  pending_n_ = 0;
  // Geometric trials: each kept token is a success; the first rejected one ends the draft.
  lv.hits = kDecay * lv.hits + accepted;
  lv.trials = kDecay * lv.trials + accepted + (accepted < drafted ? 1 : 0);
}

void NgramDrafter::rewind(std::size_t length) {
  if (length >= tokens_.size()) return;
  // Unindex the n-grams ending at the removed positions, newest first, so every chain's head
  // goes back to the occurrence before it.
  for (std::size_t end = tokens_.size() - 1; end >= length; --end) {
    for (int n = 1; n <= kMaxN && static_cast<std::size_t>(n) <= end; ++n) {
      Level& lv = levels_[n];
      const auto it = lv.newest.find(key(end, n));
      if (it == lv.newest.end() || it->second != static_cast<int32_t>(end)) continue;
      if (lv.prev[end] >= 0) {
        it->second = lv.prev[end];
      } else {
        lv.newest.erase(it);
      }
    }
    if (end == 0) break;
  }
  tokens_.resize(length);
  for (int n = 1; n <= kMaxN; ++n) levels_[n].prev.resize(length);
  if (length == 0) {
    for (Level& lv : levels_) {
      lv = Level{};
      lv.hits = 2.0 * prior_rate_;
    }
    last_n_ = 0;
  }
  draft_.clear();
  pending_n_ = 0;
}

}  // namespace vsynth::kernels
