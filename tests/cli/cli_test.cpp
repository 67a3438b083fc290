// The vsynth binary end to end: exit codes, validate over the shipped and the bad configs, a
// batch killed with SIGKILL at random points then resumed until every task has exactly one
// whole record, the output's safety (one writer, never the input, whole records after a failed
// write), input limits and messages, and `generate`'s command line.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "tests/cli/process.h"
#include "tests/test_skip.h"

namespace fs = std::filesystem;
using vsynth::test::ChildSetup;
using vsynth::test::exit_code;
using vsynth::test::slurp;
using vsynth::test::spawn_vsynth;
using vsynth::test::wait_code;

namespace {

// One folder per test process: ctest runs the test cases of this file in parallel processes,
// and a shared stdout.txt / stderr.txt would have each read the other's output.
const fs::path kWork =
    fs::path(VSYNTH_BINARY_DIR) / "cli_test" / std::to_string(static_cast<long>(::getpid()));

struct Result {
  int code = -1;
  std::string out, err;
};

Result run(const std::vector<std::string>& args, const ChildSetup& setup = {}) {
  fs::create_directories(kWork);
  const fs::path out = kWork / "stdout.txt", err = kWork / "stderr.txt";
  Result r;
  r.code = wait_code(spawn_vsynth(args, out, err, setup));
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
  std::mt19937 rng(12345);
  // Kill once the output has grown by a random amount: mid-record, mid-fsync or between records,
  // whatever the disk's speed. On a loaded machine a run may finish before this test sees its
  // output grow: no failure, that round just ends the batch. What must hold: every run ends
  // killed or with exit 0, at least one kill lands mid-run (a batch without one starts over, a
  // few times at most), and the output ends with every task once, whole.
  std::uniform_int_distribution<std::uintmax_t> grow_bytes(1, 30000);
  int kills = 0;
  for (int batch = 0; batch < 5 && kills == 0; ++batch) {
    fs::remove(out);
    bool finished = false;
    for (int round = 0; round < 40 && !finished; ++round) {
      std::vector<std::string> args = {"run",      kPipeline,    "--input", tasks.string(),
                                       "--output", out.string(), "--quiet"};
      if (fs::exists(out)) args.push_back("--resume");
      const pid_t pid = spawn_vsynth(args, kWork / "kill_stdout.txt", kWork / "kill_stderr.txt");
      int code = 0;
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
      } else {
        code = wait_code(pid);
      }
      INFO(slurp(kWork / "kill_stderr.txt"));
      REQUIRE(code == 0);  // ran to the end (before a kill could land, or after the last)
      finished = true;
    }
    REQUIRE(finished);
  }
  CHECK(kills >= 1);
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

// --- the output is the user's data ---

namespace {

// Every line of a results file, parsed; fails the test on a line that is not a whole record.
std::vector<nlohmann::json> read_records(const fs::path& p) {
  const std::string data = slurp(p);
  if (!data.empty()) CHECK(data.back() == '\n');
  std::vector<nlohmann::json> out;
  std::istringstream in(data);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    INFO(p.string() << ": " << line.substr(0, 200));
    REQUIRE(j.is_object());
    out.push_back(std::move(j));
  }
  return out;
}

std::map<std::string, int> id_counts(const std::vector<nlohmann::json>& records) {
  std::map<std::string, int> seen;
  for (const auto& r : records) ++seen[r["id"].get<std::string>()];
  return seen;
}

}  // namespace

TEST_CASE("vsynth run refuses an output another process holds, naming it, and leaves it alone") {
  const auto tasks = write_tasks("tasks_lock.jsonl", 10);
  const auto out = kWork / "out_lock.jsonl";
  std::ofstream(out) << "{\"id\":\"task-0\",\"status\":\"x\"}\n";
  const std::string before = slurp(out);
  const int fd = ::open(out.c_str(), O_RDONLY);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);  // as a running vsynth holds it
  for (const char* mode : {"--resume", "--overwrite"}) {
    auto r = run({"run", kPipeline, "--input", tasks.string(), "--output", out.string(), mode});
    INFO(mode << ": " << r.err);
    CHECK(r.code == 3);
    CHECK(r.err.find("is in use by another run (pid " + std::to_string(::getpid())) !=
          std::string::npos);
    CHECK(slurp(out) == before);
  }
  ::close(fd);
  auto free = run({"run", kPipeline, "--input", tasks.string(), "--output", out.string(),
                   "--resume", "--quiet"});
  CHECK(free.code == 0);
  CHECK(id_counts(read_records(out)).size() == 10);
}

