#include "kernels/sampler/sampler.h"

#include "kernels/sampler/vec_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace vsynth::kernels {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

using sampler_math::better;  // higher logit first, then lower id (deterministic ties)

void check_id(TokenId id, std::size_t n, const char* what) {
  if (id < 0 || static_cast<std::size_t>(id) >= n) {
    throw SamplerError(std::string("sampler: ") + what + " token id " + std::to_string(id) +
                       " is outside the vocabulary [0, " + std::to_string(n) + ")");
  }
}

}  // namespace

void SamplerParams::validate() const {
  auto fail = [](const std::string& field, const std::string& valid, double got) {
    throw SamplerError("sampler: " + field + " = " + std::to_string(got) + " is invalid (" + valid +
                       ")");
  };
  if (!std::isfinite(temperature) || temperature < 0) {
    fail("temperature", "a finite value >= 0; 0 means greedy", temperature);
  }
  if (top_k < 0) fail("top_k", ">= 0; 0 turns it off", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f)) fail("top_p", "in (0, 1]; 1 turns it off", top_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f)) fail("min_p", "in [0, 1]; 0 turns it off", min_p);
  if (!(repeat_penalty > 0.0f) || !std::isfinite(repeat_penalty)) {
    fail("repeat_penalty", "a finite value > 0; 1 turns it off", repeat_penalty);
  }
  if (!std::isfinite(presence_penalty)) fail("presence_penalty", "finite", presence_penalty);
  if (!std::isfinite(frequency_penalty)) fail("frequency_penalty", "finite", frequency_penalty);
  if (repeat_last_n < -1) fail("repeat_last_n", ">= -1; -1 means the whole history", repeat_last_n);
  if (n_logprobs < 0 || n_logprobs > 1000) fail("n_logprobs", "in [0, 1000]", n_logprobs);
}

Sampler::Sampler(SamplerParams params) : params_(params), rng_(params.seed) {
  params_.validate();
}

void Sampler::set_temperature(float t) {
  SamplerParams p = params_;
  p.temperature = t;
  p.validate();
  params_ = p;
}

namespace {
// log_sum_exp given the logits' maximum m.
float log_sum_exp_from(std::span<const float> logits, float m) {
  if (!(m > kNegInf)) return kNegInf;
  return m +
         static_cast<float>(std::log(sampler_math::sum_exp(logits.data(), logits.size(), m, 1.0f)));
}
}  // namespace

float log_sum_exp(std::span<const float> logits) {
  return log_sum_exp_from(logits, sampler_math::max_of(logits.data(), logits.size()));
}

std::vector<TokenLogprob> top_logits(std::span<const float> logits, std::size_t n) {
  std::vector<sampler_math::Scored> best;
  sampler_math::top_k(logits.data(), logits.size(), n, best);
  std::vector<TokenLogprob> out;
  out.reserve(best.size());
  for (const auto& c : best) out.push_back({c.id, c.logit});
  return out;
}

const float* Sampler::prepare(std::span<const float> logits, std::span<const TokenId> history,
                              const TokenMask& mask) {
  const std::size_t n = logits.size();
  const SamplerParams& p = params_;
  const bool penalize =
      p.repeat_last_n != 0 && !history.empty() &&
      (p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f);
  for (TokenId b : mask.banned) check_id(b, n, "banned");
  if (mask.allowed) {
    for (TokenId a : *mask.allowed) check_id(a, n, "allowed");
  }
  if (!penalize && mask.banned.empty()) return logits.data();

  work_.assign(logits.begin(), logits.end());
  if (penalize) {
    const std::size_t take =
        p.repeat_last_n < 0
            ? history.size()
            : std::min<std::size_t>(history.size(), static_cast<std::size_t>(p.repeat_last_n));
    window_.assign(history.end() - static_cast<std::ptrdiff_t>(take), history.end());
    std::sort(window_.begin(), window_.end());
    for (std::size_t i = 0; i < window_.size();) {
      std::size_t j = i;
      while (j < window_.size() && window_[j] == window_[i]) ++j;
      const TokenId t = window_[i];
      const auto count = static_cast<float>(j - i);
      i = j;
      if (t < 0 || static_cast<std::size_t>(t) >= n) continue;  // e.g. a kNoToken filler
      float& v = work_[static_cast<std::size_t>(t)];
      if (p.repeat_penalty != 1.0f) v = v > 0 ? v / p.repeat_penalty : v * p.repeat_penalty;
      v -= count * p.frequency_penalty + p.presence_penalty;
    }
  }
  for (TokenId b : mask.banned) work_[static_cast<std::size_t>(b)] = kNegInf;
  return work_.data();
}

