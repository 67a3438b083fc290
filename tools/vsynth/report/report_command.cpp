#include "tools/vsynth/report/report_command.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

#include "tools/vsynth/exit_codes.h"
#include "tools/vsynth/report/html_page.h"
#include "tools/vsynth/report/vega_bundle.h"

namespace vsynth::cli {

namespace {

using namespace report;

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return !a.empty() && !b.empty() && ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// The first few bad lines, one per line: "FILE:LINE: why".
std::string listed(const std::string& path, const std::vector<BadLine>& bad, uint64_t total) {
  std::string out;
  for (const auto& b : bad) out += fmt::format("\n  {}:{}: {}", path, b.line, b.why);
  if (total > bad.size()) out += fmt::format("\n  ... and {} more", total - bad.size());
  return out;
}

// What the trace says about this run's results; false when it is from another run.
bool check_trace(const TraceSummary& t, const ResultsSummary& r, std::vector<std::string>& warn) {
  if (t.torn + t.foreign > 0) {
    warn.push_back(fmt::format("trace `{}`: {} line(s) skipped ({} torn, {} not stage spans):{}",
                               t.path, t.torn + t.foreign, t.torn, t.foreign,
                               listed(t.path, t.bad, t.torn + t.foreign)));
  }
  if (t.ids_in_results == 0) {
    warn.push_back(fmt::format(
        "trace `{}` is from another run: none of its {} items is a task of `{}`; its timings are "
        "left out of the report",
        t.path, t.ids_checked, r.path));
    return false;
  }
  if (t.ids_in_results < t.ids_checked) {
    warn.push_back(fmt::format(
        "trace `{}`: {} of its {} items are not tasks of `{}` (another run's trace, or results "
        "of a --resume'd run); timings cover every traced item",
        t.path, t.ids_checked - t.ids_in_results, t.ids_checked, r.path));
  }
  return true;
}

// Writes the page next to OUTPUT and renames it over, so OUTPUT is whole at every moment.
std::string write_page(const std::string& output, const std::string& page) {
  const std::string tmp = output + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return fmt::format("cannot create `{}`: {}", tmp, std::strerror(errno));
  const bool wrote = std::fwrite(page.data(), 1, page.size(), f) == page.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !wrote) {
    ::unlink(tmp.c_str());
    return fmt::format("cannot write `{}`: {}", tmp, std::strerror(wrote ? errno : err));
  }
  if (std::rename(tmp.c_str(), output.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return fmt::format("cannot write `{}`: {}", output, std::strerror(e));
  }
  return "";
}

}  // namespace

int cmd_report(const graph::Registry& registry, const ReportArgs& args) {
  // Phase 1: the command line.
  const std::vector<std::pair<const char*, std::string>> inputs = {{"results", args.results},
                                                                   {"--trace", args.trace},
                                                                   {"--metrics", args.metrics},
                                                                   {"--pipeline", args.pipeline}};
  for (const auto& [flag, path] : inputs) {
    if (same_file(path, args.output)) {
      std::cerr << fmt::format(
          "error: -o `{}` is the {} file: the report would replace it; name "
          "another file\n",
          args.output, flag);
      return kExitUsage;
    }
  }
  std::vector<std::string> warnings;

  // Phase 2: the inputs, each read in one pass; anything not what it should be is named.
  ScanLimits limits;
  limits.max_tasks = args.max_tasks;
  limits.row.max_string = args.max_field_bytes;
  ResultsSummary results;
  std::optional<TraceSummary> trace;
  std::optional<RunMetrics> metrics;
  try {
    results = scan_results(args.results, limits);
    if (!args.metrics.empty()) metrics = read_metrics(args.metrics);
    if (!args.trace.empty()) trace = scan_trace(args.trace, TraceLimits{}, &results.ids);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }
  const uint64_t bad = results.torn + results.foreign + results.oversized;
  if (results.records == 0) {
    std::cerr << fmt::format(
        "error: `{}` holds no result record (one JSON object per line with `id` and `status`, "
        "as `vsynth run --output` writes) in its {} line(s){}\n",
        args.results, results.lines, listed(args.results, results.bad, bad));
    return kExitUsage;
  }
  if (bad > 0) {
    warnings.push_back(fmt::format(
        "results `{}`: {} line(s) are not result records and were skipped ({} torn, {} foreign, "
        "{} too long):{}",
        args.results, bad, results.torn, results.foreign, results.oversized,
        listed(args.results, results.bad, bad)));
  }
  if (trace && !check_trace(*trace, results, warnings)) trace.reset();

  // Phase 3: the graph (the pipeline named, else the one the run recorded) and the charts.
  PageInputs page;
  page.results = &results;
  page.trace = trace ? &*trace : nullptr;
  page.metrics = metrics ? &*metrics : nullptr;
  page.pipeline = !args.pipeline.empty()                  ? args.pipeline
                  : metrics && !metrics->pipeline.empty() ? metrics->pipeline
                  : trace                                 ? trace->pipeline
                                                          : "";
  if (!page.pipeline.empty()) {
    page.graph = draw_pipeline(registry, page.pipeline);
    if (!page.graph.error.empty())
      warnings.push_back("pipeline graph not drawn: " + page.graph.error);
  }
  std::string vega_error;
  page.vega = vega_scripts("", vega_error);
  if (!vega_error.empty()) warnings.push_back("charts left out (tables only): " + vega_error);
  page.warnings = warnings;

  // Phase 4: the page.
  for (const auto& w : warnings) std::cerr << "warning: " << w << "\n";
  if (const std::string failed = write_page(args.output, render_page(page)); !failed.empty()) {
    std::cerr << "error: " << failed << "\n";
    return kExitRuntime;
  }
  if (!args.quiet) {
    std::cout << fmt::format("wrote {} ({} tasks, {} in the table{}{})\n", args.output,
                             results.records, results.table.size(), trace ? ", trace" : "",
                             metrics ? ", metrics" : "");
  }
  return kExitOk;
}

}  // namespace vsynth::cli
