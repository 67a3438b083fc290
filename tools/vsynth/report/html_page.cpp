#include "tools/vsynth/report/html_page.h"

#include <fmt/format.h>

#include <algorithm>

#include "tools/vsynth/report/charts.h"
#include "tools/vsynth/report/page_assets.h"

namespace vsynth::cli::report {

namespace {

using nlohmann::json;

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// JSON inside <script type="application/json">: every `<` escaped, so no string in it can end
// the element or open a comment.
std::string island(const char* id, const json& j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return fmt::format("<script type=\"application/json\" id=\"{}\">{}</script>\n", id, out);
}

std::string pct(uint64_t part, uint64_t whole) {
  return whole ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / whole) : "-";
}

double ratio(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// A table; cells that start with a digit (or '-' then a digit) are right-aligned.
std::string table(const std::vector<std::string>& head,
                  const std::vector<std::vector<std::string>>& rows, const char* id = nullptr) {
  std::string out = id ? fmt::format("<table id=\"{}\"><thead><tr>", id) : "<table><thead><tr>";
  for (const auto& h : head) out += "<th>" + esc(h) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& r : rows) {
    out += "<tr>";
    for (const auto& c : r) {
      const bool num = !c.empty() && (std::isdigit(static_cast<unsigned char>(c[0])) ||
                                      (c.size() > 1 && c[0] == '-' && std::isdigit(c[1])));
      out += (num ? "<td class=\"num\">" : "<td>") + esc(c) + "</td>";
    }
    out += "</tr>";
  }
  return out + "</tbody></table>\n";
}

// The charts of a page: each placed as a <div data-chart> whose spec goes into one island.
class Charts {
 public:
  explicit Charts(bool enabled) : enabled_(enabled) {}
  std::string place(const std::string& name, json spec) {
    if (!enabled_) return "";
    specs_[name] = std::move(spec);
    return fmt::format("<div data-chart=\"{}\"></div>\n", esc(name));
  }
  const json& specs() const { return specs_; }

 private:
  bool enabled_;
  json specs_ = json::object();
};

void counts_rows(const BoundedCounts& c, std::vector<std::vector<std::string>>& rows,
                 uint64_t whole) {
  std::vector<std::pair<std::string, uint64_t>> v(c.counts().begin(), c.counts().end());
  std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second > b.second; });
  for (const auto& [k, n] : v) {
    rows.push_back({k.empty() ? "(none)" : k, std::to_string(n), pct(n, whole)});
  }
}

std::string inputs_section(const PageInputs& in) {
  std::string out = "<div class=\"inputs\">results <code>" + esc(in.results->path) + "</code>";
  if (in.trace) out += " · trace <code>" + esc(in.trace->path) + "</code>";
  if (in.metrics) out += " · metrics <code>" + esc(in.metrics->path) + "</code>";
  if (!in.pipeline.empty()) out += " · pipeline <code>" + esc(in.pipeline) + "</code>";
  out += "</div>\n";
  for (const auto& w : in.warnings) out += "<div class=\"warn\"><pre>" + esc(w) + "</pre></div>\n";
  return out;
}

std::string graph_section(const PageInputs& in) {
  std::string out = "<h2 id=\"graph\">Pipeline</h2>\n";
  if (!in.graph.svg.empty()) return out + "<div class=\"graph\">" + in.graph.svg + "</div>\n";
  return out + "<p>Not drawn: " +
         esc(in.graph.error.empty() ? "no pipeline file known (pass --pipeline FILE, or a "
                                      "--metrics or --trace file from a run that names it)"
                                    : in.graph.error) +
         "</p>\n";
}

void rates_rows(const char* kind, const PassRates& r, std::vector<std::vector<std::string>>& rows,
                json& chart) {
  if (r.tasks == 0) return;
  rows.push_back(
      {kind, std::to_string(r.tasks), fmt::format("{} ({})", r.claimed, pct(r.claimed, r.tasks)),
       fmt::format("{} ({})", r.verified, pct(r.verified, r.tasks)), std::to_string(r.proved),
       r.hidden_scored ? fmt::format("{}/{} ({})", r.hidden_passed, r.hidden_scored,
                                     pct(r.hidden_passed, r.hidden_scored))
                       : "-"});
  chart.push_back({{"label", kind}, {"series", "claimed"}, {"value", ratio(r.claimed, r.tasks)}});
  chart.push_back({{"label", kind}, {"series", "verified"}, {"value", ratio(r.verified, r.tasks)}});
  if (r.hidden_scored) {
    chart.push_back({{"label", kind},
                     {"series", "hidden tests"},
                     {"value", ratio(r.hidden_passed, r.hidden_scored)}});
  }
}

