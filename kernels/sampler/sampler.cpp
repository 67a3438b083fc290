#include "kernels/sampler/sampler.h"

#include "kernels/sampler/sampler_math.h"

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

namespace {

namespace vm = sampler_math;

// The tokens pick chooses among: every id of the vocabulary, or the allowed ones (sorted,
// deduplicated); an id whose logit is -inf or NaN is never one of them.
class Domain {
 public:
  Domain(const float* l, std::size_t n, const TokenMask& mask)
      : l_(l), n_(n), masked_(mask.allowed.has_value()) {
    if (masked_) {
      allowed_ = *mask.allowed;
      std::sort(allowed_.begin(), allowed_.end());
      allowed_.erase(std::unique(allowed_.begin(), allowed_.end()), allowed_.end());
    }
  }
  const float* logits() const { return l_; }
  std::size_t vocab() const { return n_; }
  // Whether an allowed set restricts the domain (the whole-vocabulary kernels do not apply).
  bool masked() const { return masked_; }
  std::size_t allowed_size() const { return allowed_.size(); }

  // f(id, logit) for each token of the domain, in id order.
  template <typename F>
  void each(F&& f) const {
    if (masked_) {
      for (TokenId id : allowed_) {
        const float v = l_[static_cast<std::size_t>(id)];
        if (v > kNegInf) f(id, v);
      }
    } else {
      for (std::size_t i = 0; i < n_; ++i) {
        if (l_[i] > kNegInf) f(static_cast<TokenId>(i), l_[i]);
      }
    }
  }

 private:
  const float* l_;
  std::size_t n_;
  bool masked_;
  std::vector<TokenId> allowed_;
};

struct Best {
  float logit = kNegInf;
  TokenId id = kNoToken;
};

// Phase 1: the highest logit and the first id holding it (greedy needs nothing more);
// kNoToken when the domain is empty.
Best find_best(const Domain& d) {
  Best b;
  if (d.masked()) {
    d.each([&](TokenId id, float v) {
      if (v > b.logit) {  // strict: ties keep the lowest id
        b.logit = v;
        b.id = id;
      }
    });
  } else {
    b.logit = vm::max_of(d.logits(), d.vocab());
    if (b.logit > kNegInf) {
      b.id = static_cast<TokenId>(vm::first_index_of(d.logits(), d.vocab(), b.logit));
    }
  }
  return b;
}

// A token's weight exp((logit - m) / temperature), m the domain's highest logit: in double for
// the candidates' probabilities, in float (the vectorised exp) for sums over the domain.
struct Weights {
  Weights(float max_logit, float temperature)
      : m(max_logit),
        inv_t(1.0 / static_cast<double>(temperature)),
        inv_tf(static_cast<float>(inv_t)) {}
  double of(float v) const { return std::exp((static_cast<double>(v) - m) * inv_t); }
  // Sum of the weights over the whole domain.
  double total(const Domain& d) const {
    if (!d.masked()) return vm::sum_exp(d.logits(), d.vocab(), m, inv_tf);
    double z = 0.0;
    d.each([&](TokenId, float v) { z += vm::exp_nonpos((v - m) * inv_tf); });
    return z;
  }
  float m;
  double inv_t;
  float inv_tf;
};

// Phase 2a, plain temperature sampling (no truncation): the token where the cumulative weight
// first passes unit * total, by the inverse CDF, no selection. Unmasked, it walks 256-token
// blocks by their vectorised sums, then the block holding the draw token by token. A rounding
// shortfall at the very end gives the last token of the domain.
TokenId draw_plain(const Domain& d, const Weights& w, TokenId best, double unit) {
  const double u = unit * w.total(d);
  double acc = 0.0;
  TokenId last = best;
  if (d.masked()) {
    TokenId chosen = kNoToken;
    d.each([&](TokenId id, float v) {
      if (chosen != kNoToken) return;
      acc += vm::exp_nonpos((v - w.m) * w.inv_tf);
      last = id;
      if (acc > u) chosen = id;
    });
    return chosen != kNoToken ? chosen : last;
  }
  const float* l = d.logits();
  const std::size_t n = d.vocab();
  constexpr std::size_t kWalkBlock = 256;
  for (std::size_t b = 0; b < n; b += kWalkBlock) {
    const std::size_t len = std::min(kWalkBlock, n - b);
    const double block = vm::sum_exp(l + b, len, w.m, w.inv_tf);
    if (acc + block <= u) {
      acc += block;
      continue;
    }
    for (std::size_t i = b; i < b + len; ++i) {
      if (!(l[i] > kNegInf)) continue;
      acc += vm::exp_nonpos((l[i] - w.m) * w.inv_tf);
      last = static_cast<TokenId>(i);
      if (acc > u) return last;
    }
  }
  return last;
}

// The k best tokens of the domain into heap, best first; returns how many tokens the domain
// holds, or (unmasked, heap not full) just the heap's size: only a full heap needs to know how
// much it left out.
std::size_t collect_best(const Domain& d, std::size_t k, std::vector<vm::Scored>& heap) {
  if (!d.masked()) {
    vm::top_k(d.logits(), d.vocab(), k, heap);
    return heap.size() < k ? heap.size() : vm::count_finite(d.logits(), d.vocab());
  }
  const auto cmp = [](const vm::Scored& a, const vm::Scored& b) { return better(a, b); };
  std::size_t domain = 0;
  heap.clear();
  heap.reserve(std::min(k, d.allowed_size()));
  d.each([&](TokenId id, float v) {
    ++domain;
    const vm::Scored c{v, id};
    if (heap.size() < k) {
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), cmp);
    } else if (better(c, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), cmp);
      heap.back() = c;
      std::push_heap(heap.begin(), heap.end(), cmp);
    }
  });
  std::sort_heap(heap.begin(), heap.end(), cmp);  // best first
  return domain;
}

