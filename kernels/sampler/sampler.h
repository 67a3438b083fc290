// Sampler: picks the next token from one decode step's logits.
//
//   Sampler s({.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 7});
//   Sample next = s.sample(logits, history, mask);   // logits: [n_vocab] floats
//
// Per step, in this order (Hugging Face's warper order; llama.cpp applies temperature last):
//   1. penalties over the last `repeat_last_n` tokens of `history`: the CTRL repetition penalty
//      (a positive logit is divided by repeat_penalty, a negative one multiplied), then
//      frequency (× occurrences) and presence (once) penalties subtracted, as OpenAI defines them;
//   2. the mask: banned tokens removed, and when `allowed` is set, everything else removed;
//   3. temperature <= 0: greedy (the highest logit; ties go to the lowest id);
//   4. otherwise logits / temperature, then top-k, top-p (smallest set of most likely tokens
//      whose mass reaches top_p, renormalised after top-k) and min-p (tokens at least min_p
//      times as likely as the most likely one), then one draw from what is left.
//
// Cost on a 262144-token vocabulary: top-k and the top-p/min-p search keep a bounded heap in
// one pass over the logits (no full sort); without top-k the heap grows 64 → 512 → 4096 ...
// only until the top-p mass or the min-p cut falls inside it; plain temperature sampling
// (no truncation at all) is two passes and an inverse-CDF walk. Greedy without penalties or
// mask reads the logits in place. Sums of exponentials over the vocabulary use SSE2 with a
// polynomial exp (kernels/sampler/sampler_math.h): a step costs a few hundred microseconds.
//
// Each Sampler owns its random state (Rng), so one per sequence makes candidates independent
// and a given seed reproducible whatever the thread interleaving. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/sampler/rng.h"
#include "kernels/sampler/sampler_math.h"
#include "kernels/tokenizer/vocab.h"

namespace vsynth::kernels {

class SamplerError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct SamplerParams {
  float temperature = 0.8f;       // <= 0: greedy
  int32_t top_k = 40;             // 0: off
  float top_p = 0.95f;            // 1: off; in (0, 1]
  float min_p = 0.05f;            // 0: off; in [0, 1]
  float repeat_penalty = 1.0f;    // 1: off; > 0
  float presence_penalty = 0.0f;  // 0: off
  float frequency_penalty = 0.0f;
  int32_t repeat_last_n = 64;  // history tokens the penalties look at; 0: none, -1: all
  int32_t n_logprobs = 0;      // alternatives reported per step (Sample::top); 0: none
  uint64_t seed = 0;

  // Throws SamplerError naming the field and its valid range.
  void validate() const;
};

// What the next token may be. Default: anything.
struct TokenMask {
  std::vector<TokenId> banned;                  // never these
  std::optional<std::vector<TokenId>> allowed;  // when set: only these (minus banned)

  void ban(TokenId t) { banned.push_back(t); }
  void allow_only(std::vector<TokenId> ids) { allowed = std::move(ids); }
  bool unconstrained() const { return banned.empty() && !allowed; }
  void clear() {
    banned.clear();
    allowed.reset();
  }
};

struct TokenLogprob {
  TokenId token = kNoToken;
  float logprob = 0.0f;
};

struct Sample {
  // kNoToken when the mask (with penalties driving logits to -inf) left nothing to sample.
  TokenId token = kNoToken;
  // log p(token) under the model's own distribution: the log-softmax of the logits as given,
  // before penalties, temperature, filters and mask (so sums over a candidate compare models'
  // confidence, not sampler settings).
  float logprob = 0.0f;
  // The n_logprobs most likely tokens under that same distribution, most likely first.
  std::vector<TokenLogprob> top;
};

class Sampler {
 public:
  // Throws SamplerError for parameters outside their ranges.
  explicit Sampler(SamplerParams params = {});

  // `logits`: one step's scores over the whole vocabulary. `history`: the tokens so far (prompt
  // and generated), the penalties read its tail. A mask id outside the vocabulary throws
  // SamplerError.
  Sample sample(std::span<const float> logits, std::span<const TokenId> history,
                const TokenMask& mask = {});

  const SamplerParams& params() const { return params_; }
  // Restarts the random stream (same seed, same draws on the same logits).
  void reseed(uint64_t seed) { rng_.reseed(seed); }
  // For a caller that changes temperature between attempts but keeps the stream.
  void set_temperature(float t);

 private:
  using Cand = sampler_math::Scored;
  const float* prepare(std::span<const float> logits, std::span<const TokenId> history,
                       const TokenMask& mask);
  TokenId pick(const float* l, std::size_t n, const TokenMask& mask);

  SamplerParams params_;
  Rng rng_;
  std::vector<float> work_;      // [n_vocab] logits after penalties and bans
  std::vector<Cand> heap_;       // top-k selection
  std::vector<double> probs_;    // candidates' probabilities
  std::vector<TokenId> window_;  // sorted penalty window
};

// log(sum(exp(l))) over `logits` (vectorised; relative error of the sum < 1e-5). -inf when
// every logit is -inf.
float log_sum_exp(std::span<const float> logits);

// The n highest logits, highest first (ties: lower id first), -inf entries skipped.
std::vector<TokenLogprob> top_logits(std::span<const float> logits, std::size_t n);

}  // namespace vsynth::kernels