std::string outcomes_section(const ResultsSummary& s, Charts& charts) {
  std::string out = "<h2 id=\"outcomes\">Outcomes</h2>\n";
  out += fmt::format("<p>{} task records in {} lines.</p>\n", s.records, s.lines);
  std::vector<std::vector<std::string>> rows;
  counts_rows(s.statuses, rows, s.records);
  json bars = json::array();
  for (const auto& r : rows) bars.push_back({{"label", r[0]}, {"value", std::stoull(r[1])}});
  out += "<div class=\"charts\"><div>" + table({"status", "tasks", "share"}, rows) + "</div>" +
         charts.place("statuses", bar_chart(bars, {"Tasks by status", "tasks"})) + "</div>\n";
  // Claimed: the loop's own verdict; oracle rows were judged by hidden tests, so apart.
  std::vector<std::vector<std::string>> rates;
  json chart = json::array();
  rates_rows("visible tests", s.visible, rates, chart);
  rates_rows("oracle (hidden tests in the loop)", s.oracle, rates, chart);
  out +=
      "<h3>Pass rates</h3>\n<p>claimed: the record says passed (the loop's own checks); "
      "verified: the final candidate's spec was proved; hidden: the record's `hidden` score "
      "(bench_loop). Oracle rows saw the hidden tests while looping, so they are counted "
      "apart.</p>\n";
  out += "<div class=\"charts\"><div>" +
         table({"rows", "tasks", "claimed", "verified", "proof verdicts", "hidden tests"}, rates) +
         "</div>" +
         charts.place("rates", bar_chart(chart, {"Pass rates", "share of tasks", ".0%"})) +
         "</div>\n";
  return out;
}

std::string loop_section(const ResultsSummary& s, Charts& charts) {
  std::string out = "<h2 id=\"loop\">Attempts and the feedback loop</h2>\n";
  json bars = json::array();
  std::vector<std::vector<std::string>> rows;
  for (const auto& [attempts, n] : s.attempts) {
    const std::string label = attempts >= 64 ? "64+" : std::to_string(attempts);
    rows.push_back({label, std::to_string(n), pct(n, s.records)});
    bars.push_back({{"label", label}, {"value", n}});
  }
  out += "<div class=\"charts\"><div>" + table({"attempts", "tasks", "share"}, rows) + "</div>" +
         charts.place("attempts", bar_chart(bars, {"Attempts per task", "tasks"})) + "</div>\n";
  out += fmt::format(
      "<p>{} task(s) went round the loop at least once; {} of them ({}) passed in "
      "the end.</p>\n",
      s.retried, s.retried_passed, pct(s.retried_passed, s.retried));
  if (s.retried == 0) return out;
  std::vector<std::vector<std::string>> from, changed, moves;
  counts_rows(s.feedback_from, from, s.retried);
  counts_rows(s.changed_facets, changed, s.retried);
  counts_rows(s.transitions, moves, s.retried);
  out += "<div class=\"charts\"><div><h3>Sent back by</h3>" +
         table({"stage.port", "times", "per retried task"}, from) +
         "</div><div><h3>Facets that changed between attempts</h3>" +
         table({"facet", "attempts", "per retried task"}, changed) +
         "</div><div><h3>First attempt -> final status</h3>" +
         table({"change", "tasks", "share"}, moves) + "</div></div>\n";
  return out;
}

std::string ms(double v) {
  return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
}

