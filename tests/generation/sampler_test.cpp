// The sampler's semantics on hand-made logits: greedy, temperature, top-k, top-p, min-p,
// penalties, masks, logprobs and seeded reproducibility. Frequencies are checked with fixed
// seeds, so each test is deterministic; tolerances are ~5 standard deviations of the draw count.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "kernels/cpu/cpu_path.h"
#include "kernels/sampler/sampler.h"
#include "kernels/sampler/sampler_math.h"

using namespace vsynth::kernels;

namespace {

std::vector<float> log_probs(std::vector<double> p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

SamplerParams plain(float temperature, uint64_t seed = 1) {
  SamplerParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

// Frequencies of each token over n draws.
std::map<TokenId, double> frequencies(Sampler& s, const std::vector<float>& logits, int n,
                                      const TokenMask& mask = {}) {
  std::map<TokenId, double> f;
  for (int i = 0; i < n; ++i) f[s.sample(logits, {}, mask).token] += 1.0 / n;
  return f;
}

}  // namespace

TEST_CASE("greedy picks the highest logit, ties to the lowest id", "[sampler]") {
  Sampler s(plain(0.0f));
  CHECK(s.sample(std::vector<float>{0.1f, 3.0f, -2.0f, 2.9f}, {}).token == 1);
  CHECK(s.sample(std::vector<float>{1.0f, 5.0f, 5.0f, 5.0f}, {}).token == 1);
  SamplerParams k1 = plain(1.0f);
  k1.top_k = 1;  // top-k 1 is greedy too
  Sampler s1(k1);
  for (int i = 0; i < 50; ++i) CHECK(s1.sample(std::vector<float>{0.f, 0.5f, 0.4f}, {}).token == 1);
}

TEST_CASE("logprob is the raw log-softmax whatever the settings", "[sampler]") {
  const std::vector<float> logits{1.0f, 2.0f, 0.5f, -1.0f};
  double z = 0;
  for (float v : logits) z += std::exp(v);
  SamplerParams p = plain(0.0f);
  p.n_logprobs = 3;
  Sampler greedy(p);
  Sample g = greedy.sample(logits, {});
  CHECK(g.token == 1);
  CHECK(g.logprob == Approx(2.0 - std::log(z)).margin(1e-5));
  REQUIRE(g.top.size() == 3);
  CHECK(g.top[0].token == 1);
  CHECK(g.top[1].token == 0);
  CHECK(g.top[2].token == 2);
  CHECK(g.top[2].logprob == Approx(0.5 - std::log(z)).margin(1e-5));

  p.temperature = 0.3f;  // temperature changes the draw, not the reported logprob
  p.repeat_penalty = 2.0f;
  Sampler hot(p);
  const std::vector<TokenId> history{1};
  for (int i = 0; i < 20; ++i) {
    Sample s = hot.sample(logits, history);
    CHECK(s.logprob ==
          Approx(logits[static_cast<std::size_t>(s.token)] - std::log(z)).margin(1e-5));
  }
}

TEST_CASE("log_sum_exp matches the naive sum and handles -inf", "[sampler]") {
  const std::vector<float> l{0.5f, -3.0f, 10.0f, 9.0f};
  double z = 0;
  for (float v : l) z += std::exp(v);
  CHECK(log_sum_exp(l) == Approx(std::log(z)).margin(1e-5));
  const float ninf = -std::numeric_limits<float>::infinity();
  CHECK(log_sum_exp(std::vector<float>{ninf, ninf}) == ninf);
}

TEST_CASE("the vocabulary reductions give the same bits on every CPU path", "[sampler]") {
  // sum_exp runs 16-lane AVX512 code on the avx512vnni path, sum_exp and max_of 8-lane AVX2
  // code on the avx2 one and SSE2 on the scalar one; the logprobs (and so candidate ranking)
  // must not depend on the machine.
  const CpuPath saved = active_cpu_path();
  std::vector<CpuPath> paths = {CpuPath::Scalar};
  for (CpuPath p : {CpuPath::Avx2, CpuPath::Avx512Vnni}) {
    if (cpu_path_available(p)) paths.push_back(p);
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> logit(0.0f, 6.0f);
  const float ninf = -std::numeric_limits<float>::infinity();
  // (24 and 1048: a block of 16-value steps ending in 8 more on the AVX512 path.)
  for (std::size_t n : {std::size_t{0}, std::size_t{7}, std::size_t{8}, std::size_t{24},
                        std::size_t{1031}, std::size_t{1048}, std::size_t{262144 + 5}}) {
    std::vector<float> x(n);
    for (float& v : x) v = logit(rng);
    for (std::size_t i = 3; i < n; i += 97) x[i] = ninf;  // banned tokens
    std::vector<float> with_nan = x;
    for (std::size_t i = 5; i < n; i += 1001) with_nan[i] = std::nanf("");
    std::vector<double> sums;
    std::vector<float> maxes, nan_maxes;
    for (CpuPath p : paths) {
      set_cpu_path(p);
      const float m = sampler_math::max_of(x.data(), n);
      maxes.push_back(m);
      nan_maxes.push_back(sampler_math::max_of(with_nan.data(), n));
      sums.push_back(sampler_math::sum_exp(x.data(), n, n > 0 ? m : 0.0f, 0.7f));
    }
    set_cpu_path(saved);
    INFO("n " << n);
    for (std::size_t k = 1; k < paths.size(); ++k) {
      INFO("path " << to_string(paths[k]));
      CHECK(std::memcmp(&sums[k], &sums[0], sizeof(double)) == 0);
      CHECK(std::memcmp(&maxes[k], &maxes[0], sizeof(float)) == 0);
      CHECK(std::memcmp(&nan_maxes[k], &nan_maxes[0], sizeof(float)) == 0);
    }
    if (n > 0) {
      CHECK(maxes[0] == *std::max_element(x.begin(), x.end()));
      float no_nan = ninf;  // NaNs are ignored
      for (float v : with_nan) no_nan = std::isnan(v) ? no_nan : std::max(no_nan, v);
      CHECK(nan_maxes[0] == no_nan);
      double want = 0.0;
      for (float v : x) {
        if (v != ninf) want += std::exp((static_cast<double>(v) - maxes[0]) * 0.7);
      }
      CHECK(sums[0] == Approx(want).epsilon(1e-6));
    } else {
      CHECK(sums[0] == 0.0);
    }
  }
}

TEST_CASE("first_index_of finds the first equal entry anywhere, or none", "[sampler]") {
  for (std::size_t n : {std::size_t{1}, std::size_t{9}, std::size_t{1000}}) {
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 13);
    for (float v : {0.0f, 5.0f, 12.0f, 13.0f, -0.0f}) {
      INFO("n " << n << " v " << v);
      const auto want = static_cast<std::size_t>(std::find(x.begin(), x.end(), v) - x.begin());
      CHECK(sampler_math::first_index_of(x.data(), n, v) == want);
    }
    x[n - 1] = 99.0f;  // only the last entry (the scalar tail for n = 9)
    CHECK(sampler_math::first_index_of(x.data(), n, 99.0f) == n - 1);
  }
  CHECK(sampler_math::first_index_of(nullptr, 0, 1.0f) == 0);
}

TEST_CASE("the same seed gives the same draws, another seed others", "[sampler]") {
  std::vector<float> logits(1000);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(i * 0.7));
  SamplerParams p;  // defaults: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05
  p.seed = 42;
  Sampler a(p), b(p);
  p.seed = 43;
  Sampler c(p);
  std::vector<TokenId> ta, tb, tc;
  for (int i = 0; i < 200; ++i) {
    ta.push_back(a.sample(logits, {}).token);
    tb.push_back(b.sample(logits, {}).token);
    tc.push_back(c.sample(logits, {}).token);
  }
  CHECK(ta == tb);
  CHECK(ta != tc);
  a.reseed(42);
  CHECK(a.sample(logits, {}).token == ta[0]);
}

TEST_CASE("temperature 1 samples the softmax, lower temperature sharpens it", "[sampler]") {
  const std::vector<float> logits = log_probs({0.5, 0.3, 0.2});
  Sampler s(plain(1.0f, 7));
  auto f = frequencies(s, logits, 20000);
  CHECK(f[0] == Approx(0.5).margin(0.02));
  CHECK(f[1] == Approx(0.3).margin(0.02));
  CHECK(f[2] == Approx(0.2).margin(0.02));

  Sampler cold(plain(0.5f, 7));  // p^2 renormalised: 0.25, 0.09, 0.04 over 0.38
  auto g = frequencies(cold, logits, 20000);
  CHECK(g[0] == Approx(0.25 / 0.38).margin(0.02));
  CHECK(g[1] == Approx(0.09 / 0.38).margin(0.02));
  CHECK(g[2] == Approx(0.04 / 0.38).margin(0.02));
}

TEST_CASE("top-k keeps the k most likely tokens, renormalised", "[sampler]") {
  const std::vector<float> logits = log_probs({0.1, 0.4, 0.2, 0.3});
  SamplerParams p = plain(1.0f, 3);
  p.top_k = 2;
  Sampler s(p);
  auto f = frequencies(s, logits, 20000);
  CHECK(f.count(0) == 0);
  CHECK(f.count(2) == 0);
  CHECK(f[1] == Approx(0.4 / 0.7).margin(0.02));
  CHECK(f[3] == Approx(0.3 / 0.7).margin(0.02));
}

TEST_CASE("top-p keeps the smallest set whose mass reaches p", "[sampler]") {
  const std::vector<float> logits = log_probs({0.15, 0.5, 0.05, 0.3});
  SamplerParams p = plain(1.0f, 5);
  p.top_p = 0.75f;  // 0.5 < 0.75 <= 0.8: tokens 1 and 3
  Sampler s(p);
  auto f = frequencies(s, logits, 20000);
  CHECK(f.size() == 2);
  CHECK(f[1] == Approx(0.5 / 0.8).margin(0.02));
  CHECK(f[3] == Approx(0.3 / 0.8).margin(0.02));

  p.top_p = 0.9f;  // 0.8 < 0.9 <= 0.95: token 0 joins
  Sampler s2(p);
  auto g = frequencies(s2, logits, 20000);
  CHECK(g.size() == 3);
  CHECK(g.count(2) == 0);
  CHECK(g[0] == Approx(0.15 / 0.95).margin(0.02));

  p.top_k = 3;      // top-p after top-k sees the renormalised top-3 mass
  p.top_p = 0.84f;  // over 0.95: 0.5/0.95 = 0.53, 0.8/0.95 = 0.84 -> 2 tokens (0.842 >= 0.84)
  Sampler s3(p);
  CHECK(frequencies(s3, logits, 5000).size() == 2);
}

TEST_CASE("min-p drops tokens less likely than min_p times the best", "[sampler]") {
  const std::vector<float> logits = log_probs({0.5, 0.3, 0.15, 0.05});
  SamplerParams p = plain(1.0f, 9);
  p.min_p = 0.2f;  // floor 0.1: token 3 (0.05) goes
  Sampler s(p);
  auto f = frequencies(s, logits, 20000);
  CHECK(f.count(3) == 0);
  CHECK(f[0] == Approx(0.5 / 0.95).margin(0.02));
  CHECK(f[2] == Approx(0.15 / 0.95).margin(0.02));
}

TEST_CASE("top-p without top-k on a 262144-token vocabulary matches the brute-force nucleus",
          "[sampler][slow]") {
  // A flat-ish distribution whose nucleus holds thousands of tokens, so the selection heap
  // has to grow several times (64 -> 512 -> 4096 -> ...).
  const std::size_t n = 262144;
  std::vector<float> logits(n);
  for (std::size_t i = 0; i < n; ++i) {
    logits[i] = -0.002f * static_cast<float>((i * 7919) % n) * 0.01f;  // shuffled ranks
  }
  // Brute force: sort by logit, accumulate softmax mass until 0.5.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  double z = 0;
  for (float v : logits) z += std::exp(static_cast<double>(v));
  std::set<TokenId> nucleus;
  double acc = 0;
  for (std::size_t i : order) {
    acc += std::exp(static_cast<double>(logits[i])) / z;
    nucleus.insert(static_cast<TokenId>(i));
    if (acc >= 0.5) break;
  }
  REQUIRE(nucleus.size() > 4096);
  SamplerParams p = plain(1.0f, 11);
  p.top_p = 0.5f;
  Sampler s(p);
  for (int i = 0; i < 300; ++i) {
    const TokenId t = s.sample(logits, {}).token;
    CHECK(nucleus.count(t) == 1);
  }
}

TEST_CASE("repetition, presence and frequency penalties", "[sampler]") {
  SamplerParams p = plain(0.0f);
  p.repeat_penalty = 1.5f;
  Sampler s(p);
  // Token 0 (2.0 -> 1.33) falls below token 1 (1.9) once it is in the history.
  const std::vector<float> logits{2.0f, 1.9f, -1.0f};
  CHECK(s.sample(logits, std::vector<TokenId>{}).token == 0);
  CHECK(s.sample(logits, std::vector<TokenId>{0}).token == 1);
  // A negative logit is multiplied (pushed further down), never raised.
  const std::vector<float> neg{-1.0f, -1.2f};
  CHECK(s.sample(neg, std::vector<TokenId>{0}).token == 1);  // -1.5 < -1.2

  // The window: only the last repeat_last_n tokens count.
  p.repeat_last_n = 2;
  Sampler w(p);
  CHECK(w.sample(logits, std::vector<TokenId>{0, 2, 2}).token == 0);
  CHECK(w.sample(logits, std::vector<TokenId>{2, 0, 2}).token == 1);
  p.repeat_last_n = 0;  // off
  Sampler off(p);
  CHECK(off.sample(logits, std::vector<TokenId>{0}).token == 0);

  // Frequency: subtracted per occurrence; presence: once.
  SamplerParams q = plain(0.0f);
  q.frequency_penalty = 0.06f;
  Sampler freq(q);
  CHECK(freq.sample(logits, std::vector<TokenId>{0}).token == 0);     // 1.94 > 1.9
  CHECK(freq.sample(logits, std::vector<TokenId>{0, 0}).token == 1);  // 1.88 < 1.9
  q.frequency_penalty = 0.0f;
  q.presence_penalty = 0.2f;
  Sampler pres(q);
  CHECK(pres.sample(logits, std::vector<TokenId>{0, 0, 0}).token == 1);
  CHECK(pres.sample(logits, std::vector<TokenId>{0, 1}).token == 0);  // both lose 0.2
}

TEST_CASE("masks ban tokens or allow only a set", "[sampler]") {
  const std::vector<float> logits = log_probs({0.4, 0.3, 0.2, 0.1});
  Sampler g(plain(0.0f));
  TokenMask m;
  m.ban(0);
  CHECK(g.sample(logits, {}, m).token == 1);
  m.ban(1);
  CHECK(g.sample(logits, {}, m).token == 2);

  TokenMask only;
  only.allow_only({3, 1, 3});
  CHECK(g.sample(logits, {}, only).token == 1);
  only.ban(1);
  CHECK(g.sample(logits, {}, only).token == 3);
  only.ban(3);
  CHECK(g.sample(logits, {}, only).token == kNoToken);  // nothing left

  Sampler s(plain(1.0f, 13));
  TokenMask keep;
  keep.allow_only({2, 3});
  auto f = frequencies(s, logits, 20000, keep);
  CHECK(f.size() == 2);
  CHECK(f[2] == Approx(2.0 / 3.0).margin(0.02));

  TokenMask bad;
  bad.ban(4);
  CHECK_THROWS_AS(g.sample(logits, {}, bad), SamplerError);
  TokenMask bad_allowed;
  bad_allowed.allow_only({-1});
  CHECK_THROWS_AS(g.sample(logits, {}, bad_allowed), SamplerError);
}

TEST_CASE("parameters outside their ranges are refused with the field named", "[sampler]") {
  auto refuse = [](SamplerParams p, const char* field) {
    try {
      Sampler s(p);
      FAIL("accepted a bad " << field);
    } catch (const SamplerError& e) {
      CHECK(std::string(e.what()).find(field) != std::string::npos);
    }
  };
  SamplerParams p;
  p.top_p = 0.0f;
  refuse(p, "top_p");
  p = {};
  p.temperature = -1.0f;
  refuse(p, "temperature");
  p = {};
  p.min_p = 1.5f;
  refuse(p, "min_p");
  p = {};
  p.repeat_penalty = 0.0f;
  refuse(p, "repeat_penalty");
  p = {};
  p.top_k = -3;
  refuse(p, "top_k");
  CHECK_THROWS_AS(Sampler().sample(std::vector<float>{}, {}), SamplerError);
}
