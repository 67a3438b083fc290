#include "stages/facets/candidates.h"

#include <cmath>

namespace vsynth::stages::facets {

namespace {
// Milliseconds to 0.01 ms, rates to 0.1: the results file stays readable.
double round_to(double v, double step) {
  return std::round(v / step) * step;
}

// JSON strings must be valid UTF-8, but a candidate can end inside a character (the budget ran
// out between byte tokens) or hold invalid bytes: each invalid byte becomes U+FFFD.
std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80           ? 1
                          : (c >> 5) == 0x6  ? 2
                          : (c >> 4) == 0xE  ? 3
                          : (c >> 3) == 0x1E ? 4
                                             : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (ok && n > 1) {  // no overlong forms, surrogates or code points past U+10FFFF
      uint32_t cp = c & (0x7Fu >> n);
      for (std::size_t k = 1; k < n; ++k) {
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
      }
      ok = !((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
             (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF);
    }
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}
}  // namespace

const Candidate* CandidatesFacet::best() const {
  const Candidate* best = nullptr;
  double best_mean = -INFINITY;
  for (const Candidate& c : candidates) {
    const double mean = c.tokens > 0 ? c.logprob_sum / c.tokens : 0.0;
    if (!best || mean > best_mean) {
      best = &c;
      best_mean = mean;
    }
  }
  return best;
}

nlohmann::json CandidatesFacet::to_json() const {
  nlohmann::json j;
  j["mode"] = mode;
  j["format"] = format;
  j["attempt"] = attempt;
  j["prompt_tokens"] = prompt_tokens;
  j["prefill_ms"] = round_to(prefill_ms, 0.01);
  if (!suffix.empty()) j["suffix"] = suffix;
  if (n_indent > 0) j["n_indent"] = n_indent;
  if (packed_files > 0) j["packed_files"] = packed_files;
  if (warmup) j["warmed_tokens"] = prompt_tokens;
  if (kv_pool) {
    nlohmann::json k{{"cached_tokens", cached_tokens},
                     {"prompt_tokens", prompt_tokens},
                     {"hit", cached_tokens > 0}};
    if (!kv_pool_fallback.empty()) k["fallback"] = valid_utf8(kv_pool_fallback);
    j["kv_pool"] = std::move(k);
  }
  if (record_prompt) j["prompt"] = valid_utf8(prompt);
  j["candidates"] = nlohmann::json::array();
  for (const Candidate& c : candidates) {
    nlohmann::json k;
    k["code"] = valid_utf8(c.code);
    k["text"] = valid_utf8(c.text);
    if (c.completion != c.text) k["completion"] = valid_utf8(c.completion);
    k["tokens"] = c.tokens;
    k["finish"] = c.finish;
    if (!c.finish_detail.empty()) k["finish_detail"] = valid_utf8(c.finish_detail);
    k["logprob_sum"] = round_to(c.logprob_sum, 1e-4);
    k["decode_ms"] = round_to(c.decode_ms, 0.01);
    k["tokens_per_s"] = round_to(c.tokens_per_s, 0.1);
    k["seed"] = c.seed;
    k["temperature"] = round_to(c.temperature, 1e-4);
    if (c.rejections) k["rejections"] = c.rejections;
    if (c.rollbacks) k["rollbacks"] = c.rollbacks;
    if (c.trimmed) k["trimmed"] = {{"by", c.trimmed_by}, {"tokens", c.trimmed}};
    if (!c.drafter.empty()) {
      nlohmann::json& sp = k["speculation"];
      sp["drafter"] = c.drafter;
      sp["drafted"] = c.drafted;
      sp["accepted"] = c.accepted;
      sp["verify_steps"] = c.verify_steps;
      if (!c.speculation_fallback.empty()) sp["fallback"] = valid_utf8(c.speculation_fallback);
    }
    j["candidates"].push_back(std::move(k));
  }
  return j;
}

}  // namespace vsynth::stages::facets