std::string time_section(const TraceSummary& t, Charts& charts) {
  std::string out = "<h2 id=\"time\">Where time went</h2>\n";
  double busy = 0;
  uint64_t spans = 0;
  for (const auto& st : t.stages) {
    busy += st.busy_ms;
    spans += st.spans;
  }
  out += fmt::format(
      "<p>{} items, {} spans; the run's wall time {} ms; stages busy {} ms in all (stages run "
      "concurrently). Item latency P50 {} ms, P95 {} ms.{}</p>\n",
      t.items, spans, ms(t.wall_ms), ms(busy), ms(t.p50_item_ms), ms(t.p95_item_ms),
      t.unterminated ? " The trace has no closing `]`: the run was interrupted." : "");
  std::vector<std::vector<std::string>> rows;
  json share = json::array(), dist = json::array();
  for (const auto& st : t.stages) {
    rows.push_back({st.stage, std::to_string(st.spans), ms(st.busy_ms),
                    busy > 0 ? fmt::format("{:.1f}%", 100 * st.busy_ms / busy) : "-",
                    ms(st.hist.percentile(0.5)), ms(st.hist.percentile(0.95)),
                    ms(st.hist.percentile(0.99)), ms(st.hist.max_ms)});
    share.push_back({{"label", st.stage}, {"value", busy > 0 ? st.busy_ms / busy : 0.0}});
    for (int b = 0; b < LatencyHistogram::kBuckets; ++b) {
      if (st.hist.counts[b] == 0) continue;
      dist.push_back({{"series", st.stage},
                      {"x", LatencyHistogram::lower_ms(std::max(b, 1))},
                      {"y", st.hist.counts[b]}});
    }
  }
  out += table(
      {"stage", "spans", "busy ms", "share of stage time", "p50 ms", "p95 ms", "p99 ms", "max ms"},
      rows);
  out += "<p>Percentiles from log buckets (10 per decade: within about 12%).</p>\n";
  out += "<div class=\"charts\">" +
         charts.place("stage-share", bar_chart(share, {"Share of stage time", "share", ".0%"})) +
         charts.place("stage-latency",
                      log_line_chart(dist, {"Span durations per stage", "spans"}, "ms (log)")) +
         "</div>\n";
  // Latency hotspot attribution: of the P95 items' wall time, how much each stage took.
  json attribution = json::array();
  std::vector<std::vector<std::string>> arows;
  double in_stages = 0;
  for (std::size_t k = 0; k < t.stages.size() && k < t.p95_stage_ms.size(); ++k) {
    in_stages += t.p95_stage_ms[k];
    const double f = t.p95_wall_ms > 0 ? t.p95_stage_ms[k] / t.p95_wall_ms : 0;
    attribution.push_back({{"label", t.stages[k].stage}, {"value", f}});
    arows.push_back({t.stages[k].stage, ms(t.p95_stage_ms[k]), fmt::format("{:.1f}%", 100 * f)});
  }
  const double waiting = std::max(0.0, t.p95_wall_ms - in_stages);
  const double wf = t.p95_wall_ms > 0 ? waiting / t.p95_wall_ms : 0;
  attribution.push_back({{"label", "(queued, between stages)"}, {"value", wf}});
  arows.push_back({"(queued, between stages)", ms(waiting), fmt::format("{:.1f}%", 100 * wf)});
  out += fmt::format("<h3>Latency hotspots: the {} items at or above P95 ({} ms)</h3>\n",
                     t.p95_items, ms(t.p95_item_ms));
  out += "<div class=\"charts\"><div>" + table({"stage", "ms in P95 items", "share"}, arows) +
         "</div>" +
         charts.place("p95",
                      bar_chart(attribution, {"Share of the P95 items' time", "share", ".0%"})) +
         "</div>\n";
  std::vector<std::vector<std::string>> slow;
  for (const auto& item : t.slowest) {
    std::vector<std::pair<double, std::string>> by;
    for (std::size_t k = 0; k < item.stage_ms.size(); ++k)
      by.push_back({item.stage_ms[k], t.stages[k].stage});
    std::sort(by.rbegin(), by.rend());
    std::string top;
    for (std::size_t k = 0; k < by.size() && k < 3 && by[k].first > 0; ++k) {
      top += fmt::format("{}{} {} ms", k ? ", " : "", by[k].second, ms(by[k].first));
    }
    slow.push_back({item.id, ms(item.wall_ms), top});
  }
  out += "<h3>Slowest items</h3>\n" + table({"item", "wall ms", "most time in"}, slow);
  return out;
}

std::string metrics_section(const RunMetrics& m) {
  std::string out = "<h2 id=\"metrics\">Per-stage metrics (the run's own)</h2>\n";
  std::vector<std::vector<std::string>> rows;
  const auto num = [](const json& j, const char* k) {
    const auto it = j.find(k);
    return it != j.end() && it->is_number() ? ms(it->get<double>()) : std::string("-");
  };
  for (const auto& s : m.stages) {
    if (!s.is_object()) continue;
    rows.push_back({s.value("stage", "?"), s.value("kind", ""), num(s, "items"), num(s, "errors"),
                    num(s, "p50_ms"), num(s, "p95_ms"), num(s, "p99_ms"), num(s, "mean_ms"),
                    num(s, "max_queued")});
  }
  return out + table({"stage", "kind", "items", "errors", "p50 ms", "p95 ms", "p99 ms", "mean ms",
                      "max queued"},
                     rows);
}

