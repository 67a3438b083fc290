#include "tools/vsynth/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace vsynth::cli {

ProgressReporter::ProgressReporter(std::FILE* out, bool enabled)
    : out_(out), enabled_(enabled), tty_(::isatty(::fileno(out)) != 0) {}

namespace {
std::string clock_text(double s) {
  if (s < 0 || s > 1e7) return "--:--";
  const auto t = static_cast<long>(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}
}  // namespace

std::string ProgressReporter::line(const graph::RunProgress& p) const {
  const double rate = p.elapsed_s > 0 ? static_cast<double>(p.written) / p.elapsed_s : 0;
  const double eta =
      (p.total > p.written && rate > 0) ? static_cast<double>(p.total - p.written) / rate : 0;
  std::string total = p.total ? std::to_string(p.total) : "?";
  std::string s = fmt::format("{}/{} done  {:.1f}/s  ETA {}  passed {}  failed {}", p.written,
                              total, rate, p.total ? clock_text(eta) : "--:--", p.passed, p.failed);
  if (p.errors) s += fmt::format(" (errors {})", p.errors);
  if (p.skipped) s += fmt::format("  resumed past {}", p.skipped);
  return s;
}

void ProgressReporter::update(const graph::RunProgress& p) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  const auto gap = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
  if (now - last_ < gap) return;
  last_ = now;
  if (tty_) {
    const int width = 28;
    const double frac =
        p.total ? std::min(1.0, static_cast<double>(p.written) / static_cast<double>(p.total)) : 0;
    const int fill = static_cast<int>(frac * width);
    std::fprintf(out_, "\r\033[K[%s%s] %3d%%  %s", std::string(fill, '#').c_str(),
                 std::string(width - fill, '.').c_str(), static_cast<int>(frac * 100),
                 line(p).c_str());
  } else {
    std::fprintf(out_, "progress: %s\n", line(p).c_str());
  }
  std::fflush(out_);
}

void ProgressReporter::finish(const graph::RunProgress& p) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  if (tty_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "finished: %s in %s\n", line(p).c_str(), clock_text(p.elapsed_s).c_str());
  std::fflush(out_);
}

std::string counters_line(const graph::ResourceSnapshot& r) {
  std::string line;
  for (const graph::ResourceCounter& c : r.counters) {
    line += line.empty() ? "" : ", ";
    if (c.ratio) {
      line += fmt::format("{} {:.1f}%", c.name, 100.0 * c.value);
    } else if (c.value == static_cast<double>(static_cast<int64_t>(c.value))) {
      line += fmt::format("{} {}", c.name, static_cast<int64_t>(c.value));
    } else {
      line += fmt::format("{} {:.2f}", c.name, c.value);
    }
  }
  return fmt::format("resource {} ({}): {}\n", r.name, r.kind, line);
}

std::string summary_table(const std::vector<graph::StageSnapshot>& stages,
                          const graph::RunResult& r,
                          const std::vector<graph::ResourceSnapshot>& resources) {
  std::string out = fmt::format("{:<14} {:<18} {:>7} {:>6} {:>9} {:>9} {:>9}  {}\n", "stage",
                                "kind", "items", "errors", "p50 ms", "p95 ms", "p99 ms", "ports");
  for (const auto& s : stages) {
    std::string ports;
    for (const auto& [name, n] : s.ports) ports += fmt::format("{}={} ", name, n);
    out += fmt::format("{:<14} {:<18} {:>7} {:>6} {:>9.3f} {:>9.3f} {:>9.3f}  {}\n", s.name, s.kind,
                       s.processed, s.errors, s.p50_ms, s.p95_ms, s.p99_ms, ports);
  }
  out += fmt::format(
      "results: {} written ({} passed, {} failed; {} errors, {} rejected, {} exhausted), {} "
      "skipped "
      "(already in output), {:.2f} s\n",
      r.written, r.passed, r.failed, r.errors, r.rejected, r.exhausted, r.skipped, r.elapsed_s);
  if (!r.statuses.empty()) {
    std::string line;
    for (const auto& [status, n] : r.statuses) {
      line += fmt::format("{}{} {}", line.empty() ? "" : ", ", status.empty() ? "-" : status, n);
    }
    out += "statuses: " + line + "\n";
  }
  for (const graph::ResourceSnapshot& res : resources) out += counters_line(res);
  return out;
}

}  // namespace vsynth::cli
