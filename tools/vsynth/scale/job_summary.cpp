#include "tools/vsynth/scale/job_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace vsynth::cli {

namespace {

using nlohmann::json;

// The counters of RunProgress, one place for their order.
template <class P, class F>
void each_counter(P& p, F&& f) {
  f(p.total);
  f(p.admitted);
  f(p.written);
  f(p.passed);
  f(p.failed);
  f(p.errors);
  f(p.rejected);
  f(p.exhausted);
  f(p.skipped);
  f(p.unfinished);
}

}  // namespace

std::vector<double> progress_values(const graph::RunProgress& p) {
  std::vector<double> v;
  each_counter(p, [&](const uint64_t& c) { v.push_back(static_cast<double>(c)); });
  v.push_back(p.elapsed_s);
  return v;
}

graph::RunProgress progress_from(const std::vector<double>& v) {
  graph::RunProgress p;
  std::size_t i = 0;
  each_counter(p, [&](uint64_t& c) { c = i < v.size() ? static_cast<uint64_t>(v[i++]) : 0; });
  p.elapsed_s = i < v.size() ? v[i] : 0;
  return p;
}

graph::RunProgress job_progress(const std::vector<graph::RunProgress>& ranks) {
  graph::RunProgress job;
  for (const auto& r : ranks) {
    job.total += r.total;
    job.admitted += r.admitted;
    job.written += r.written;
    job.passed += r.passed;
    job.failed += r.failed;
    job.errors += r.errors;
    job.rejected += r.rejected;
    job.exhausted += r.exhausted;
    job.skipped += r.skipped;
    job.unfinished += r.unfinished;
    job.elapsed_s = std::max(job.elapsed_s, r.elapsed_s);
  }
  return job;
}

std::string encode_outcome(const RankOutcome& o) {
  json j = {{"rank", o.rank}, {"error", o.error}, {"metrics", o.metrics}};
  j["progress"] = progress_values(o.result);
  j["cancelled"] = o.result.cancelled;
  j["fatal"] = o.result.fatal;
  j["statuses"] = o.result.statuses;
  return j.dump();
}

RankOutcome decode_outcome(const std::string& text) {
  try {
    const json j = json::parse(text);
    RankOutcome o;
    o.rank = j.at("rank").get<int>();
    o.error = j.at("error").get<std::string>();
    o.metrics = j.at("metrics").get<std::string>();
    static_cast<graph::RunProgress&>(o.result) =
        progress_from(j.at("progress").get<std::vector<double>>());
    o.result.cancelled = j.at("cancelled").get<bool>();
    o.result.fatal = j.at("fatal").get<std::string>();
    o.result.statuses = j.at("statuses").get<std::map<std::string, uint64_t>>();
    return o;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("a rank sent a summary rank 0 cannot read: ") + e.what());
  }
}

graph::RunResult job_result(const std::vector<RankOutcome>& ranks) {
  std::vector<graph::RunProgress> progress;
  for (const auto& r : ranks) progress.push_back(r.result);
  graph::RunResult job;
  static_cast<graph::RunProgress&>(job) = job_progress(progress);
  for (const auto& r : ranks) {
    for (const auto& [status, n] : r.result.statuses) job.statuses[status] += n;
    job.cancelled = job.cancelled || r.result.cancelled;
    if (job.fatal.empty() && !r.result.fatal.empty()) {
      job.fatal = fmt::format("rank {}: {}", r.rank, r.result.fatal);
    }
  }
  return job;
}

std::string rank_table(const std::vector<RankOutcome>& ranks) {
  std::string out = fmt::format("{:<6} {:>7} {:>7} {:>7} {:>8} {:>9} {:>8}\n", "rank", "written",
                                "passed", "failed", "skipped", "seconds", "tasks/s");
  auto row = [&](const std::string& name, const graph::RunResult& r) {
    const double rate = r.elapsed_s > 0 ? static_cast<double>(r.written) / r.elapsed_s : 0.0;
    out += fmt::format("{:<6} {:>7} {:>7} {:>7} {:>8} {:>9.2f} {:>8.2f}\n", name, r.written,
                       r.passed, r.failed, r.skipped, r.elapsed_s, rate);
  };
  for (const auto& r : ranks) row(std::to_string(r.rank), r.result);
  row("job", job_result(ranks));
  return out;
}

std::string job_metrics_document(const std::vector<RankOutcome>& ranks) {
  json all = json::array();
  for (const auto& r : ranks) {
    json one = r.metrics.empty() ? json::object() : json::parse(r.metrics, nullptr, false);
    if (one.is_discarded()) one = json::object();
    one["rank"] = r.rank;
    all.push_back(std::move(one));
  }
  return json{{"ranks", all}}.dump(2) + "\n";
}

}  // namespace vsynth::cli
