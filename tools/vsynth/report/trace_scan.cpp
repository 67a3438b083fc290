#include "tools/vsynth/report/trace_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_map>

#include "tools/vsynth/report/line_reader.h"

namespace vsynth::cli::report {

namespace {

using nlohmann::json;

struct ItemTimes {
  double start_us = 0, end_us = 0;
  std::vector<double> stage_ms;  // by stage index
};

struct Scan {
  const TraceLimits& lim;
  TraceSummary& s;
  std::map<std::string, std::size_t> stage_index;
  std::unordered_map<std::string, ItemTimes> items;
  double first_us = 0, last_us = 0;
  bool any_span = false;
};

std::size_t stage_of(Scan& sc, const std::string& name) {
  auto it = sc.stage_index.find(name);
  if (it != sc.stage_index.end()) return it->second;
  if (sc.s.stages.size() >= sc.lim.max_stages) return stage_of(sc, "(other)");
  sc.stage_index.emplace(name, sc.s.stages.size());
  sc.s.stages.push_back({name, 0, 0, {}});
  return sc.s.stages.size() - 1;
}

void note_bad(Scan& sc, uint64_t line, std::string why) {
  if (sc.s.bad.size() < sc.lim.max_listed) sc.s.bad.push_back({line, std::move(why)});
}

// One "X" event: the stage's totals, the run's bounds, the item's times.
void take_span(Scan& sc, const json& e) {
  const double ts = e["ts"].get<double>(), dur = std::max(0.0, e["dur"].get<double>());
  const double ms = dur / 1000.0;
  const std::size_t k = stage_of(sc, e["name"].get<std::string>());
  StageTime& st = sc.s.stages[k];
  ++st.spans;
  st.busy_ms += ms;
  st.hist.add(ms);
  sc.first_us = sc.any_span ? std::min(sc.first_us, ts) : ts;
  sc.last_us = sc.any_span ? std::max(sc.last_us, ts + dur) : ts + dur;
  sc.any_span = true;
  const json& item = e["args"]["item"];
  auto it = sc.items.find(item.get_ref<const std::string&>());
  if (it == sc.items.end()) {
    if (sc.items.size() >= sc.lim.max_items) {
      ++sc.s.items_untracked;  // spans of items past the cap: in the stage totals only
      return;
    }
    ++sc.s.items;
    it = sc.items.emplace(item.get<std::string>(), ItemTimes{ts, ts + dur, {}}).first;
  }
  ItemTimes& t = it->second;
  t.start_us = std::min(t.start_us, ts);
  t.end_us = std::max(t.end_us, ts + dur);
  if (t.stage_ms.size() <= k) t.stage_ms.resize(k + 1, 0.0);
  t.stage_ms[k] += ms;
}

bool is_span(const json& e) {
  if (!e.is_object() || e.value("ph", "") != "X") return false;
  const auto args = e.find("args");
  return e.contains("name") && e["name"].is_string() && e.contains("ts") && e["ts"].is_number() &&
         e.contains("dur") && e["dur"].is_number() && args != e.end() && args->is_object() &&
         args->contains("item") && (*args)["item"].is_string();
}

// One line of the array: `[`, `]`, or an event followed by a comma.
void take_line(Scan& sc, std::string line, bool oversized, uint64_t no) {
  while (!line.empty() && (line.back() == ',' || line.back() == ' ' || line.back() == '\r')) {
    line.pop_back();
  }
  const std::size_t start = line.find_first_not_of(" \t,");
  if (start == std::string::npos) return;
  if (no == 1 || line == "[") {
    if (line[start] != '[') {
      throw std::runtime_error(fmt::format(
          "`{}`:1: not a vsynth trace: `vsynth run --trace` writes a JSON array with one event "
          "per line, and this file does not start with `[`",
          sc.s.path));
    }
    if (line.size() == start + 1) return;
    line = line.substr(start + 1);
  }
  if (line == "]") {
    sc.s.unterminated = false;
    return;
  }
  if (oversized) {
    ++sc.s.torn;
    note_bad(sc, no, fmt::format("longer than {} bytes: skipped", sc.lim.max_line_bytes));
    return;
  }
  const json e = json::parse(line, nullptr, false);
  if (e.is_discarded()) {
    ++sc.s.torn;
    note_bad(sc, no, "not a JSON event (torn by an interrupted run?)");
    return;
  }
  ++sc.s.events;
  if (is_span(e)) return take_span(sc, e);
  if (e.is_object() && e.value("ph", "") == "M" && e.contains("args") && e["args"].is_object()) {
    sc.s.pipeline = e["args"].value("pipeline", sc.s.pipeline);
    return;
  }
  ++sc.s.foreign;
  note_bad(sc, no, "an event that is not a stage span (`ph: X` with args.item)");
}

// Slowest items, the P50/P95 item wall times, and where the P95 items' time went.
void summarize_items(Scan& sc, const IdFilter* results_ids) {
  TraceSummary& s = sc.s;
  std::vector<double> walls;
  walls.reserve(sc.items.size());
  for (const auto& [id, t] : sc.items) walls.push_back((t.end_us - t.start_us) / 1000.0);
  if (walls.empty()) return;
  std::vector<double> sorted = walls;
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double p) {
    return sorted[static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size()))) - 1];
  };
  s.p50_item_ms = at(0.50);
  s.p95_item_ms = at(0.95);
  s.p95_stage_ms.assign(s.stages.size(), 0.0);
  std::vector<SlowItem> all_slow;
  for (const auto& [id, t] : sc.items) {
    const double wall = (t.end_us - t.start_us) / 1000.0;
    if (results_ids) {
      ++s.ids_checked;
      if (results_ids->may_contain(id)) ++s.ids_in_results;
    }
    if (wall < s.p95_item_ms) continue;
    ++s.p95_items;
    s.p95_wall_ms += wall;
    for (std::size_t k = 0; k < t.stage_ms.size(); ++k) s.p95_stage_ms[k] += t.stage_ms[k];
    all_slow.push_back({id, wall, t.stage_ms});
  }
  // The 10 slowest; ties by id so that the page does not depend on hash order.
  const auto slower = [](const SlowItem& a, const SlowItem& b) {
    return a.wall_ms != b.wall_ms ? a.wall_ms > b.wall_ms : a.id < b.id;
  };
  const std::size_t keep = std::min<std::size_t>(10, all_slow.size());
  std::partial_sort(all_slow.begin(), all_slow.begin() + static_cast<std::ptrdiff_t>(keep),
                    all_slow.end(), slower);
  all_slow.resize(keep);
  for (auto& item : all_slow) item.stage_ms.resize(s.stages.size(), 0.0);
  s.slowest = std::move(all_slow);
}

}  // namespace