TEST_CASE("two runs on one output: the second is refused while the first runs, no duplicates") {
  const int n = 3000;
  const auto tasks = write_tasks("tasks_two.jsonl", n);
  const auto out = kWork / "out_two.jsonl";
  fs::remove(out);
  // Once the first run has written a record it holds the lock (taken before any write, kept
  // to its exit); stopped, it keeps holding it however slow this machine is. Should it finish
  // before the stop lands, nothing was shown: start over (a few times at most).
  pid_t first = -1;
  for (int attempt = 0; attempt < 5 && first < 0; ++attempt) {
    fs::remove(out);
    const pid_t pid = spawn_vsynth(
        {"run", kPipeline, "--input", tasks.string(), "--output", out.string(), "--quiet"},
        kWork / "first_stdout.txt", kWork / "first_stderr.txt");
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      std::error_code ec;
      if (fs::file_size(out, ec) > 0 && !ec) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::kill(pid, SIGSTOP);
    if (::waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status)) {
      first = pid;
    } else {
      INFO(slurp(kWork / "first_stderr.txt"));
      REQUIRE(WIFEXITED(status));
      REQUIRE(WEXITSTATUS(status) == 0);  // it finished first: fine, try again
    }
  }
  REQUIRE(first > 0);
  for (const char* mode : {"--resume", "--overwrite"}) {
    auto second = run(
        {"run", kPipeline, "--input", tasks.string(), "--output", out.string(), mode, "--quiet"});
    INFO(mode << ": " << second.err);
    CHECK(second.code == 3);
    CHECK(second.err.find("in use by another run (pid " + std::to_string(first) + ", `vsynth`)") !=
          std::string::npos);
  }
  ::kill(first, SIGCONT);
  CHECK(wait_code(first) == 0);
  const auto records = read_records(out);
  CHECK(records.size() == static_cast<std::size_t>(n));
  const auto seen = id_counts(records);
  CHECK(seen.size() == static_cast<std::size_t>(n));
  for (const auto& [id, count] : seen) {
    INFO(id);
    CHECK(count == 1);
  }
}

