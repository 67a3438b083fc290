// The vsynth binary end to end: exit codes, validate over the shipped and the bad configs, and
// a batch killed with SIGKILL at random points then resumed until every task has exactly one
// whole record.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace {

const std::string kBinary = std::string(VSYNTH_BINARY_DIR) + "/tools/vsynth/vsynth";
// One folder per test process: ctest runs the test cases of this file in parallel processes,
// and a shared stdout.txt / stderr.txt would have each read the other's output.
const fs::path kWork =
    fs::path(VSYNTH_BINARY_DIR) / "cli_test" / std::to_string(static_cast<long>(::getpid()));

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts vsynth with args; stdout/stderr to files. Returns the pid.
pid_t spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(kBinary.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(kBinary.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

Result run(const std::vector<std::string>& args) {
  fs::create_directories(kWork);
  const fs::path out = kWork / "stdout.txt", err = kWork / "stderr.txt";
  Result r;
  r.code = wait_code(spawn(args, out, err));
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

fs::path write_tasks(const std::string& name, int n) {
  fs::create_directories(kWork);
  const fs::path p = kWork / name;
  std::ofstream f(p);
  for (int i = 0; i < n; ++i) {
    f << nlohmann::json{{"id", "task-" + std::to_string(i)}, {"language", i % 3 ? "python" : "c"}}
             .dump()
      << "\n";
  }
  return p;
}

const std::string kPipeline = std::string(VSYNTH_SOURCE_DIR) + "/pipelines/route-by-language.yaml";

}  // namespace

TEST_CASE("vsynth validate accepts the shipped pipelines") {
  ::setenv("VSYNTH_MODEL", "models/gemma-3-270m-q4_k_m.gguf", 0);
  std::vector<std::string> args = {"validate"};
  for (const auto& e : fs::directory_iterator(fs::path(VSYNTH_SOURCE_DIR) / "pipelines")) {
    if (e.path().extension() == ".yaml") args.push_back(e.path().string());
  }
  auto r = run(args);
  INFO(r.out << r.err);
  CHECK(r.code == 0);
}

TEST_CASE("vsynth validate rejects every bad config with its expected message") {
  std::size_t checked = 0;
  for (const auto& e :
       fs::directory_iterator(fs::path(VSYNTH_SOURCE_DIR) / "tests/data/bad_configs")) {
    const std::string text = slurp(e.path());
    if (text.find("test.") != std::string::npos) continue;  // needs the test-only kinds
    ++checked;
    auto r = run({"validate", e.path().string()});
    INFO(e.path().string() << "\n" << r.err);
    CHECK(r.code == 2);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("# expect: ", 0) == 0) CHECK(r.err.find(line.substr(10)) != std::string::npos);
    }
  }
  CHECK(checked >= 35);  // every file in tests/data/bad_configs uses real kinds today
}

TEST_CASE("vsynth run: results, summary, exit codes") {
  const auto tasks = write_tasks("tasks_small.jsonl", 30);
  const auto out = kWork / "out_small.jsonl";
  fs::remove(out);
  auto r = run({"run", kPipeline, "--input", tasks.string(), "--output", out.string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("by_language") != std::string::npos);  // the per-stage summary table
  CHECK(r.out.find("30 written") != std::string::npos);
  // Items per final status (route-by-language: where they left, no stage-given status).
  CHECK(r.out.find("statuses: by_language.match 20, by_language.other 10") != std::string::npos);
  CHECK(r.err.find("finished: 30/30 done") != std::string::npos);

  auto again = run({"run", kPipeline, "--input", tasks.string(), "--output", out.string()});
  CHECK(again.code == 2);
  CHECK(again.err.find("already holds 30 record(s)") != std::string::npos);

  auto missing = run({"run", kPipeline, "--output", out.string(), "--resume"});
  CHECK(missing.code == 2);
  CHECK(missing.err.find("no input: pass --input") != std::string::npos);

  auto bad_input = run({"run", kPipeline, "--input", "/nonexistent/tasks.jsonl", "--output",
                        out.string(), "--resume"});
  CHECK(bad_input.code == 2);
  CHECK(bad_input.err.find("cannot read input file `/nonexistent/tasks.jsonl`") !=
        std::string::npos);
}

TEST_CASE(
    "a batch killed with SIGKILL at random points and resumed ends with every task exactly once") {
  const int n = 1500;
  const auto tasks = write_tasks("tasks_kill.jsonl", n);
  const auto out = kWork / "out_kill.jsonl";
  fs::remove(out);
  std::mt19937 rng(12345);
  // Kill once the output has grown by a random amount: mid-record, mid-fsync or between records,
  // whatever the disk's speed.
  std::uniform_int_distribution<std::uintmax_t> grow_bytes(1, 30000);
  int kills = 0;
  for (int round = 0; round < 40; ++round) {
    std::vector<std::string> args = {"run",      kPipeline,    "--input", tasks.string(),
                                     "--output", out.string(), "--quiet"};
    if (fs::exists(out)) args.push_back("--resume");
    const pid_t pid = spawn(args, kWork / "kill_stdout.txt", kWork / "kill_stderr.txt");
    if (kills < 6) {
      const std::uintmax_t start = fs::exists(out) ? fs::file_size(out) : 0;
      const std::uintmax_t target = start + grow_bytes(rng);
      int status = 0;
      pid_t reaped = 0;
      while ((reaped = ::waitpid(pid, &status, WNOHANG)) == 0) {
        std::error_code ec;
        const auto size = fs::file_size(out, ec);
        if (!ec && size >= target) break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      int code = 0;
      if (reaped == pid) {
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      } else {
        ::kill(pid, SIGKILL);
        code = wait_code(pid);
      }
      if (code == 128 + SIGKILL) {
        ++kills;
        continue;
      }
      INFO(slurp(kWork / "kill_stderr.txt"));
      REQUIRE(code == 0);  // finished before the kill landed
      break;
    }
    const int code = wait_code(pid);
    INFO(slurp(kWork / "kill_stderr.txt"));
    REQUIRE(code == 0);
    break;
  }
  CHECK(kills >= 3);
  std::map<std::string, int> seen;
  std::ifstream in(out);
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line);) {
    ++lines;
    auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());  // no torn record
    ++seen[j["id"].get<std::string>()];
  }
  CHECK(seen.size() == static_cast<std::size_t>(n));
  CHECK(lines == static_cast<std::size_t>(n));
  for (const auto& [id, count] : seen) {
    INFO(id);
    CHECK(count == 1);
  }
}

TEST_CASE("vsynth stages describes every kind, and unknown kinds get a suggestion") {
  auto r = run({"stages"});
  CHECK(r.code == 0);
  CHECK(r.out.find("core.select") != std::string::npos);
  CHECK(r.out.find("io.jsonl_sink  (sink)") != std::string::npos);
  auto one = run({"stages", "core.selct"});
  CHECK(one.code == 2);
  CHECK(one.err.find("did you mean `core.select`?") != std::string::npos);
}

TEST_CASE("vsynth dot draws the graph") {
  auto r = run({"dot", kPipeline});
  CHECK(r.code == 0);
  CHECK(r.out.find("digraph") == 0);
  CHECK(r.out.find("\"by_language\" -> out [label=\"match\"]") != std::string::npos);
}
