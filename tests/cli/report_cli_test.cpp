// `vsynth report` as a user runs it: the page of a real run (anchor.yaml over the completion
// examples, with --trace and --metrics-json) rendered in headless Chromium (Debian `chromium`):
// no console output, the task table filled, every chart drawn, the screenshot kept under the
// build folder (BUILD/report_artifacts/report.png); the same inputs give the same bytes; bad inputs
// named with exit codes; a large results file in bounded memory.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/cli/process.h"
#include "tests/test_skip.h"

namespace fs = std::filesystem;
using nlohmann::json;
using vsynth::test::slurp;
using vsynth::test::spawn_program;
using vsynth::test::spawn_vsynth;
using vsynth::test::wait_code;

namespace {

const fs::path kWork =
    fs::path(VSYNTH_BINARY_DIR) / "report_cli_test" / std::to_string(static_cast<long>(::getpid()));
const fs::path kSource = VSYNTH_SOURCE_DIR;

struct Result {
  int code = -1;
  std::string out, err;
};

Result run_vsynth(const std::vector<std::string>& args) {
  fs::create_directories(kWork);
  const fs::path out = kWork / "stdout.txt", err = kWork / "stderr.txt";
  Result r;
  r.code = wait_code(spawn_vsynth(args, out, err));
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

Result program(const std::string& name, const std::vector<std::string>& args) {
  fs::create_directories(kWork);
  const fs::path out = kWork / (name + ".out"), err = kWork / (name + ".err");
  Result r;
  r.code = wait_code(spawn_program(name, args, {{"HOME", kWork.string()}}, out, err));
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

fs::path write_file(const std::string& name, const std::string& text) {
  fs::create_directories(kWork);
  const fs::path p = kWork / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// A small real run: the anchor pipeline (no model) over the completion examples.
struct SmallRun {
  fs::path results, trace, metrics;
};

SmallRun small_run() {
  SmallRun r{kWork / "results.jsonl", kWork / "run.trace.json", kWork / "run.metrics.json"};
  const Result run = run_vsynth({"run", (kSource / "pipelines/anchor.yaml").string(), "--input",
                                 (kSource / "examples/tasks/completion.jsonl").string(), "--output",
                                 r.results.string(), "--trace", r.trace.string(), "--metrics-json",
                                 r.metrics.string(), "-q", "--overwrite"});
  INFO(run.err);
  REQUIRE(run.code == 0);
  return r;
}

// Chromium's flags for a page of ours: headless, no GPU, no sandbox (CI runs as root), its own
// profile, console messages logged to stderr (as "...:CONSOLE(line)] message").
std::vector<std::string> chromium_flags() {
  return {"--headless",
          "--disable-gpu",
          "--no-sandbox",
          "--user-data-dir=" + (kWork / "chromium-profile").string(),
          "--enable-logging=stderr",
          "--v=0",
          "--virtual-time-budget=15000",
          "--window-size=1280,2400"};
}

}  // namespace

TEST_CASE(
    "vsynth report: a run's page in headless Chromium has no console output and shows its table "
    "and charts") {
  // Phase 1: Chromium must be there (scripts/setup.sh installs it).
  if (program("chromium", {"--version"}).code == 127) {
    const char* allow = std::getenv("VSYNTH_ALLOW_MISSING_MODEL");
    if (allow && std::string(allow) == "1") VSYNTH_SKIP("no `chromium` on PATH");
    FAIL("no `chromium` on PATH: scripts/setup.sh installs it (Debian package chromium)");
  }
  // Phase 2: the run and its report, twice: the same bytes.
  const SmallRun run = small_run();
  const fs::path artifacts = fs::path(VSYNTH_BINARY_DIR) / "report_artifacts";
  fs::create_directories(artifacts);
  const fs::path page = artifacts / "report.html";
  const Result rep = run_vsynth({"report", run.results.string(), "--trace", run.trace.string(),
                                 "--metrics", run.metrics.string(), "-o", page.string()});
  INFO(rep.err);
  REQUIRE(rep.code == 0);
  CHECK(rep.err.empty());  // no warning: every input whole, graph and charts drawn
  CHECK_THAT(rep.out, Catch::Contains("6 tasks"));
  const fs::path again = kWork / "again.html";
  REQUIRE(run_vsynth({"report", run.results.string(), "--trace", run.trace.string(), "--metrics",
                      run.metrics.string(), "-o", again.string(), "-q"})
              .code == 0);
  CHECK(slurp(page) == slurp(again));
  const std::string html = slurp(page);
  CHECK(html.find("src=\"http") == std::string::npos);  // nothing fetched at view time
  CHECK(html.find("<link") == std::string::npos);

  // Phase 3: the page in the browser, as its DOM after the scripts ran.
  std::vector<std::string> args = chromium_flags();
  args.push_back("--dump-dom");
  args.push_back("file://" + page.string());
  const Result dom = program("chromium", args);
  REQUIRE(dom.code == 0);
  std::ofstream(artifacts / "report.dom.html") << dom.out;
  INFO(dom.err);
  CHECK(dom.err.find(":CONSOLE") == std::string::npos);  // not one console message
  // The task table: one row per task of the run.
  CHECK(dom.out.find("<table id=\"task-table\">") != std::string::npos);
  CHECK(occurrences(dom.out, "<tr class=\"task\">") == 6);
  CHECK(dom.out.find("complete-py-median") != std::string::npos);
  // Every chart drawn by Vega as SVG marks; the pipeline graph from Graphviz.
  std::smatch m;
  REQUIRE(std::regex_search(dom.out, m, std::regex("data-charts=\"([0-9]+)\"")));
  const int charts = std::stoi(m[1]);
  CHECK(charts >= 4);  // statuses, rates, attempts, stage share, latency, P95
  CHECK(dom.out.find("data-charts-drawn=\"" + std::to_string(charts) + "\"") != std::string::npos);
  CHECK(occurrences(dom.out, "class=\"marks\"") >= static_cast<std::size_t>(charts));
  CHECK(dom.out.find("<div class=\"graph\"><svg") != std::string::npos);

  // Phase 4: the screenshot, kept as the test's artifact.
  args = chromium_flags();
  args.push_back("--screenshot=" + (artifacts / "report.png").string());
  args.push_back("file://" + page.string());
  REQUIRE(program("chromium", args).code == 0);
  CHECK(fs::file_size(artifacts / "report.png") > 10000);
}

TEST_CASE("vsynth report: bad inputs are named with their file and line and never crash") {
  const SmallRun run = small_run();
  const std::string out = (kWork / "bad.html").string();
  // No such results file; no results file at all (the tasks); -o over an input.
  Result r = run_vsynth({"report", (kWork / "nope.jsonl").string(), "-o", out});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("cannot open") && Catch::Contains("nope.jsonl"));
  const std::string tasks = (kSource / "examples/tasks/completion.jsonl").string();
  r = run_vsynth({"report", tasks, "-o", out});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("holds no result record") &&
                        Catch::Contains("completion.jsonl:1: JSON with an `id` but no `status`"));
  r = run_vsynth({"report", run.results.string(), "-o", run.results.string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("is the results file"));
  CHECK_FALSE(fs::exists(out));
  // A page that cannot be written: exit 3, named.
  r = run_vsynth({"report", run.results.string(), "-o", (kWork / "no-such-dir/r.html").string()});
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("cannot create") && Catch::Contains("no-such-dir"));

  // Torn and foreign lines: skipped, named, the page written.
  std::string text = slurp(run.results);
  text.insert(text.find('\n') + 1, "{\"id\": \"x\", \"sta\n[1, 2]\n");
  text += "{\"id\": \"torn";
  const fs::path mixed = write_file("mixed.jsonl", text);
  r = run_vsynth({"report", mixed.string(), "-o", out});
  CHECK(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("3 line(s) are not result records") &&
                        Catch::Contains("mixed.jsonl:2: not JSON") &&
                        Catch::Contains("mixed.jsonl:3: JSON, but not a result record") &&
                        Catch::Contains("mixed.jsonl:9: not JSON, and the file ends"));
  CHECK_THAT(slurp(out), Catch::Contains("mixed.jsonl:2: not JSON"));

  // A trace from another run: its timings left out, said so.
  std::string other = "[\n";
  other += json{{"name", "anchor"},
                {"ph", "X"},
                {"ts", 1.0},
                {"dur", 2.0},
                {"pid", 1},
                {"tid", 1},
                {"args", {{"item", "someone-else"}, {"attempt", 1}}}}
               .dump();
  other += "\n]\n";
  r = run_vsynth({"report", run.results.string(), "--trace",
                  write_file("other.json", other).string(), "-o", out});
  CHECK(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("is from another run: none of its 1 items"));
  CHECK(slurp(out).find("Where time went") == std::string::npos);

  // Not a trace, not metrics: refused, named.
  r = run_vsynth({"report", run.results.string(), "--trace", run.results.string(), "-o", out});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("not a vsynth trace"));
  r = run_vsynth({"report", run.results.string(), "--metrics", run.trace.string(), "-o", out});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("not what `vsynth run --metrics-json` writes"));
  r = run_vsynth({"report", run.results.string(), "--metrics",
                  write_file("m.json", "{\"stages\": [").string(), "-o", out});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("not JSON at byte"));

  // A pipeline with errors: the page without its graph, the errors on stderr and in the page.
  const fs::path bad_yaml =
      write_file("bad.yaml", "stages:\n  a: { use: no.such_stage }\nedges:\n  - a -> out\n");
  r = run_vsynth({"report", run.results.string(), "--pipeline", bad_yaml.string(), "-o", out});
  CHECK(r.code == 0);
  CHECK_THAT(r.err,
             Catch::Contains("pipeline graph not drawn") && Catch::Contains("no.such_stage"));
  CHECK_THAT(slurp(out), Catch::Contains("Not drawn"));
}