TEST_CASE("vsynth run refuses to write its results over its input, whatever it is called") {
  const auto tasks = write_tasks("tasks_same.jsonl", 5);
  const std::string before = slurp(tasks);
  const fs::path link = kWork / "tasks_symlink.jsonl", hard = kWork / "tasks_hardlink.jsonl";
  fs::remove(link);
  fs::remove(hard);
  fs::create_symlink(tasks, link);
  fs::create_hard_link(tasks, hard);
  const fs::path dotted = kWork / "." / tasks.filename();
  for (const fs::path& as : {tasks, link, hard, dotted}) {
    auto r =
        run({"run", kPipeline, "--input", tasks.string(), "--output", as.string(), "--overwrite"});
    INFO(as.string() << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("input `" + tasks.string() + "` and output `" + as.string() +
                     "` are the same file") != std::string::npos);
    CHECK(slurp(tasks) == before);
  }
  const auto out = kWork / "out_same.jsonl";
  fs::remove(out);
  auto trace = run({"run", kPipeline, "--input", tasks.string(), "--output", out.string(),
                    "--trace", out.string()});
  CHECK(trace.code == 2);
  CHECK(trace.err.find("output `" + out.string() + "` and --trace `" + out.string() +
                       "` are the same file") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("a failed write leaves whole records only, exits 3, and --resume completes the file") {
  const int n = 400;
  const auto tasks = write_tasks("tasks_full.jsonl", n);
  const auto out = kWork / "out_full.jsonl";
  fs::remove(out);
  // RLIMIT_FSIZE fails the write that crosses it part-way through a record, as a full disk
  // does (stdout and stderr stay well under it: --quiet).
  const rlim_t limit = 8000;  // bytes; ~110 per record
  auto r = run({"run", kPipeline, "--input", tasks.string(), "--output", out.string(), "--quiet"},
               {{}, limit});
  INFO(r.err);
  CHECK(r.code == 3);
  CHECK(r.err.find("cannot write to `" + out.string() +
                   "`: File too large; the file is cut "
                   "back to its last complete record") != std::string::npos);
  const auto partial = read_records(out);
  CHECK(fs::file_size(out) <= limit);
  CHECK_FALSE(partial.empty());
  CHECK(partial.size() < static_cast<std::size_t>(n));

  auto resumed = run({"run", kPipeline, "--input", tasks.string(), "--output", out.string(),
                      "--resume", "--quiet"});
  INFO(resumed.err);
  CHECK(resumed.code == 0);
  const auto seen = id_counts(read_records(out));
  CHECK(seen.size() == static_cast<std::size_t>(n));
  for (const auto& [id, count] : seen) CHECK(count == 1);
}

// --- exit codes and messages for what the command line names ---

TEST_CASE("vsynth run: exit codes for outputs and inputs that are not what they should be") {
  const auto tasks = write_tasks("tasks_codes.jsonl", 3);
  auto unwritable =
      run({"run", kPipeline, "--input", tasks.string(), "--output", "/nonexistent-dir/out.jsonl"});
  CHECK(unwritable.code == 3);  // I/O, as README says
  CHECK(unwritable.err.find("cannot open output `/nonexistent-dir/out.jsonl`: No such file or "
                            "directory") != std::string::npos);

  const fs::path dir = kWork / "a_directory";
  fs::create_directories(dir);
  auto out_dir = run({"run", kPipeline, "--input", tasks.string(), "--output", dir.string()});
  CHECK(out_dir.code == 2);
  CHECK(out_dir.err.find("output `" + dir.string() + "` is a directory") != std::string::npos);
  CHECK(out_dir.err.find("already holds") == std::string::npos);

  auto in_dir = run({"run", kPipeline, "--input", dir.string(), "--output",
                     (kWork / "out_codes.jsonl").string(), "--overwrite"});
  CHECK(in_dir.code == 2);
  CHECK(in_dir.err.find("input `" + dir.string() + "` is a directory, not a file of tasks") !=
        std::string::npos);

  const fs::path bad = kWork / "tasks_bad_utf8.jsonl";
  std::ofstream(bad, std::ios::binary) << "{\"id\":\"a\"}\n{\"id\":\"b\xfe\"}\n";
  auto utf8 = run({"run", kPipeline, "--input", bad.string(), "--output",
                   (kWork / "out_codes.jsonl").string(), "--overwrite"});
  CHECK(utf8.code == 2);
  CHECK(utf8.err.find(bad.string() + ":2:9: invalid UTF-8: byte 0xFE cannot start a character "
                                     "(byte offset 19 in the file)") != std::string::npos);
}

TEST_CASE("vsynth run: a task over a size limit fails alone, with the limit and the fix") {
  fs::create_directories(kWork);
  const auto tasks = kWork / "tasks_limit.jsonl";
  std::size_t big_line = 0;
  {
    std::ofstream f(tasks);
    for (int i = 0; i < 5; ++i) {
      nlohmann::json t = {{"id", "task-" + std::to_string(i)}, {"language", "python"}};
      if (i == 2) t["source"] = std::string(5000, 'x');
      const std::string line = t.dump();
      if (i == 2) big_line = line.size();
      f << line << "\n";
    }
  }
  const auto out = kWork / "out_limit.jsonl";
  fs::remove(out);
  auto r = run({"run", kPipeline, "--input", tasks.string(), "--output", out.string(),
                "--max-task-bytes", "1000", "--quiet"});
  INFO(r.err);
  CHECK(r.code == 0);
  const auto records = read_records(out);
  REQUIRE(records.size() == 5);
  for (const auto& rec : records) {
    if (rec["id"] != "task-2") {
      CHECK(rec["passed"] == true);
      continue;
    }
    CHECK(rec["status"] == "error");
    CHECK(rec["exit"] == "source");
    CHECK(rec["error"].get<std::string>().rfind(
              "task is " + std::to_string(big_line) +
                  " bytes, over the input limit max_task_bytes = 1000 bytes; raise it "
                  "with `vsynth run --max-task-bytes N`",
              0) == 0);
  }
  auto bad = run({"run", kPipeline, "--input", tasks.string(), "--output", out.string(),
                  "--max-task-bytes", "0", "--overwrite"});
  CHECK(bad.code == 2);
}

// --- generate's command line ---

TEST_CASE("vsynth generate: contradictions and bad numbers are refused before the model loads") {
  // A model path that cannot load: reaching the loader would exit 3, not 2.
  ::setenv("VSYNTH_MODEL", "/nonexistent/model.gguf", 1);
  const std::vector<std::vector<std::string>> bad = {
      {"generate", "--prompt", "x", "--raw", "--chat"},
      {"generate", "--prompt", "x", "--threads", "-1"},
      {"generate", "--prompt", "x", "--prompt-file", "/dev/null"},
      {"generate"},
      {"generate", "--prompt-file", "/nonexistent/prompt.txt"},
      {"generate", "--prompt-file", kWork.string()},
  };
  for (const auto& args : bad) {
    auto r = run(args);
    std::string line;
    for (const auto& a : args) line += a + " ";
    INFO(line << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("nonexistent/model.gguf") == std::string::npos);
  }
  ::unsetenv("VSYNTH_MODEL");
}

TEST_CASE("vsynth generate --help has its own exit codes, not run's") {
  auto r = run({"generate", "--help"});
  CHECK(r.code == 0);
  CHECK(r.out.find("--prompt-file") != std::string::npos);
  CHECK(r.out.find("Exit codes: 0 generated") != std::string::npos);
  CHECK(r.out.find("--resume") == std::string::npos);
  auto run_help = run({"run", "--help"});
  CHECK(run_help.out.find("rerun with --resume") != std::string::npos);
}

TEST_CASE("vsynth generate --prompt-file reads a prompt past the 128 KiB argument limit whole") {
  // 200 KiB of code: more tokens than the context holds, so generate stops after tokenizing
  // and says how many it counted; half the file must count about half as many, and stdin the
  // same as the file. The model loads but never runs.
  fs::create_directories(kWork);
  const fs::path big = kWork / "prompt_200k.txt", half = kWork / "prompt_100k.txt";
  std::string text;
  for (int i = 0; text.size() < 200 * 1024; ++i) {
    text += "def f" + std::to_string(i) + "(x):\n    return x * " + std::to_string(i) + "\n";
  }
  std::ofstream(big, std::ios::binary) << text;
  std::ofstream(half, std::ios::binary) << text.substr(0, text.size() / 2);
  auto tokens = [](const Result& r) -> long {
    const auto at = r.err.find("the prompt has ");
    return at == std::string::npos ? -1 : std::stol(r.err.substr(at + 15));
  };
  auto whole = run({"generate", "--raw", "--prompt-file", big.string(), "-n", "1"});
  INFO(whole.err);
  REQUIRE(whole.code == 2);
  CHECK(whole.err.find("tokens; the context holds") != std::string::npos);
  auto halved = run({"generate", "--raw", "--prompt-file", half.string(), "-n", "1"});
  auto piped = run({"generate", "--raw", "--prompt-file", "-", "-n", "1"}, {big});
  INFO(halved.err << piped.err);
  const long n = tokens(whole), h = tokens(halved);
  CHECK(n > 30000);  // ~50k tokens in 200 KiB of this code
  CHECK(h > 0);
  CHECK(std::abs(n - 2 * h) < n / 50);
  CHECK(tokens(piped) == n);
}

TEST_CASE("vsynth index builds a repository's index, a second run starts from it") {
  if (!vsynth::test::have_default_encoder()) return;
  const fs::path repo = kWork / "index-repo", cache = kWork / "index-cache";
  fs::remove_all(repo);
  fs::remove_all(cache);
  fs::create_directories(repo / "pkg");
  fs::create_directories(repo / ".git");
  std::ofstream(repo / "pkg/io.py") << "def read_lines(path):\n    with open(path) as f:\n"
                                       "        return f.read().splitlines()\n";
  std::ofstream(repo / "pkg/calc.py") << "def mean(xs):\n    return sum(xs) / len(xs)\n\n\n"
                                         "class Stats:\n    def spread(self, xs):\n"
                                         "        return max(xs) - min(xs)\n";
  std::ofstream(repo / "pkg/blob.py", std::ios::binary) << std::string("\x00\x01\x02", 3);
  std::ofstream(repo / ".git/config.py") << "def not_indexed():\n    pass\n";
  const std::vector<std::string> args = {
      "index", repo.string(), "--cache-dir", cache.string(), "-q", "-t", "1"};

  const Result first = run(args);
  INFO(first.err);
  REQUIRE(first.code == 0);
  // Two source files (the binary one skipped and named, .git never walked); 3 chunks:
  // read_lines, mean, Stats (+ its method spread): at least 3.
  CHECK_THAT(first.out, Catch::Contains("2 files (2 re-indexed, 0 unchanged"));
  CHECK_THAT(first.out, Catch::Contains("1 skipped"));
  CHECK_THAT(first.err, Catch::Contains("pkg/blob.py skipped"));
  CHECK_THAT(first.out, !Catch::Contains("from the cache"));
  CHECK_THAT(first.out, Catch::Contains("cache: " + cache.string()));

  const Result second = run(args);
  REQUIRE(second.code == 0);
  CHECK_THAT(second.out, Catch::Contains("2 files (0 re-indexed, 2 unchanged"));
  CHECK_THAT(second.out, Catch::Contains("(from the cache)"));

  // An edit: that file alone is re-indexed.
  std::ofstream(repo / "pkg/calc.py", std::ios::app) << "\n\ndef median(xs):\n    return xs\n";
  const Result third = run(args);
  REQUIRE(third.code == 0);
  CHECK_THAT(third.out, Catch::Contains("2 files (1 re-indexed, 1 unchanged"));
}

TEST_CASE("vsynth index: a bad root or language is a usage error before anything loads") {
  const Result no_root = run({"index", (kWork / "no-such-dir").string()});
  CHECK(no_root.code == 2);
  CHECK_THAT(no_root.err, Catch::Contains("is not a directory"));
  fs::create_directories(kWork / "empty-repo");
  const Result bad_lang = run({"index", (kWork / "empty-repo").string(), "--languages", "cobol"});
  CHECK(bad_lang.code == 2);
  CHECK_THAT(bad_lang.err, Catch::Contains("unknown language `cobol`"));
  CHECK_THAT(bad_lang.err, Catch::Contains("python"));
}