// How many of the candidates (weights probs, best first, normalised by denom) top-p and min-p
// keep, and whether either cut inside them.
struct Cut {
  std::size_t keep;
  bool cut;
};
Cut cut_top_p_min_p(const std::vector<double>& probs, double denom, const SamplerParams& p) {
  Cut c{probs.size(), false};
  if (p.top_p < 1.0f) {
    double acc = 0.0;
    for (std::size_t i = 0; i < probs.size(); ++i) {
      acc += probs[i] / denom;
      if (acc >= p.top_p) {
        c = {i + 1, true};
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    const double floor = static_cast<double>(p.min_p) * probs[0];
    for (std::size_t i = 1; i < c.keep; ++i) {
      if (probs[i] < floor) {
        c = {i, true};
        break;
      }
    }
  }
  return c;
}

// Phase 2b, truncated sampling: the candidates top-k, top-p and min-p keep, heap[0, keep) best
// first with their weights in probs. Without top-k the heap starts at 64 and widens 8x until the
// top-p mass or the min-p cut falls inside it (or it holds the whole domain).
std::size_t truncate(const Domain& d, const Weights& w, const SamplerParams& p,
                     std::vector<vm::Scored>& heap, std::vector<double>& probs) {
  const bool by_k = p.top_k > 0;
  std::size_t k = by_k ? static_cast<std::size_t>(p.top_k) : 64;
  double z_all = -1.0;  // computed once, only when top-p needs the whole domain's mass
  while (true) {
    const std::size_t domain = collect_best(d, k, heap);
    const std::size_t s = heap.size();
    probs.resize(s);
    double sum = 0.0;
    for (std::size_t i = 0; i < s; ++i) sum += probs[i] = w.of(heap[i].logit);
    const bool whole = by_k || s >= domain;  // the heap holds the whole (truncated) domain
    double denom = sum;
    if (!whole && p.top_p < 1.0f) {
      if (z_all < 0) z_all = w.total(d);
      denom = std::max(z_all, sum);
    }
    const Cut c = cut_top_p_min_p(probs, denom, p);
    if (whole || c.cut) return c.keep;
    k = std::min(domain, k * 8);  // the cut lies beyond the heap: widen it
  }
}

// Phase 3: one draw among the kept candidates, in proportion to their weights.
TokenId draw_kept(const std::vector<vm::Scored>& heap, const std::vector<double>& probs,
                  std::size_t keep, double unit) {
  double total = 0.0;
  for (std::size_t i = 0; i < keep; ++i) total += probs[i];
  const double u = unit * total;
  double acc = 0.0;
  for (std::size_t i = 0; i < keep; ++i) {
    acc += probs[i];
    if (acc > u) return heap[i].id;
  }
  return heap[keep - 1].id;
}

}  // namespace

TokenId Sampler::pick(const float* l, std::size_t n, const TokenMask& mask) {
  const Domain domain(l, n, mask);
  const Best best = find_best(domain);
  if (best.id == kNoToken || params_.temperature <= 0.0f) return best.id;
  const Weights w(best.logit, params_.temperature);
  const SamplerParams& p = params_;
  if (p.top_k == 0 && p.top_p >= 1.0f && p.min_p <= 0.0f) {
    return draw_plain(domain, w, best.id, rng_.uniform());
  }
  const std::size_t keep = truncate(domain, w, p, heap_, probs_);
  return draw_kept(heap_, probs_, keep, rng_.uniform());
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
