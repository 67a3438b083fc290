// vsynth report's readers on their own: the results scan (aggregates, the bounded task table,
// lines that are not records), the trace scan (stage times, P95 attribution, a trace from
// another run), and the results scan of a file far larger than the memory it may use.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/vsynth/report/results_scan.h"
#include "tools/vsynth/report/run_metrics.h"
#include "tools/vsynth/report/trace_scan.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace vsynth::cli::report;

namespace {

const fs::path kWork = fs::path(VSYNTH_BINARY_DIR) / "report_scan_test" /
                       std::to_string(static_cast<long>(::getpid()));

fs::path write_file(const std::string& name, const std::string& text) {
  fs::create_directories(kWork);
  const fs::path p = kWork / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

// A result record as `vsynth run` writes it (graph/item.cpp Item::to_record), with a candidate,
// its checks and, for retried tasks, the first attempt in `history`.
json record(const std::string& id, bool passed, int attempts, const std::string& code = "x = 1") {
  json r = {{"id", id},
            {"status", passed ? "tests_passed" : "tests_failed"},
            {"passed", passed},
            {"attempts", attempts}};
  r["facets"]["candidates"] = {
      {"attempt", attempts},
      {"kv_pool", {{"cached_tokens", 30}, {"prompt_tokens", 100}, {"hit", true}}},
      {"candidates",
       json::array({{{"code", code}, {"tokens", 50}, {"decode_ms", 500.0}, {"finish", "eog"}}})}};
  r["facets"]["verdicts"] = {
      {"tests_visibility", "visible"},
      {"outcome", r["status"]},
      {"candidates",
       json::array(
           {{{"index", 0},
             {"passed", passed},
             {"checks", json::array({{{"check", "tests"},
                                      {"status", passed ? "pass" : "fail"},
                                      {"message", passed ? "" : "assert f(2) == 4"}}})}}})}};
  if (attempts > 1) {
    r["feedback"] = json::array({{{"attempt", 1}, {"from", "validate.fail"}, {"message", "m"}}});
    r["history"] = json::array({{{"attempt", 1},
                                 {"status", "tests_failed"},
                                 {"facets", {{"candidates", json::object()}}}}});
  }
  return r;
}

std::string lines(const std::vector<json>& records) {
  std::string out;
  for (const auto& r : records) out += r.dump() + "\n";
  return out;
}

// A child process that runs `body` under an address-space cap of `cap` bytes above what the
// process has mapped now; its exit status: 0 done, 1 threw, 2 out of memory.
template <class F>
int under_memory_cap(std::size_t cap, F&& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0;
    statm >> pages;
    const rlim_t limit = pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) + cap;
    const struct rlimit rl { limit, limit };
    ::setrlimit(RLIMIT_AS, &rl);
    try {
      body();
    } catch (const std::bad_alloc&) {
      ::_exit(2);
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

}  // namespace

TEST_CASE("report results: torn and foreign and oversized lines are counted and named") {
  std::string text = record("a", true, 1).dump() + "\n";
  text += "{\"id\": \"b\", \"status\": \"tests_pa\n";                  // line 2: torn
  text += "{\"id\": \"t1\", \"path\": \"x.py\", \"source\": \"\"}\n";  // line 3: a task line
  text += "[1, 2, 3]\n";                                               // line 4: foreign JSON
  text += "\n";                                                        // line 5: blank
  text += "{\"id\": \"big\", \"status\": \"" + std::string(3000, 'x') + "\"}\n";  // 6: oversized
  text += record("c", false, 1).dump() + "\n";
  text += "{\"id\": \"d\", \"sta";  // line 8: torn at the end, no newline
  ScanLimits lim;
  lim.max_line_bytes = 2048;
  const ResultsSummary s = scan_results(write_file("mixed.jsonl", text).string(), lim);
  CHECK(s.lines == 8);
  CHECK(s.records == 2);
  CHECK(s.torn == 2);
  CHECK(s.foreign == 2);
  CHECK(s.oversized == 1);
  REQUIRE(s.bad.size() == 5);
  CHECK(s.bad[0].line == 2);
  CHECK(s.bad[1].line == 3);
  CHECK_THAT(s.bad[1].why, Catch::Contains("a task line"));
  CHECK(s.bad[2].line == 4);
  CHECK(s.bad[3].line == 6);
  CHECK_THAT(s.bad[3].why, Catch::Contains("longer than 2048 bytes"));
  CHECK(s.bad[4].line == 8);
  CHECK_THAT(s.bad[4].why, Catch::Contains("interrupted run"));
  CHECK(s.ids.may_contain("a"));
  CHECK(s.ids.may_contain("c"));
  CHECK_FALSE(s.ids.may_contain("b"));
}

TEST_CASE("report results: the table is failures first up to max_tasks with each field cut") {
  std::vector<json> recs;
  for (int i = 0; i < 6; ++i) recs.push_back(record("pass-" + std::to_string(i), true, 1));
  for (int i = 0; i < 3; ++i) {
    recs.push_back(record("fail-" + std::to_string(i), false, 1, std::string(10000, 'c')));
  }
  ScanLimits lim;
  lim.max_tasks = 5;
  lim.row.max_string = 100;
  const ResultsSummary s = scan_results(write_file("table.jsonl", lines(recs)).string(), lim);
  REQUIRE(s.table.size() == 5);
  CHECK(s.table[0]["record"]["id"] == "fail-0");
  CHECK(s.table[2]["record"]["id"] == "fail-2");
  CHECK(s.table[3]["record"]["id"] == "pass-0");
  CHECK(s.table[4]["record"]["id"] == "pass-1");
  CHECK(s.table[0]["line"] == 7);
  CHECK(s.failures_left_out == 0);
  CHECK(s.passes_left_out == 4);
  const std::string code =
      s.table[0]["record"]["facets"]["candidates"]["candidates"][0]["code"].get<std::string>();
  CHECK(code.size() < 200);
  CHECK_THAT(code, Catch::Contains("9900 more bytes cut"));
  // Every record still counts, whatever the table keeps.
  CHECK(s.records == 9);
  CHECK(s.visible.tasks == 9);
  CHECK(s.visible.claimed == 6);
}

TEST_CASE("report results: claimed and verified and hidden rates with oracle rows apart") {
  json verified = record("v", true, 1);
  verified["facets"]["proof"] = {
      {"verdict", "verified"},
      {"candidates", json::array({{{"index", 0}, {"verdict", "verified"}}})}};
  verified["hidden"] = false;  // claimed and proved, yet the hidden tests fail
  json refuted = record("r", false, 1);
  refuted["facets"]["proof"] = {{"verdict", "refuted"}, {"counterexample", "x = 3"}};
  refuted["hidden"] = false;
  json plain = record("p", true, 1);
  plain["hidden"] = true;
  json oracle = record("o", true, 1);
  oracle["status"] = "oracle_tests_passed";
  oracle["facets"]["verdicts"]["tests_visibility"] = "oracle";
  const ResultsSummary s = scan_results(
      write_file("rates.jsonl", lines({verified, refuted, plain, oracle})).string(), ScanLimits{});
  CHECK(s.visible.tasks == 3);
  CHECK(s.visible.claimed == 2);
  CHECK(s.visible.proved == 2);
  CHECK(s.visible.verified == 1);
  CHECK(s.visible.hidden_scored == 3);
  CHECK(s.visible.hidden_passed == 1);
  CHECK(s.oracle.tasks == 1);
  CHECK(s.oracle.claimed == 1);
  CHECK(s.statuses.counts().at("oracle_tests_passed") == 1);
  REQUIRE(s.table.size() == 4);
  CHECK(s.table[3]["oracle"] == true);
}

TEST_CASE("report results: attempts and what the loop changed and engine totals") {
  const ResultsSummary s = scan_results(
      write_file("loop.jsonl",
                 lines({record("a", true, 1), record("b", true, 3), record("c", false, 2)}))
          .string(),
      ScanLimits{});
  CHECK(s.attempts.at(1) == 1);
  CHECK(s.attempts.at(2) == 1);
  CHECK(s.attempts.at(3) == 1);
  CHECK(s.retried == 2);
  CHECK(s.retried_passed == 1);
  CHECK(s.feedback_from.counts().at("validate.fail") == 2);
  CHECK(s.changed_facets.counts().at("candidates") == 2);
  CHECK(s.transitions.counts().at("tests_failed -> tests_passed") == 1);
  CHECK(s.transitions.counts().at("tests_failed -> tests_failed") == 1);
  CHECK(s.engine.candidates == 3);
  CHECK(s.engine.tokens == 150);
  CHECK(s.engine.decode_ms == Approx(1500));
  CHECK(s.engine.prompts == 3);
  CHECK(s.engine.prompt_hits == 3);
  CHECK(s.engine.cached_tokens == 90);
}

TEST_CASE("report results: distinct keys are bounded and the rest counted as (other)") {
  std::vector<json> recs;
  for (int i = 0; i < 100; ++i) {
    json r = record("t" + std::to_string(i), false, 1);
    r["status"] = "weird_" + std::to_string(i);
    recs.push_back(r);
  }
  ScanLimits lim;
  lim.max_keys = 10;
  const ResultsSummary s = scan_results(write_file("keys.jsonl", lines(recs)).string(), lim);
  CHECK(s.statuses.counts().size() == 10);
  CHECK(s.statuses.counts().at("(other)") == 91);
}

namespace {

// A trace as graph/trace.cpp writes it: the metadata event, then one span per item per stage.
std::string trace_text(const std::vector<std::string>& items, bool closed) {
  std::string out = "[\n" + json{{"name", "process_name"},
                                 {"ph", "M"},
                                 {"pid", 1},
                                 {"args", {{"name", "vsynth t"}, {"pipeline", "/p/x.yaml"}}}}
                                .dump();
  double t = 0;
  int n = 0;
  for (const auto& id : items) {
    // Item k: anchor 1 ms, then generate (k+1)*10 ms after 2 ms in a queue.
    const double gen = 10.0 * ++n;
    for (const auto& [stage, start, dur] :
         {std::tuple{"anchor", t, 1.0}, std::tuple{"generate", t + 3.0, gen}}) {
      out += ",\n" + json{{"name", stage},     {"cat", "stage"},
                          {"ph", "X"},         {"ts", start * 1000},
                          {"dur", dur * 1000}, {"pid", 1},
                          {"tid", 1},          {"args", {{"item", id}, {"attempt", 1}}}}
                         .dump();
    }
    t += 1;
  }
  return out + (closed ? "\n]\n" : "\n");
}

}  // namespace

TEST_CASE("report trace: stage times and slowest items and the P95 items' attribution") {
  std::vector<std::string> ids;
  for (int i = 1; i <= 20; ++i) ids.push_back("task-" + std::to_string(i));
  const ResultsSummary r = scan_results(
      write_file("r.jsonl", lines({record("task-1", true, 1), record("task-20", false, 1)}))
          .string(),
      ScanLimits{});
  const TraceSummary t =
      scan_trace(write_file("t.json", trace_text(ids, true)).string(), TraceLimits{}, &r.ids);
  CHECK(t.pipeline == "/p/x.yaml");
  CHECK_FALSE(t.unterminated);
  CHECK(t.items == 20);
  REQUIRE(t.stages.size() == 2);
  CHECK(t.stages[0].stage == "anchor");
  CHECK(t.stages[0].spans == 20);
  CHECK(t.stages[0].busy_ms == Approx(20));
  CHECK(t.stages[1].busy_ms == Approx(10.0 * 210));
  CHECK(t.stages[1].hist.max_ms == Approx(200));
  // P95 of item walls (3 + 10k ms): the 19th of 20, so items 19 and 20.
  CHECK(t.p95_item_ms == Approx(193));
  CHECK(t.p95_items == 2);
  REQUIRE(t.p95_stage_ms.size() == 2);
  CHECK(t.p95_stage_ms[1] == Approx(390));
  CHECK(t.p95_wall_ms - t.p95_stage_ms[0] - t.p95_stage_ms[1] == Approx(4));  // queued
  REQUIRE(t.slowest.size() == 2);
  CHECK(t.slowest[0].id == "task-20");
  CHECK(t.slowest[0].wall_ms == Approx(203));
  CHECK(t.ids_checked == 20);
  CHECK(t.ids_in_results == 2);
  // The run's wall: first start (0) to the last end (19 + 3 + 200 ms).
  CHECK(t.wall_ms == Approx(222));
}

TEST_CASE("report trace: from another run or interrupted or not a trace at all") {
  const ResultsSummary r =
      scan_results(write_file("r2.jsonl", lines({record("mine", true, 1)})).string(), ScanLimits{});
  // Another run's items: none of them is in the results.
  const TraceSummary other = scan_trace(
      write_file("other.json", trace_text({"x", "y"}, true)).string(), TraceLimits{}, &r.ids);
  CHECK(other.ids_checked == 2);
  CHECK(other.ids_in_results == 0);
  // Interrupted: no closing bracket, the last event torn.
  std::string torn = trace_text({"mine"}, false);
  torn.back() = ',';
  torn += "\n{\"name\": \"gen";
  const TraceSummary cut = scan_trace(write_file("cut.json", torn).string(), TraceLimits{}, &r.ids);
  CHECK(cut.unterminated);
  CHECK(cut.torn == 1);
  REQUIRE(cut.bad.size() == 1);
  CHECK(cut.bad[0].line == 5);
  CHECK(cut.ids_in_results == 1);
  // Not ours: a Chrome trace object, an empty array, a results file.
  CHECK_THROWS_WITH(scan_trace(write_file("obj.json", "{\"traceEvents\": []}\n").string(),
                               TraceLimits{}, nullptr),
                    Catch::Contains("does not start with `[`"));
  CHECK_THROWS_WITH(scan_trace(write_file("empty.json", "[\n]\n").string(), TraceLimits{}, nullptr),
                    Catch::Contains("no stage span"));
  CHECK_THROWS_WITH(
      scan_trace(write_file("missing.json", "").string() + ".nope", TraceLimits{}, nullptr),
      Catch::Contains("cannot open"));
}

TEST_CASE("report results: a file many times the memory cap is read in one bounded pass") {
  // ~192 MB: 20,000 records of ~6 KB (code, messages) and one 64 MiB line with no newline in
  // reach of a line buffer; the scan runs with 64 MiB of address space over what the test
  // process has mapped. $VSYNTH_REPORT_BIG_MB (e.g. 1024) makes it the 1 GB file of issue 15.
  const char* env = std::getenv("VSYNTH_REPORT_BIG_MB");
  // Under ASan the cap is not measured (below), so a smaller file checks the counts in time.
  const std::size_t target = (env && *env ? std::stoul(env) : kAddressSanitizer ? 72 : 192) << 20;
  const fs::path path = kWork / "big.jsonl";
  fs::create_directories(kWork);
  uint64_t written = 0, records = 0;
  {
    std::ofstream f(path, std::ios::binary);
    const std::string line_fail = record("fail", false, 2, std::string(6000, 'f')).dump();
    const std::string line_pass = record("pass", true, 1, std::string(6000, 'p')).dump();
    f << std::string(std::size_t{64} << 20, 'z') << "\n";
    written += (std::size_t{64} << 20) + 1;
    while (written < target) {
      const std::string& l = records % 10 == 0 ? line_fail : line_pass;
      f << l << '\n';
      written += l.size() + 1;
      ++records;
    }
  }
  ScanLimits lim;
  lim.max_line_bytes = std::size_t{1} << 20;
  const auto scan = [&] {
    const ResultsSummary s = scan_results(path.string(), lim);
    if (s.records != records || s.oversized != 1 || s.table.size() != lim.max_tasks ||
        s.visible.claimed != records - (records + 9) / 10) {
      throw std::runtime_error("wrong counts");
    }
  };
  // ASan keeps freed memory in quarantine (256 MiB): the cap would measure that, not the scan.
  if (kAddressSanitizer) {
    scan();
    CHECK(true);
  } else {
    CHECK(under_memory_cap(std::size_t{64} << 20, scan) == 0);
    // The cap bites: reading the whole file into memory under it fails.
    CHECK(under_memory_cap(std::size_t{64} << 20, [&] {
            std::ifstream in(path, std::ios::binary);
            std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            if (all.size() != written) throw std::runtime_error("short read");
          }) == 2);
  }
  fs::remove(path);
}

TEST_CASE("report metrics: a run's document and a scaled job's ranks and files that are neither") {
  const json one = {
      {"pipeline", "/p/a.yaml"},
      {"stages", json::array({{{"stage", "gen"}, {"items", 3}}})},
      {"resources", json::array({{{"resource", "coder"}, {"counters", json::object()}}})}};
  const RunMetrics m = read_metrics(write_file("m.json", one.dump()).string());
  CHECK(m.pipeline == "/p/a.yaml");
  REQUIRE(m.stages.size() == 1);
  CHECK(m.stages[0]["stage"] == "gen");
  json r0 = one, r1 = one;
  r0["rank"] = 0;
  r1["rank"] = 1;
  const RunMetrics job =
      read_metrics(write_file("job.json", json{{"ranks", {r0, r1}}}.dump()).string());
  CHECK(job.pipeline == "/p/a.yaml");
  REQUIRE(job.stages.size() == 2);
  CHECK(job.stages[1]["stage"] == "gen (rank 1)");
  CHECK(job.resources[0]["resource"] == "coder (rank 0)");
  CHECK_THROWS_WITH(read_metrics(write_file("bad.json", "{\"stages\": [1,").string()),
                    Catch::Contains("not JSON at byte"));
  CHECK_THROWS_WITH(read_metrics(write_file("other.json", "[1, 2]").string()),
                    Catch::Contains("not what `vsynth run --metrics-json` writes"));
  CHECK_THROWS_WITH(read_metrics((kWork / "absent.json").string()), Catch::Contains("cannot read"));
}

TEST_CASE("report results: absurd numbers in a foreign record count as absent") {
  json r = record("odd", true, 1);
  r["attempts"] = 1e300;
  r["facets"]["candidates"]["candidates"][0]["tokens"] = -5;
  r["facets"]["candidates"]["candidates"][0]["decode_ms"] = "fast";
  const ResultsSummary s = scan_results(write_file("odd.jsonl", lines({r})).string(), ScanLimits{});
  CHECK(s.records == 1);
  CHECK(s.attempts.at(1) == 1);
  CHECK(s.engine.tokens == 0);
  CHECK(s.engine.decode_ms == 0);
}
