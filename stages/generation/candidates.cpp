#include "stages/generation/candidates.h"

#include <cmath>

namespace vsynth::stages::generation {

namespace {
// Milliseconds to 0.01 ms, rates to 0.1: the results file stays readable.
double round_to(double v, double step) {
  return std::round(v / step) * step;
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
  if (record_prompt) j["prompt"] = std::string(prompt);
  j["candidates"] = nlohmann::json::array();
  for (const Candidate& c : candidates) {
    nlohmann::json k;
    k["code"] = std::string(c.code);
    k["text"] = std::string(c.text);
    if (c.completion != c.text) k["completion"] = std::string(c.completion);
    k["tokens"] = c.tokens;
    k["finish"] = c.finish;
    if (!c.finish_detail.empty()) k["finish_detail"] = c.finish_detail;
    k["logprob_sum"] = round_to(c.logprob_sum, 1e-4);
    k["decode_ms"] = round_to(c.decode_ms, 0.01);
    k["tokens_per_s"] = round_to(c.tokens_per_s, 0.1);
    k["seed"] = c.seed;
    k["temperature"] = round_to(c.temperature, 1e-4);
    if (c.rejections) k["rejections"] = c.rejections;
    if (c.rollbacks) k["rollbacks"] = c.rollbacks;
    j["candidates"].push_back(std::move(k));
  }
  return j;
}

}  // namespace vsynth::stages::generation