std::string engine_section(const ResultsSummary& s, const RunMetrics* m) {
  const EngineTotals& e = s.engine;
  std::string out = "<h2 id=\"engine\">Engine</h2>\n";
  std::vector<std::vector<std::string>> rows;
  if (e.candidates) {
    rows.push_back({"candidates", std::to_string(e.candidates)});
    rows.push_back({"tokens generated", std::to_string(e.tokens)});
    rows.push_back(
        {"decode tokens/s (all candidates)",
         e.decode_ms > 0 ? fmt::format("{:.1f}", e.tokens / (e.decode_ms / 1000.0)) : "-"});
  }
  if (e.prompts) {
    rows.push_back({"prompts through the KV pool", std::to_string(e.prompts)});
    rows.push_back({"KV pool hit rate (prompts)", pct(e.prompt_hits, e.prompts)});
    rows.push_back({"prompt tokens from the pool", pct(e.cached_tokens, e.prompt_tokens)});
  }
  if (e.drafted) {
    rows.push_back({"draft tokens accepted", fmt::format("{} of {} ({})", e.accepted, e.drafted,
                                                         pct(e.accepted, e.drafted))});
  }
  if (!rows.empty()) out += "<h3>From the results</h3>\n" + table({"counter", "value"}, rows);
  bool any = false;
  for (const auto& r : m ? m->resources : json::array()) {
    if (!r.is_object() || !r.contains("counters") || !r["counters"].is_object() ||
        r["counters"].empty())
      continue;
    std::vector<std::vector<std::string>> c;
    for (const auto& [k, v] : r["counters"].items()) {
      c.push_back({k, v.is_number() ? fmt::format("{:.4g}", v.get<double>()) : v.dump()});
    }
    out += fmt::format("<h3>Resource {} ({})</h3>\n", esc(r.value("resource", "?")),
                       esc(r.value("kind", "")));
    out += table({"counter", "value"}, c);
    any = true;
  }
  if (rows.empty() && !any) out += "<p>No engine counters: this run generated nothing.</p>\n";
  return out;
}

std::string tasks_section(const ResultsSummary& s) {
  std::string out = "<h2 id=\"tasks\">Tasks</h2>\n";
  out += fmt::format(
      "<p>{} task(s) in the table: failures first, then passes{}. Click a row for its attempts, "
      "candidates, checks and counterexamples.</p>\n",
      s.table.size(),
      s.failures_left_out + s.passes_left_out
          ? fmt::format("; left out: {} failure(s), {} pass(es) (raise --max-tasks)",
                        s.failures_left_out, s.passes_left_out)
          : "");
  out +=
      "<div id=\"tasks-controls\"><input id=\"tasks-search\" type=\"search\" "
      "placeholder=\"search ids, code, messages\"><select id=\"tasks-filter\"><option "
      "value=\"all\">all</option><option value=\"failed\">failed</option><option "
      "value=\"passed\">passed</option><option value=\"oracle\">oracle rows</option></select>"
      "<button id=\"tasks-prev\">prev</button><button id=\"tasks-next\">next</button><span "
      "id=\"tasks-page\"></span></div>\n";
  out +=
      "<table id=\"task-table\"><thead><tr><th>id</th><th>status</th><th>tests</th><th>"
      "attempts</th><th>left at</th></tr></thead><tbody></tbody></table>\n";
  return out + island("vsynth-tasks", s.table);
}

}  // namespace

std::string render_page(const PageInputs& in) {
  const ResultsSummary& s = *in.results;
  Charts charts(!in.vega.empty());
  std::string body = "<h1>vsynth report</h1>\n" + inputs_section(in) + graph_section(in) +
                     outcomes_section(s, charts) + loop_section(s, charts);
  if (in.trace) body += time_section(*in.trace, charts);
  if (in.metrics) body += metrics_section(*in.metrics);
  body += engine_section(s, in.metrics) + tasks_section(s);
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>vsynth report: "
      "{}</title>\n<style>{}</style>\n</head><body>\n{}{}{}<script>{}</script>\n</body></html>\n",
      esc(s.path), kPageStyle, body, island("vsynth-charts", charts.specs()), in.vega, kPageScript);
}

}  // namespace vsynth::cli::report
