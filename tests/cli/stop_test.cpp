// SIGTERM (what Slurm and Kubernetes send) and the first Ctrl-C end `vsynth run` within 5 s
// even while a stage is deep in work of its own: a sandboxed test run that would take a
// minute, and context.deps indexing thousands of files. Nothing half-done is written: the
// tasks inside are left unfinished and --resume runs them again.
#include <signal.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/process.h"

namespace fs = std::filesystem;
using nlohmann::json;
using vsynth::test::slurp;
using vsynth::test::spawn_vsynth;
using vsynth::test::wait_code;

namespace {

using Clock = std::chrono::steady_clock;

const fs::path kWork =
    fs::path(VSYNTH_BINARY_DIR) / "stop_test" / std::to_string(static_cast<long>(::getpid()));

fs::path write_file(const std::string& name, const std::string& text) {
  fs::create_directories(kWork);
  const fs::path p = kWork / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

fs::path write_tasks(const std::string& name, const std::vector<json>& tasks) {
  std::string text;
  for (const json& t : tasks) text += t.dump() + "\n";
  return write_file(name, text);
}

// Polls for the child's exit until `limit`; the exit code, or -1 when it is still running.
int exit_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return vsynth::test::exit_code(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

// Whether a process named `comm` (as /proc/PID/comm gives it) descends from `ancestor`.
bool has_descendant(pid_t ancestor, const std::string& comm) {
  std::map<pid_t, pid_t> parent;
  std::vector<pid_t> named;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    const pid_t pid = std::stoi(name);
    parent[pid] = ppid;
    if (line.substr(line.find('(') + 1, close - line.find('(') - 1) == comm) named.push_back(pid);
  }
  for (pid_t p : named) {
    for (int hops = 0; p > 1 && hops < 64; ++hops) {
      if (p == ancestor) return true;
      const auto it = parent.find(p);
      if (it == parent.end()) break;
      p = it->second;
    }
  }
  return false;
}

struct Stopped {
  int code = -1;
  double seconds = 0;  // from the signal to the exit
  std::string err;
};

// Starts `vsynth run`, waits until `ready` says the stage is inside its long work (polled,
// for at most a minute) or, without it, `settle`; sends `sig` and measures how long the process
// takes to end. A process that outlives the 5 s is killed (the test then fails on the code).
Stopped run_and_stop(const fs::path& pipeline, const fs::path& input, const fs::path& output,
                     int sig, std::chrono::milliseconds settle,
                     const std::function<bool(pid_t)>& ready = {}) {
  fs::remove(output);
  const fs::path out = kWork / "stdout.txt", err = kWork / "stderr.txt";
  const pid_t pid = spawn_vsynth(
      {"run", pipeline.string(), "--input", input.string(), "--output", output.string(), "--quiet"},
      out, err);
  if (ready) {
    const auto until = Clock::now() + std::chrono::minutes(1);
    while (Clock::now() < until && !ready(pid)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  std::this_thread::sleep_for(settle);
  Stopped s;
  const auto t0 = Clock::now();
  ::kill(pid, sig);
  s.code = exit_within(pid, std::chrono::seconds(5));
  s.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (s.code == -1) {
    ::kill(pid, SIGKILL);
    wait_code(pid);
  }
  s.err = slurp(err);
  return s;
}

}  // namespace

TEST_CASE("SIGTERM and Ctrl-C end a run within 5 s while sandboxed tests sleep, writing nothing") {
  // Three candidates whose tests take a minute each, against a 2 minute limit: without the
  // stop reaching the sandbox the run would go on for minutes.
  const fs::path pipeline = write_file("validate.yaml", R"(pipeline: validate-only
resources:
  box: { use: sandbox.bwrap, with: { workers: 2, wall_ms: 120000, cpu_ms: 120000 } }
stages:
  validate: { use: validate.async, with: { sandbox: box, checks: [tests], timeout_ms: 120000 } }
edges:
  - validate.pass -> out
  - validate.fail -> out
  - validate.error -> out
)");
  std::vector<json> tasks;
  for (int i = 0; i < 3; ++i) {
    tasks.push_back({{"id", "slow-" + std::to_string(i)},
                     {"language", "python"},
                     {"candidate", "def f(x):\n    return x\n"},
                     {"tests", "import time\ntime.sleep(60)\nassert f(1) == 1\n"}});
  }
  const fs::path input = write_tasks("slow_tests.jsonl", tasks);
  const fs::path output = kWork / "slow_tests.out.jsonl";

  for (const int sig : {SIGTERM, SIGINT}) {
    INFO("signal " << sig);
    // Signalled once a sandbox (bwrap) runs under vsynth, and the tests in it have started.
    const Stopped s = run_and_stop(pipeline, input, output, sig, std::chrono::milliseconds(300),
                                   [](pid_t pid) { return has_descendant(pid, "bwrap"); });
    INFO(s.err);
    CHECK(s.code == 130);
    CHECK(s.seconds < 5.0);
    // The tests were cut short by the stop, not failed by the candidates: nothing written.
    CHECK(slurp(output).empty());
    CHECK(s.err.find("interrupted: 0 results written, 3 task(s) left unfinished") !=
          std::string::npos);
  }
}

TEST_CASE("SIGTERM ends a run within 5 s while context.deps indexes thousands of files") {
  // Two tasks whose `files` are 10,000 Python modules each (the source's default max_files)
  // of 8 functions: indexing one takes seconds (3.5 s on an idle 2-core machine, far more
  // under the sanitizers), longer than the signal may wait.
  const fs::path pipeline = write_file("deps.yaml", R"(pipeline: deps-only
stages:
  anchor: { use: ast.anchor }
  deps:   { use: context.deps, with: { hops: 2, cache_mb: 4 } }
edges:
  - anchor -> deps -> out
)");
  json files = json::array();
  for (int i = 0; i < 10000; ++i) {
    const std::string n = std::to_string(i), next = std::to_string(i + 1);
    std::string text = "from pkg.mod" + next + " import helper" + next + "_0\n";
    for (int k = 0; k < 8; ++k) {
      const std::string f = "helper" + n + "_" + std::to_string(k);
      text += "\n\ndef " + f + "(x, y=None):\n    \"\"\"Doubles x.\"\"\"\n    if y is None:\n" +
              "        y = helper" + next + "_0(x)\n    return [v * 2 for v in range(x)] + [y]\n";
    }
    files.push_back({{"path", "pkg/mod" + n + ".py"}, {"source", text}});
  }
  const std::string source = "from pkg.mod0 import helper0_0\n\ndef main():\n    return helper0_0(";
  std::vector<json> tasks;
  for (const char* id : {"big-project-1", "big-project-2"}) {
    tasks.push_back({{"id", id},
                     {"path", "main.py"},
                     {"source", source},
                     {"cursor", {{"offset", source.size()}}},
                     {"files", files}});
  }
  const fs::path input = write_tasks("big_project.jsonl", tasks);
  const fs::path output = kWork / "big_project.out.jsonl";

  const Stopped s = run_and_stop(pipeline, input, output, SIGTERM, std::chrono::seconds(2));
  INFO(s.err);
  CHECK(s.code == 130);
  CHECK(s.seconds < 5.0);
  // A machine slow enough (a sanitizer build) may still be setting up at the signal: it then
  // exits at once, having written nothing.
  if (s.err.find("interrupted before the run started") != std::string::npos) {
    CHECK(slurp(output).empty());
    return;
  }
  // On a machine fast enough to finish a task before the signal its record is there, whole;
  // the others are left unfinished, never written half-indexed.
  std::size_t written = 0;
  std::istringstream lines(slurp(output));
  for (std::string line; std::getline(lines, line); ++written) {
    const json rec = json::parse(line);
    CHECK(rec["status"] == "deps.ok");
  }
  CHECK(s.err.find("interrupted: " + std::to_string(written) + " results written") !=
        std::string::npos);
}
