// The shipped pipelines that use the model, run end to end through the real `vsynth run` with
// the real default model (models/gemma-3-270m-q4_k_m.gguf): synthesize and constrained go
// generate -> validate -> back edge with feedback; generate and complete produce candidates.
// Then interruptions: SIGINT mid-run (exit 130, what was written stays whole, --resume
// finishes), and SIGKILL mid-run of synthesize with items on its back edge (after --resume
// every task has exactly one record, with a consistent history, equal to an uninterrupted run).
//
// Every case is [slow] (a few tasks, each a model run of up to 160 tokens): the release ctest
// runs them, the sanitizer run leaves them out. Moments to interrupt a run are properties of
// the run (its output holds a record and it is still going), never fixed sleeps.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/process.h"
#include "tests/cli/records.h"
#include "tests/test_skip.h"

namespace fs = std::filesystem;
using vsynth::test::by_id;
using vsynth::test::exit_code;
using vsynth::test::read_records;
using vsynth::test::slurp;
using vsynth::test::wait_code;
using vsynth::test::without_timings;
using json = nlohmann::json;

namespace {

const fs::path kSource = VSYNTH_SOURCE_DIR;
// One folder per test process (ctest runs each case in a process of its own, in parallel).
const fs::path kWork =
    fs::path(VSYNTH_BINARY_DIR) / "pipeline_e2e" / std::to_string(static_cast<long>(::getpid()));
// However slow the machine, a run that takes longer than this is stuck.
constexpr auto kRunDeadline = std::chrono::minutes(15);

// The statuses a pipeline ending in validate.async gives (docs/pipelines.md, "Results").
const std::set<std::string> kValidateStatuses = {"verified", "tests_passed", "failed", "unknown"};

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

fs::path write_tasks(const std::string& name, const std::vector<json>& tasks) {
  std::string text;
  for (const json& t : tasks) text += t.dump() + "\n";
  write_text(kWork / name, text);
  return kWork / name;
}

// The first `n` tasks of a shipped example file.
std::vector<json> example_tasks(const std::string& file, std::size_t n) {
  std::vector<json> tasks;
  std::ifstream in(kSource / "examples/tasks" / file);
  for (std::string line; tasks.size() < n && std::getline(in, line);) {
    if (!line.empty()) tasks.push_back(json::parse(line));
  }
  REQUIRE(tasks.size() == n);
  return tasks;
}

// A shipped pipeline with one more top-level key (e.g. `max_in_flight: 1`), written beside the
// test's files; every stage and parameter stays the shipped one.
fs::path pipeline_with(const std::string& name, const std::string& extra_line) {
  const fs::path p = kWork / ("with-" + name);
  write_text(p, slurp(kSource / "pipelines" / name) + "\n" + extra_line + "\n");
  return p;
}

// The model the shipped pipelines load (${VSYNTH_MODEL}), the tests' default model
// (tests/test_skip.h): a missing one fails the test (it is installed by scripts/setup.sh; a pass
// without it would prove nothing) unless VSYNTH_ALLOW_MISSING_MODEL=1 makes it a skip.
bool use_default_model() {
  if (!vsynth::test::have_default_model()) return false;
  ::setenv("VSYNTH_MODEL", vsynth::test::default_model().c_str(), 1);
  return true;
}

pid_t spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  fs::create_directories(kWork);
  return vsynth::test::spawn_vsynth(args, out, err);
}

// Whole lines (ending in '\n') in the file; 0 when it does not exist yet.
std::size_t whole_lines(const fs::path& p) {
  const std::string text = slurp(p);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Waits until the run has written at least `records` whole records while still running. True:
// it is still running (the caller interrupts it); false: it exited first (`code` set).
bool wait_for_records(pid_t pid, const fs::path& out, std::size_t records, int& code) {
  const auto deadline = std::chrono::steady_clock::now() + kRunDeadline;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      code = exit_code(status);
      return false;
    }
    if (whole_lines(out) >= records) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  code = wait_code(pid);
  FAIL("no record within the deadline");
  return false;
}

// "3 written", as the run's summary line counts.
std::string fmt_count(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what;
}

