#include "tools/vsynth/report/results_scan.h"

#include <fmt/format.h>

#include <stdexcept>

#include "tools/vsynth/report/line_reader.h"

namespace vsynth::cli::report {

namespace {

using nlohmann::json;

const json& field(const json& j, const char* key) {
  static const json null;
  if (!j.is_object()) return null;
  const auto it = j.find(key);
  return it == j.end() ? null : *it;
}

std::string text(const json& j, const char* key) {
  const json& v = field(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// A count field; 0 when absent, negative or absurd (a foreign record must not overflow a cast).
uint64_t count(const json& j, const char* key) {
  const json& v = field(j, key);
  if (!v.is_number()) return 0;
  const double d = v.get<double>();
  return d > 0 && d < 1e15 ? static_cast<uint64_t>(d) : 0;
}

// The proof verdict of the candidate the loop settled on (the passing one, else the first),
// as bench_loop reads it: "" without a proof facet.
std::string final_proof(const json& facets) {
  const json& proof = field(facets, "proof");
  if (!proof.is_object()) return "";
  const json& passed = field(field(facets, "verdicts"), "passed_candidate");
  const uint64_t k = passed.is_number_unsigned() ? passed.get<uint64_t>() : 0;
  const json& cands = field(proof, "candidates");
  if (cands.is_array()) {
    for (const json& c : cands) {
      const json& index = field(c, "index");
      if (index.is_number_unsigned() && index.get<uint64_t>() == k) return text(c, "verdict");
    }
  }
  return text(proof, "verdict");
}

bool is_oracle(const json& r) {
  return text(r, "status").rfind("oracle_", 0) == 0 ||
         text(field(field(r, "facets"), "verdicts"), "tests_visibility") == "oracle";
}

void count_rates(const json& r, PassRates& rates) {
  ++rates.tasks;
  if (field(r, "passed") == true) ++rates.claimed;
  const std::string proof = final_proof(field(r, "facets"));
  if (!proof.empty() && proof != "no_spec") ++rates.proved;
  if (proof == "verified") ++rates.verified;
  const json& hidden = field(r, "hidden");
  if (hidden.is_boolean()) {
    ++rates.hidden_scored;
    if (hidden == true) ++rates.hidden_passed;
  }
}

// One attempt's `candidates` facet into the engine totals.
void count_generation(const json& cands, EngineTotals& e) {
  if (!cands.is_object()) return;
  const json& pool = field(cands, "kv_pool");
  if (pool.is_object()) {
    ++e.prompts;
    if (field(pool, "hit") == true) ++e.prompt_hits;
    e.prompt_tokens += count(pool, "prompt_tokens");
    e.cached_tokens += count(pool, "cached_tokens");
  }
  const json& list = field(cands, "candidates");
  if (!list.is_array()) return;
  for (const json& c : list) {
    ++e.candidates;
    e.tokens += count(c, "tokens");
    const json& ms = field(c, "decode_ms");
    if (ms.is_number()) e.decode_ms += ms.get<double>();
    const json& spec = field(c, "speculation");
    e.drafted += count(spec, "drafted");
    e.accepted += count(spec, "accepted");
  }
}

// Attempts, what the loop changed, and the generation of every attempt.
void count_loop(const json& r, ResultsSummary& s) {
  const uint64_t attempts = std::max<uint64_t>(1, count(r, "attempts"));
  ++s.attempts[std::min<uint64_t>(attempts, 64)];
  const json& feedback = field(r, "feedback");
  if (feedback.is_array()) {
    for (const json& f : feedback) s.feedback_from.add(text(f, "from"));
  }
  const json& history = field(r, "history");
  count_generation(field(field(r, "facets"), "candidates"), s.engine);
  if (!history.is_array() || history.empty()) return;
  for (const json& h : history) {
    const json& changed = field(h, "facets");
    if (!changed.is_object()) continue;
    for (const auto& [name, facet] : changed.items()) s.changed_facets.add(name);
    count_generation(field(changed, "candidates"), s.engine);
  }
  ++s.retried;
  if (field(r, "passed") == true) ++s.retried_passed;
  s.transitions.add(fmt::format("{} -> {}", text(history.front(), "status"), text(r, "status")));
}

struct Table {
  std::vector<json> failures, passes;
  uint64_t failures_seen = 0, passes_seen = 0;
};

void keep_row(const json& r, uint64_t line, const ScanLimits& lim, Table& t) {
  const bool passed = field(r, "passed") == true;
  auto& rows = passed ? t.passes : t.failures;
  ++(passed ? t.passes_seen : t.failures_seen);
  if (rows.size() >= lim.max_tasks) return;
  rows.push_back({{"line", line}, {"oracle", is_oracle(r)}, {"record", bounded_copy(r, lim.row)}});
}

// Failures first, then passes, max_tasks in all.
void finish_table(Table& t, const ScanLimits& lim, ResultsSummary& s) {
  s.table = std::move(t.failures);
  const std::size_t failures = s.table.size();
  const std::size_t passes = std::min(lim.max_tasks - failures, t.passes.size());
  for (std::size_t i = 0; i < passes; ++i) s.table.push_back(std::move(t.passes[i]));
  s.failures_left_out = t.failures_seen - failures;
  s.passes_left_out = t.passes_seen - passes;
}

void note_bad(ResultsSummary& s, const ScanLimits& lim, uint64_t line, std::string why) {
  if (s.bad.size() < lim.max_listed) s.bad.push_back({line, std::move(why)});
}

// Sorts one line: a record (counted), or why it is not one.
void take_line(const std::string& line, bool oversized, bool unterminated, uint64_t no,
               const ScanLimits& lim, ResultsSummary& s, Table& t) {
  if (line.find_first_not_of(" \t\r") == std::string::npos && !oversized) return;  // blank
  if (oversized) {
    ++s.oversized;
    note_bad(s, lim, no, fmt::format("longer than {} bytes: skipped unread", lim.max_line_bytes));
    return;
  }
  json r = json::parse(line, nullptr, false);
  if (r.is_discarded()) {
    ++s.torn;
    note_bad(s, lim, no,
             unterminated ? "not JSON, and the file ends before its newline: a record torn by an "
                            "interrupted run"
                          : "not JSON (a torn or corrupted record)");
    return;
  }
  if (!r.is_object() || !field(r, "id").is_string() || !field(r, "status").is_string()) {
    ++s.foreign;
    note_bad(s, lim, no,
             r.is_object() && field(r, "id").is_string()
                 ? "JSON with an `id` but no `status`: a task line, not a result record"
                 : "JSON, but not a result record (an object with string `id` and `status`)");
    return;
  }
  ++s.records;
  s.ids.add(r["id"].get_ref<const std::string&>());
  s.statuses.add(r["status"].get<std::string>());
  count_rates(r, is_oracle(r) ? s.oracle : s.visible);
  count_loop(r, s);
  keep_row(r, no, lim, t);
}

}  // namespace

void BoundedCounts::add(const std::string& key, uint64_t n) {
  auto it = counts_.find(key);
  // The last slot is kept for "(other)".
  if (it == counts_.end() && counts_.size() + 1 >= max_) {
    it = counts_.try_emplace("(other)", 0).first;
  }
  if (it == counts_.end()) it = counts_.try_emplace(key, 0).first;
  it->second += n;
}

ResultsSummary scan_results(const std::string& path, const ScanLimits& limits) {
  ResultsSummary s;
  s.path = path;
  s.statuses = s.feedback_from = s.changed_facets = s.transitions = BoundedCounts(limits.max_keys);
  LineReader in(path, limits.max_line_bytes);
  Table table;
  std::string line;
  bool oversized = false, unterminated = false;
  while (in.next(line, oversized, unterminated)) {
    take_line(line, oversized, unterminated, in.line_number(), limits, s, table);
  }
  if (in.failed()) throw std::runtime_error(fmt::format("cannot read `{}`", path));
  s.lines = in.line_number();
  finish_table(table, limits, s);
  return s;
}

}  // namespace vsynth::cli::report