TokenId Sampler::pick(const float* l, std::size_t n, const TokenMask& mask) {
  namespace vm = sampler_math;
  // The domain: every id, or the allowed ones (sorted, deduplicated), minus -inf/NaN logits.
  std::vector<TokenId> allowed;
  if (mask.allowed) {
    allowed = *mask.allowed;
    std::sort(allowed.begin(), allowed.end());
    allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  }
  auto for_domain = [&](auto&& f) {
    if (mask.allowed) {
      for (TokenId id : allowed) {
        const float v = l[static_cast<std::size_t>(id)];
        if (v > kNegInf) f(id, v);
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        if (l[i] > kNegInf) f(static_cast<TokenId>(i), l[i]);
      }
    }
  };

  // The maximum and the first id holding it (greedy needs nothing more).
  float m = kNegInf;
  TokenId best = kNoToken;
  if (mask.allowed) {
    for_domain([&](TokenId id, float v) {
      if (v > m) {  // strict: ties keep the lowest id
        m = v;
        best = id;
      }
    });
  } else {
    m = vm::max_of(l, n);
    if (m > kNegInf) best = static_cast<TokenId>(vm::first_index_of(l, n, m));
  }
  if (best == kNoToken || params_.temperature <= 0.0f) return best;

  const SamplerParams& p = params_;
  const double inv_t = 1.0 / static_cast<double>(p.temperature);
  const auto inv_tf = static_cast<float>(inv_t);
  auto weight = [&](float v) { return std::exp((static_cast<double>(v) - m) * inv_t); };
  // Sum of weights over the whole domain.
  auto total_weight = [&] {
    if (!mask.allowed) return vm::sum_exp(l, n, m, inv_tf);
    double z = 0.0;
    for_domain([&](TokenId, float v) { z += vm::exp_nonpos((v - m) * inv_tf); });
    return z;
  };

  if (p.top_k == 0 && p.top_p >= 1.0f && p.min_p <= 0.0f) {
    // Plain temperature sampling over the whole domain: inverse CDF, no selection. Walks
    // 256-token blocks by their vectorised sums, then the block holding the draw token by token.
    const double u = rng_.uniform() * total_weight();
    double acc = 0.0;
    TokenId last = best;
    if (mask.allowed) {
      TokenId chosen = kNoToken;
      for_domain([&](TokenId id, float v) {
        if (chosen != kNoToken) return;
        acc += vm::exp_nonpos((v - m) * inv_tf);
        last = id;
        if (acc > u) chosen = id;
      });
      return chosen != kNoToken ? chosen : last;
    }
    constexpr std::size_t kWalkBlock = 256;
    for (std::size_t b = 0; b < n; b += kWalkBlock) {
      const std::size_t len = std::min(kWalkBlock, n - b);
      const double block = vm::sum_exp(l + b, len, m, inv_tf);
      if (acc + block <= u) {
        acc += block;
        continue;
      }
      for (std::size_t i = b; i < b + len; ++i) {
        if (!(l[i] > kNegInf)) continue;
        acc += vm::exp_nonpos((l[i] - m) * inv_tf);
        last = static_cast<TokenId>(i);
        if (acc > u) return last;
      }
    }
    return last;  // rounding at the very end of the walk
  }

  auto cmp = [](const Cand& a, const Cand& b) { return better(a, b); };
  const bool by_k = p.top_k > 0;
  std::size_t k = by_k ? static_cast<std::size_t>(p.top_k) : 64;
  double z_all = -1.0;  // computed once, only when top-p needs the whole domain's mass
  std::size_t keep = 0;
  while (true) {
    std::size_t domain = 0;
    if (mask.allowed) {
      heap_.clear();
      heap_.reserve(std::min(k, allowed.size()));
      for_domain([&](TokenId id, float v) {
        ++domain;
        const Cand c{v, id};
        if (heap_.size() < k) {
          heap_.push_back(c);
          std::push_heap(heap_.begin(), heap_.end(), cmp);
        } else if (better(c, heap_.front())) {
          std::pop_heap(heap_.begin(), heap_.end(), cmp);
          heap_.back() = c;
          std::push_heap(heap_.begin(), heap_.end(), cmp);
        }
      });
      std::sort_heap(heap_.begin(), heap_.end(), cmp);  // best first
    } else {
      vm::top_k(l, n, k, heap_);
      // Only a heap that came back full needs to know how much it left out.
      domain = heap_.size() < k ? heap_.size() : vm::count_finite(l, n);
    }
    const std::size_t s = heap_.size();
    probs_.resize(s);
    double sum = 0.0;
    for (std::size_t i = 0; i < s; ++i) sum += probs_[i] = weight(heap_[i].logit);
    const bool whole = by_k || s >= domain;  // the heap holds the whole (truncated) domain
    double denom = sum;
    if (!whole && p.top_p < 1.0f) {
      if (z_all < 0) z_all = total_weight();
      denom = std::max(z_all, sum);
    }
    keep = s;
    bool cut = false;
    if (p.top_p < 1.0f) {
      double acc = 0.0;
      for (std::size_t i = 0; i < s; ++i) {
        acc += probs_[i] / denom;
        if (acc >= p.top_p) {
          keep = i + 1;
          cut = true;
          break;
        }
      }
    }
    if (p.min_p > 0.0f) {
      const double floor = static_cast<double>(p.min_p) * probs_[0];
      for (std::size_t i = 1; i < keep; ++i) {
        if (probs_[i] < floor) {
          keep = i;
          cut = true;
          break;
        }
      }
    }
    if (whole || cut) break;
    k = std::min(domain, k * 8);  // the cut lies beyond the heap: widen it
  }

  double total = 0.0;
  for (std::size_t i = 0; i < keep; ++i) total += probs_[i];
  const double u = rng_.uniform() * total;
  double acc = 0.0;
  for (std::size_t i = 0; i < keep; ++i) {
    acc += probs_[i];
    if (acc > u) return heap_[i].id;
  }
  return heap_[keep - 1].id;
}

Sample Sampler::sample(std::span<const float> logits, std::span<const TokenId> history,
                       const TokenMask& mask) {
  if (logits.empty()) throw SamplerError("sampler: empty logits (vocabulary of size 0)");
  const float* l = prepare(logits, history, mask);
  Sample out;
  out.token = pick(l, logits.size(), mask);
  if (out.token != kNoToken) {
    // Greedy over the raw logits picked their maximum: no second pass to find it.
    const bool raw_max = params_.temperature <= 0.0f && l == logits.data() && !mask.allowed;
    const float lse = raw_max
                          ? log_sum_exp_from(logits, logits[static_cast<std::size_t>(out.token)])
                          : log_sum_exp(logits);
    out.logprob = logits[static_cast<std::size_t>(out.token)] - lse;
    if (params_.n_logprobs > 0) {
      out.top = top_logits(logits, static_cast<std::size_t>(params_.n_logprobs));
      for (TokenLogprob& t : out.top) t.logprob -= lse;
    }
  }
  return out;
}

}  // namespace vsynth::kernels