void LatencyHistogram::add(double ms) {
  ++n;
  max_ms = std::max(max_ms, ms);
  const double decades = std::log10(std::max(ms, 1e-12) / 1e-3);  // 0 at 1 µs
  int b = decades < 0 ? 0 : 1 + static_cast<int>(decades * kPerDecade);
  counts[std::min(b, kBuckets - 1)] += 1;
}

double LatencyHistogram::lower_ms(int bucket) {
  if (bucket <= 0) return 0;
  return 1e-3 * std::pow(10.0, static_cast<double>(bucket - 1) / kPerDecade);
}

double LatencyHistogram::percentile(double p) const {
  if (n == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(n)));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts[b];
    if (seen < std::max<uint64_t>(rank, 1)) continue;
    if (b == 0) return lower_ms(1);
    if (b == kBuckets - 1) return max_ms;
    return std::min(max_ms, std::sqrt(lower_ms(b) * lower_ms(b + 1)));
  }
  return max_ms;
}

TraceSummary scan_trace(const std::string& path, const TraceLimits& limits,
                        const IdFilter* results_ids) {
  TraceSummary s;
  s.path = path;
  s.unterminated = true;  // until the closing `]`
  Scan sc{limits, s, {}, {}, 0, 0, false};
  LineReader in(path, limits.max_line_bytes);
  std::string line;
  bool oversized = false, unterminated = false;
  while (in.next(line, oversized, unterminated)) {
    take_line(sc, std::move(line), oversized, in.line_number());
    line = std::string();
  }
  if (in.failed()) throw std::runtime_error(fmt::format("cannot read `{}`", path));
  s.lines = in.line_number();
  if (!sc.any_span) {
    throw std::runtime_error(fmt::format(
        "`{}`: not a vsynth trace: no stage span (an event with `ph: X` and args.item) in its "
        "{} line(s)",
        path, s.lines));
  }
  s.wall_ms = (sc.last_us - sc.first_us) / 1000.0;
  summarize_items(sc, results_ids);
  return s;
}

}  // namespace vsynth::cli::report