// What `vsynth run` says on stderr when Ctrl-C stopped it.
std::string fmt_interrupted(std::size_t written, std::size_t unfinished) {
  return "interrupted: " + std::to_string(written) + " results written, " +
         std::to_string(unfinished) + " task(s) left unfinished; rerun with --resume to finish";
}

struct Outcome {
  int code = -1;
  std::string out, err;
};

// `vsynth run <pipeline> --input tasks --output out [extra...]` to the end.
Outcome run(const fs::path& pipeline, const fs::path& tasks, const fs::path& out,
            std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run",          pipeline.string(), "--input",
                                   tasks.string(), "--output",        out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const fs::path o = kWork / "stdout.txt", e = kWork / "stderr.txt";
  Outcome r;
  r.code = wait_code(spawn(args, o, e));
  r.out = slurp(o);
  r.err = slurp(e);
  return r;
}

// Facet `name` of attempt `a` (1-based) of a record: the final facets for the last attempt,
// else the history entry, which keeps every facet that differs from the final one (verdicts
// and candidates always do: they carry their attempt).
const json& facet_of(const json& r, int a, const char* name) {
  if (a == r["attempts"].get<int>()) return r["facets"][name];
  return r["history"][static_cast<std::size_t>(a - 1)]["facets"][name];
}
const json& verdicts_of(const json& r, int a) {
  return facet_of(r, a, "verdicts");
}

// The feedback validate.async sends for a failed check (validate_stage.cpp: feedback()).
std::string feedback_for(const json& check) {
  const std::string what = check["check"];
  const std::string msg = check.value("message", "");
  if (what == "syntax") return "syntax error: " + msg;
  if (what == "compile") return "compile error: " + msg;
  if (what == "tests") {
    return (check.value("kind", "") == "timeout" ? "tests timed out: " : "tests failed: ") + msg;
  }
  return msg;  // spec: the counterexample as it stands
}

// A record of a generate -> validate -> back edge pipeline is consistent: a documented status;
// attempts 1..max; one history entry per earlier attempt, numbered 1, 2, ... and each one
// failed; the feedback carried into attempt k+1 is exactly the failure attempt k's verdict
// records (its first failing check), and that verdict is attempt k's.
void check_loop_record(const json& r, int max_attempts) {
  INFO(r.dump(1));
  CHECK(kValidateStatuses.count(r["status"]) == 1);
  const int attempts = r["attempts"];
  REQUIRE(attempts >= 1);
  REQUIRE(attempts <= max_attempts);
  const json history = r.value("history", json::array());
  REQUIRE(history.size() == static_cast<std::size_t>(attempts - 1));
  for (std::size_t k = 0; k < history.size(); ++k) {
    CHECK(history[k]["attempt"] == k + 1);
    CHECK(history[k]["status"] == "failed");
  }
  // Each attempt generated its own candidate, sampled hotter on each retry.
  double temperature = -1;
  for (int a = 1; a <= attempts; ++a) {
    const json& c = facet_of(r, a, "candidates");
    REQUIRE(c.is_object());
    CHECK(c["attempt"] == a);
    const double t = c["candidates"][0]["temperature"];
    CHECK(t >= temperature);
    temperature = t;
  }
  const json feedback = r.value("feedback", json::array());
  // One per failed attempt: each earlier one, and the last when it failed too (exhausted).
  const bool last_failed = r["exit"] != "validate.pass";
  REQUIRE(feedback.size() == static_cast<std::size_t>(attempts - (last_failed ? 0 : 1)));
  for (std::size_t k = 0; k < feedback.size(); ++k) {
    const int a = static_cast<int>(k) + 1;
    INFO("feedback of attempt " << a);
    CHECK(feedback[k]["attempt"] == a);
    const json& v = verdicts_of(r, a);
    REQUIRE(v.is_object());
    CHECK(v["attempt"] == a);
    CHECK(v["passed"] == false);
    const json& checks = v["candidates"][0]["checks"];
    const auto failed = std::find_if(checks.begin(), checks.end(), [](const json& c) {
      return c["status"] == "fail" || c["status"] == "error";
    });
    REQUIRE(failed != checks.end());
    if ((*failed)["status"] == "fail") {
      CHECK(feedback[k]["from"] == "validate.fail");
      CHECK(feedback[k]["message"] == feedback_for(*failed));
    } else {
      CHECK(feedback[k]["from"] == "validate.error");
    }
  }
  if (attempts == max_attempts && last_failed) {
    CHECK(r["error"].get<std::string>().find("exhausted: " + std::to_string(max_attempts)) == 0);
  }
}