TEST_CASE("vsynth report: a large results file is read in bounded memory with a bounded table") {
  // ~160 MB of records with 6 KB of code each: the page keeps 500 rows of at most 4 KB per
  // field, and the process's peak resident memory stays far below the file's size.
  const fs::path big = kWork / "big.jsonl";
  fs::create_directories(kWork);
  json rec = {{"status", "tests_failed"}, {"passed", false}, {"attempts", 1}};
  rec["facets"]["candidates"]["candidates"] = json::array({{{"code", std::string(6000, 'c')}}});
  uint64_t n = 0;
  {
    std::ofstream f(big, std::ios::binary);
    // Under ASan the memory is not measured (below): a smaller file checks the table in time.
    const uint64_t size = (kAddressSanitizer ? uint64_t{16} : uint64_t{160}) << 20;
    for (uint64_t bytes = 0; bytes < size; ++n) {
      rec["id"] = "task-" + std::to_string(n);
      rec["passed"] = n % 4 == 0;
      const std::string line = rec.dump() + "\n";
      f << line;
      bytes += line.size();
    }
  }
  // Peak resident memory (KiB) of `vsynth report` over a results file: the binary alone takes
  // a couple of hundred MiB (the stages' tables), so the small run's peak is the baseline.
  const auto peak_kib = [&](const fs::path& results, const fs::path& page) {
    const pid_t pid = spawn_vsynth({"report", results.string(), "-o", page.string(), "-q"},
                                   kWork / "big.out", kWork / "big.err");
    int status = 0;
    struct rusage usage {};
    ::wait4(pid, &status, 0, &usage);
    INFO(slurp(kWork / "big.err"));
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return static_cast<long>(usage.ru_maxrss);
  };
  const fs::path page = kWork / "big.html";
  const long big_kib = peak_kib(big, page);
  const std::string html = slurp(page);
  CHECK(occurrences(html, "\"record\":") == 500);
  CHECK_THAT(html, Catch::Contains(std::to_string(n) + " task records"));
  CHECK(fs::file_size(page) < (uint64_t{8} << 20));
  const SmallRun run = small_run();
  const long small_kib = peak_kib(run.results, kWork / "small.html");
  INFO("peak RSS: " << big_kib << " KiB over the large file, " << small_kib << " KiB over 6 tasks");
  // The 160 MB file costs less than 48 MiB over the 6-task one (ASan's shadow and quarantine
  // make the figure meaningless there).
  if (!kAddressSanitizer) CHECK(big_kib - small_kib < 48 * 1024);
  fs::remove(big);
}