// Python tasks whose visible tests expect a number the prompt never shows (the tests are not
// in the prompt): the first attempt fails, and the next one gets the failing assertion.
json secret_task(const std::string& name, int value) {
  return {{"id", "py-" + name},
          {"language", "python"},
          {"entry_point", name},
          {"prompt", "def " + name + "() -> int:\n    \"\"\"Return the secret number.\"\"\"\n"},
          {"tests", {"assert " + name + "() == " + std::to_string(value)}}};
}

// The secret tasks first: generation is serial in input order (one worker, FIFO), so both
// have failed their first attempt and wait on the back edge by the time py-absolute (trivial,
// with a spec), generated third, is written.
std::vector<json> loop_tasks() {
  std::vector<json> tasks = {secret_task("secret", 738291), secret_task("magic", 5150243)};
  tasks.push_back(example_tasks("main.jsonl", 1)[0]);
  return tasks;
}

constexpr int kMaxAttempts = 4;  // synthesize.yaml and constrained.yaml

// The secret tasks went round the back edge with the failing assertion as feedback.
void check_secret_tasks(std::map<std::string, json>& records) {
  for (const auto& [name, value] : {std::pair{"secret", 738291}, std::pair{"magic", 5150243}}) {
    const json& r = records["py-" + std::string(name)];
    INFO(r.dump(1));
    CHECK(r["attempts"].get<int>() > 1);  // the back edge was taken
    const json& first = verdicts_of(r, 1);
    CHECK(first["passed"] == false);
    // When the first candidate ran its tests, the feedback quotes the assertion it failed.
    if (first["outcome"] == "tests_failed") {
      const std::string msg = r["feedback"][0]["message"];
      CHECK(msg.find("assert " + std::string(name) + "() == " + std::to_string(value)) !=
            std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE(
    "synthesize.yaml with the real model: generate -> validate -> retry with feedback, and a run "
    "killed with SIGKILL mid-loop then resumed gives the same records",
    "[slow]") {
  if (!use_default_model()) return;
  const std::vector<json> tasks = loop_tasks();
  const fs::path input = write_tasks("synth_tasks.jsonl", tasks);
  const fs::path pipeline = kSource / "pipelines/synthesize.yaml";

  // 1. Uninterrupted.
  const fs::path whole = kWork / "synth_whole.jsonl";
  fs::remove(whole);
  const Outcome r = run(pipeline, input, whole);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("finished: 3/3 done") != std::string::npos);
  auto records = by_id(read_records(whole), tasks);
  for (const auto& [id, rec] : records) check_loop_record(rec, kMaxAttempts);
  check_secret_tasks(records);

  // 2. Killed with SIGKILL once a record is out and the run is still going: the secret tasks
  // are inside, on the back edge (see loop_tasks).
  const fs::path killed = kWork / "synth_killed.jsonl";
  fs::remove(killed);
  const pid_t pid = spawn(
      {"run", pipeline.string(), "--input", input.string(), "--output", killed.string(), "--quiet"},
      kWork / "kill_stdout.txt", kWork / "kill_stderr.txt");
  int code = -1;
  const bool running = wait_for_records(pid, killed, 1, code);
  INFO(slurp(kWork / "kill_stderr.txt"));
  REQUIRE(running);  // still going with a record out: the moment to kill it
  ::kill(pid, SIGKILL);
  REQUIRE(wait_code(pid) == 128 + SIGKILL);
  const std::size_t before = whole_lines(killed);
  REQUIRE(before < tasks.size());
  // What was out at the kill: only tasks done in one attempt; the others were inside, past
  // their first attempt (see loop_tasks).
  {
    std::istringstream lines(slurp(killed));
    for (std::string line; std::getline(lines, line);) {
      const json j = json::parse(line, nullptr, false);
      if (j.is_object()) CHECK(records[j["id"].get<std::string>()]["attempts"] == 1);
    }
  }

  // 3. Resumed admitting one task at a time: the tasks left run serially, where the first run
  // had them all in flight together.
  const Outcome resumed_run =
      run(pipeline_with("synthesize.yaml", "max_in_flight: 1"), input, killed, {"--resume"});
  INFO(resumed_run.err);
  REQUIRE(resumed_run.code == 0);
  CHECK(resumed_run.out.find(fmt_count(tasks.size() - before, "written")) != std::string::npos);
  CHECK(resumed_run.out.find(fmt_count(before, "skipped (already in output)")) !=
        std::string::npos);
  auto resumed = by_id(read_records(killed), tasks);
  for (const auto& [id, rec] : resumed) check_loop_record(rec, kMaxAttempts);
  // Same seed, same records, whether the run was interrupted or not, serial or with every task
  // in flight: each record is a function of its task.
  for (const auto& [id, rec] : records) {
    INFO(id);
    CHECK(without_timings(resumed[id]) == without_timings(rec));
  }

  // 4. Interrupted with SIGINT at the same moment: the items that reach the back edge after
  // the signal are left unfinished, not written as failed, so every record written equals the
  // uninterrupted one and --resume gives the others all their attempts.
  const fs::path stopped = kWork / "synth_sigint.jsonl";
  fs::remove(stopped);
  const pid_t ipid = spawn({"run", pipeline.string(), "--input", input.string(), "--output",
                            stopped.string(), "--quiet"},
                           kWork / "sigint_stdout.txt", kWork / "sigint_stderr.txt");
  REQUIRE(wait_for_records(ipid, stopped, 1, code));
  ::kill(ipid, SIGINT);
  REQUIRE(wait_code(ipid) == 130);
  const std::string ierr = slurp(kWork / "sigint_stderr.txt");
  INFO(ierr);
  const std::vector<json> written = read_records(stopped);
  // Every task was admitted (see loop_tasks): each is written or left unfinished.
  CHECK(ierr.find(fmt_interrupted(written.size(), tasks.size() - written.size())) !=
        std::string::npos);
  for (const json& rec : written) {
    INFO(rec["id"]);
    CHECK(without_timings(rec) == without_timings(records[rec["id"].get<std::string>()]));
  }
  const Outcome finished = run(pipeline, input, stopped, {"--resume"});
  INFO(finished.err);
  REQUIRE(finished.code == 0);
  auto all = by_id(read_records(stopped), tasks);
  for (const auto& [id, rec] : records) {
    INFO(id);
    CHECK(without_timings(all[id]) == without_timings(rec));
  }
}

TEST_CASE("constrained.yaml with the real model: the Z3 hook, the proof, validate and retry",
          "[slow]") {
  if (!use_default_model()) return;
  const std::vector<json> tasks = loop_tasks();
  const fs::path input = write_tasks("constrained_tasks.jsonl", tasks);
  const fs::path out = kWork / "constrained.jsonl";
  fs::remove(out);
  const Outcome r = run(kSource / "pipelines/constrained.yaml", input, out);
  INFO(r.err);
  REQUIRE(r.code == 0);
  auto records = by_id(read_records(out), tasks);
  for (const auto& [id, rec] : records) check_loop_record(rec, kMaxAttempts);
  check_secret_tasks(records);
  // Every record carries its proof: the tasks without a spec say so, the one with a spec was
  // proved against it (verified / refuted / unknown, never no_spec).
  for (const auto& [id, rec] : records) {
    INFO(rec.dump(1));
    REQUIRE(rec["facets"].contains("proof"));
    const std::string verdict = rec["facets"]["proof"]["verdict"];
    CHECK((verdict == "no_spec") == (id != "py-absolute"));
  }
}

TEST_CASE("generate.yaml and complete.yaml with the real model write one candidate per task",
          "[slow]") {
  if (!use_default_model()) return;
  struct Case {
    const char* pipeline;
    const char* tasks;
    int max_new_tokens;
    std::vector<std::string> facets;  // what the pipeline's stages add
  };
  for (const Case& c :
       {Case{"generate.yaml", "generate.jsonl", 128, {"candidates"}},
        Case{"complete.yaml", "completion.jsonl", 48, {"anchor", "context", "candidates"}}}) {
    INFO(c.pipeline);
    const std::vector<json> tasks = example_tasks(c.tasks, 2);
    const fs::path input = write_tasks(std::string("in-") + c.tasks, tasks);
    const fs::path out = kWork / (std::string("out-") + c.pipeline + ".jsonl");
    fs::remove(out);
    const Outcome r = run(kSource / "pipelines" / c.pipeline, input, out);
    INFO(r.err);
    REQUIRE(r.code == 0);
    for (const auto& [id, rec] : by_id(read_records(out), tasks)) {
      INFO(rec.dump(1));
      // No stage sets a status: the item's exit is its status (docs/pipelines.md).
      CHECK(rec["status"] == "generate.ok");
      CHECK(rec["exit"] == "generate.ok");
      CHECK(rec["passed"] == true);
      CHECK(rec["attempts"] == 1);
      for (const std::string& f : c.facets) CHECK(rec["facets"].contains(f));
      if (rec["facets"].contains("context")) {  // the prompt's context fit the token budget
        CHECK(rec["facets"]["context"]["over_budget"] == false);
        CHECK_FALSE(rec["facets"]["context"]["text"].get<std::string>().empty());
      }
      const json& cands = rec["facets"]["candidates"];
      CHECK(cands["prompt_tokens"].get<int>() > 0);
      REQUIRE(cands["candidates"].size() == 1);
      const json& cand = cands["candidates"][0];
      CHECK(cand["tokens"].get<int>() >= 1);
      CHECK(cand["tokens"].get<int>() <= c.max_new_tokens);
      CHECK(cand["finish"].is_string());
    }
  }
}

TEST_CASE("vsynth run interrupted by SIGINT exits 130 with whole records, and --resume finishes",
          "[slow]") {
  if (!use_default_model()) return;
  // generate.yaml admitting one task at a time, so that tasks are left when the signal lands
  // (the one inside then is stopped within a decode step and left unfinished).
  const std::vector<json> tasks = example_tasks("generate.jsonl", 5);
  const fs::path input = write_tasks("sigint_tasks.jsonl", tasks);
  const fs::path pipeline = pipeline_with("generate.yaml", "max_in_flight: 1");
  const fs::path out = kWork / "sigint.jsonl";
  fs::remove(out);

  const pid_t pid = spawn(
      {"run", pipeline.string(), "--input", input.string(), "--output", out.string(), "--quiet"},
      kWork / "sigint_stdout.txt", kWork / "sigint_stderr.txt");
  int code = -1;
  const bool running = wait_for_records(pid, out, 1, code);
  INFO(slurp(kWork / "sigint_stderr.txt"));
  REQUIRE(running);  // still going with a record out: the moment to interrupt it
  const std::size_t at_signal = whole_lines(out);
  ::kill(pid, SIGINT);
  CHECK(wait_code(pid) == 130);
  const std::string err = slurp(kWork / "sigint_stderr.txt");
  INFO(err);
  const std::vector<json> before = read_records(out);  // valid JSONL
  CHECK(before.size() >= at_signal);                   // nothing written was lost
  CHECK(before.size() < tasks.size());                 // it stopped early
  // The task inside at the signal (max_in_flight 1: at most one) is stopped and left
  // unfinished, never written with a text cut short.
  const bool none_inside = err.find(fmt_interrupted(before.size(), 0)) != std::string::npos;
  const bool one_inside = err.find(fmt_interrupted(before.size(), 1)) != std::string::npos;
  CHECK((none_inside || one_inside));
  const std::string written = slurp(out);

  const Outcome resumed = run(pipeline, input, out, {"--resume", "--quiet"});
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  const auto records = by_id(read_records(out), tasks);  // every task exactly once
  CHECK(records.size() == tasks.size());
  CHECK(slurp(out).compare(0, written.size(), written) == 0);  // the earlier records untouched
  for (const auto& [id, rec] : records) CHECK(rec["status"] == "generate.ok");
}
