// vsynth run as an MPI job on one machine (mpirun --oversubscribe): 1 rank and 3 ranks give
// the same records; --shard I/N parts merged give them too; a rank killed with SIGKILL ends the
// job in bounded time naming the unfinished tasks, and --resume completes it with every task
// exactly once; a rank that cannot load its model stops the job before it runs.
//
// Skipped (never passed) when mpirun is absent or vsynth was built without MPI; setup installs
// Open MPI, so CI runs them.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/cli/process.h"
#include "tests/cli/records.h"
#include "tests/test_skip.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace vsynth::test;

namespace {

const fs::path kSource = VSYNTH_SOURCE_DIR;
const fs::path kWork =
    fs::path(VSYNTH_BINARY_DIR) / "mpi_test" / std::to_string(static_cast<long>(::getpid()));
const fs::path kGoldenModel = kSource / ".cache/golden-models/model_llama_synth.gguf";
constexpr auto kJobDeadline = std::chrono::minutes(5);

struct Outcome {
  int code = -1;
  std::string out, err;
};

std::vector<std::pair<std::string, std::string>> job_env(const std::string& model = "") {
  std::vector<std::pair<std::string, std::string>> env = {
      {"OMPI_ALLOW_RUN_AS_ROOT", "1"},  // CI containers run as root
      {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
      {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"},  // no CMA inside containers
      {"VSYNTH_TEST_JOB", std::to_string(::getpid())},       // finds this test's ranks
  };
  if (!model.empty()) env.emplace_back("VSYNTH_MODEL", model);
  // Under ASan (the sanitizer ctest run): Open MPI's components allocate at MPI_Init and are
  // dlclose'd at MPI_Finalize unfreed, so LeakSanitizer reports them from modules that no
  // longer exist (no suppression can name them). Leaks stay off for the ranks only; the same
  // run/shard/merge code is leak-checked by the one-process runs of this file and test_cli.
  if (const char* asan = std::getenv("ASAN_OPTIONS")) {
    env.emplace_back("ASAN_OPTIONS", std::string(asan) + ":detect_leaks=0");
  }
  return env;
}

// Waits for `pid`, killing it past the deadline (a stuck job fails the test, not CI).
int wait_bounded(pid_t pid) {
  const auto until = std::chrono::steady_clock::now() + kJobDeadline;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL("the job ran past its deadline");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_code(status);
}

Outcome finish(pid_t pid, const std::string& tag) {
  Outcome o;
  o.code = wait_bounded(pid);
  o.out = slurp(kWork / (tag + ".out"));
  o.err = slurp(kWork / (tag + ".err"));
  return o;
}

std::vector<std::string> mpirun_args(int ranks, const std::vector<std::string>& vsynth_args) {
  std::vector<std::string> a = {"--oversubscribe",     "--bind-to",  "none", "-np",
                                std::to_string(ranks), kVsynthBinary};
  a.insert(a.end(), vsynth_args.begin(), vsynth_args.end());
  return a;
}

pid_t start_job(int ranks, const std::vector<std::string>& vsynth_args, const std::string& tag,
                const std::string& model = "") {
  return spawn_program("mpirun", mpirun_args(ranks, vsynth_args), job_env(model),
                       kWork / (tag + ".out"), kWork / (tag + ".err"));
}

Outcome job(int ranks, const std::vector<std::string>& vsynth_args, const std::string& tag,
            const std::string& model = "") {
  return finish(start_job(ranks, vsynth_args, tag, model), tag);
}

Outcome plain(const std::vector<std::string>& vsynth_args, const std::string& tag,
              const std::string& model = "") {
  std::vector<std::pair<std::string, std::string>> env;
  if (!model.empty()) env.emplace_back("VSYNTH_MODEL", model);
  return finish(spawn_program(kVsynthBinary, vsynth_args, env, kWork / (tag + ".out"),
                              kWork / (tag + ".err")),
                tag);
}

// True when this machine can run MPI jobs of this vsynth; otherwise the case is skipped.
bool mpi_ready() {
  fs::create_directories(kWork);
  const Outcome probe = finish(
      spawn_program("mpirun", {"--version"}, job_env(), kWork / "probe.out", kWork / "probe.err"),
      "probe");
  if (probe.code != 0) {  // 127: no mpirun on PATH
    skip("no mpirun on this machine (Debian openmpi-bin; scripts/setup.sh installs it)");
    return false;
  }
  return true;
}

// `copies` copies of an example file's tasks under new ids (and their own file paths, so
// sharding by file spreads them).
fs::path tasks_from(const std::string& example, int copies, const std::string& name) {
  std::vector<json> base;
  std::ifstream in(kSource / "examples/tasks" / example);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) base.push_back(json::parse(line));
  }
  const fs::path p = kWork / name;
  std::ofstream out(p);
  for (int c = 0; c < copies; ++c) {
    for (json t : base) {
      const char* key = t.contains("id") ? "id" : "task_id";
      t[key] = t[key].get<std::string>() + "-" + std::to_string(c);
      if (t.contains("path"))
        t["path"] = "copy" + std::to_string(c) + "/" + t["path"].get<std::string>();
      out << t.dump() << "\n";
    }
  }
  return p;
}

std::vector<json> task_list(const fs::path& tasks) {
  std::vector<json> v;
  std::ifstream in(tasks);
  for (std::string line; std::getline(in, line);) v.push_back(json::parse(line));
  return v;
}

// The records of a results file by id, timings left out, every task exactly once.
std::map<std::string, json> comparable(const fs::path& results, const fs::path& tasks) {
  std::map<std::string, json> out;
  for (auto& [id, r] : by_id(read_records(results), task_list(tasks))) out[id] = without_timings(r);
  return out;
}

std::vector<std::string> run_args(const std::string& pipeline, const fs::path& tasks,
                                  const fs::path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"run",      (kSource / "pipelines" / pipeline).string(),
                                "--input",  tasks.string(),
                                "--output", out.string(),
                                "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The pid of rank `rank` of this test's running job (0 when it is not running yet).
pid_t rank_pid(int rank) {
  const std::string marker = "VSYNTH_TEST_JOB=" + std::to_string(::getpid());
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string env = slurp(entry.path() / "environ");
    const std::string comm = slurp(entry.path() / "comm");
    if (comm.rfind("vsynth", 0) != 0) continue;
    bool has_marker = false, has_rank = false;
    for (std::size_t at = 0; at < env.size();) {
      const std::size_t end = env.find('\0', at);
      const std::string var = env.substr(at, end - at);
      has_marker = has_marker || var == marker;
      has_rank = has_rank || var == want;
      at = end == std::string::npos ? env.size() : end + 1;
    }
    if (has_marker && has_rank) return static_cast<pid_t>(std::stol(name));
  }
  return 0;
}

std::size_t lines_in(const fs::path& p) {
  const std::string s = slurp(p);
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST_CASE("an MPI job of 3 ranks writes the same records as 1 rank, merged into the output") {
  if (!mpi_ready()) return;
  const fs::path tasks = tasks_from("completion.jsonl", 5, "anchor_tasks.jsonl");
  const Outcome one = job(1, run_args("anchor.yaml", tasks, kWork / "anchor1.jsonl"), "anchor1");
  INFO(one.err);
  if (one.err.find("built without MPI") != std::string::npos) {
    VSYNTH_SKIP("this vsynth was built without MPI");
  }
  REQUIRE(one.code == 0);
  auto loud = run_args("anchor.yaml", tasks, kWork / "anchor3.jsonl");
  loud.erase(std::find(loud.begin(), loud.end(), "--quiet"));
  const Outcome three = job(3, loud, "anchor3");
  INFO(three.err);
  REQUIRE(three.code == 0);
  CHECK(comparable(kWork / "anchor1.jsonl", tasks) == comparable(kWork / "anchor3.jsonl", tasks));
  CHECK_FALSE(fs::exists(kWork / "anchor3.jsonl.rank-0"));  // merged: the parts are gone
  // Rank 0 printed the job's table: one row per rank and the job's.
  CHECK(three.out.find("\n2 ") != std::string::npos);
  CHECK(three.out.find("\njob ") != std::string::npos);
  CHECK(three.err.find("merged 3 part(s)") != std::string::npos);
}

TEST_CASE("an MPI job of the context pipeline (retrieval, deps, pruning): 3 ranks as 1") {
  if (!mpi_ready()) return;
  const fs::path tasks = tasks_from("context.jsonl", 6, "context_tasks.jsonl");
  const Outcome one = job(1, run_args("context.yaml", tasks, kWork / "ctx1.jsonl"), "ctx1");
  INFO(one.err);
  if (one.err.find("built without MPI") != std::string::npos) {
    VSYNTH_SKIP("this vsynth was built without MPI");
  }
  REQUIRE(one.code == 0);
  const Outcome three = job(3, run_args("context.yaml", tasks, kWork / "ctx3.jsonl"), "ctx3");
  INFO(three.err);
  REQUIRE(three.code == 0);
  CHECK(comparable(kWork / "ctx1.jsonl", tasks) == comparable(kWork / "ctx3.jsonl", tasks));
}

TEST_CASE("an MPI job of a generate pipeline: 3 ranks, same candidates as 1 rank") {
  if (!mpi_ready()) return;
  const fs::path tasks = tasks_from("generate.jsonl", 2, "gen_tasks.jsonl");
  const std::string model = kGoldenModel.string();
  const Outcome one = job(1, run_args("generate.yaml", tasks, kWork / "gen1.jsonl"), "gen1", model);
  INFO(one.err);
  if (one.err.find("built without MPI") != std::string::npos) {
    VSYNTH_SKIP("this vsynth was built without MPI");
  }
  REQUIRE(one.code == 0);
  const Outcome three =
      job(3, run_args("generate.yaml", tasks, kWork / "gen3.jsonl"), "gen3", model);
  INFO(three.err);
  REQUIRE(three.code == 0);
  CHECK(comparable(kWork / "gen1.jsonl", tasks) == comparable(kWork / "gen3.jsonl", tasks));
}

TEST_CASE("shard I/N runs without MPI: the parts merged equal the single run") {
  fs::create_directories(kWork);
  const fs::path tasks = tasks_from("completion.jsonl", 4, "shard_tasks.jsonl");
  REQUIRE(plain(run_args("anchor.yaml", tasks, kWork / "single.jsonl"), "single").code == 0);
  for (int i = 0; i < 3; ++i) {
    const std::string tag = "shard" + std::to_string(i);
    const Outcome s = plain(run_args("anchor.yaml", tasks, kWork / "sharded.jsonl",
                                     {"--shard", std::to_string(i) + "/3"}),
                            tag);
    INFO(s.err);
    REQUIRE(s.code == 0);
    CHECK(fs::exists(kWork / ("sharded.jsonl.rank-" + std::to_string(i))));
  }
  CHECK_FALSE(fs::exists(kWork / "sharded.jsonl"));
  const Outcome m =
      plain({"merge", (kWork / "sharded.jsonl").string(), "--input", tasks.string()}, "merge");
  INFO(m.err);
  REQUIRE(m.code == 0);
  CHECK(comparable(kWork / "single.jsonl", tasks) == comparable(kWork / "sharded.jsonl", tasks));

  // A shard that has not run: merge says which tasks are missing (exit 4); running it with
  // --resume and merging again completes the output.
  const Outcome again = plain(
      run_args("anchor.yaml", tasks, kWork / "partial.jsonl", {"--shard", "0/2"}), "partial0");
  REQUIRE(again.code == 0);
  const Outcome half =
      plain({"merge", (kWork / "partial.jsonl").string(), "--input", tasks.string()}, "merge_half");
  CHECK(half.code == 4);
  CHECK(half.err.find("have no record yet") != std::string::npos);
  REQUIRE(
      plain(run_args("anchor.yaml", tasks, kWork / "partial.jsonl", {"--shard", "1/2", "--resume"}),
            "partial1")
          .code == 0);
  const Outcome full =
      plain({"merge", (kWork / "partial.jsonl").string(), "--input", tasks.string()}, "merge_full");
  INFO(full.err);
  CHECK(full.code == 0);
  CHECK(comparable(kWork / "single.jsonl", tasks) == comparable(kWork / "partial.jsonl", tasks));
}

TEST_CASE(
    "a rank killed mid-job: the job ends naming what is unfinished, and --resume completes it") {
  if (!mpi_ready()) return;
  const fs::path tasks = tasks_from("generate.jsonl", 6, "kill_tasks.jsonl");
  const std::string model = kGoldenModel.string();
  const fs::path out = kWork / "kill.jsonl";
  const auto args = run_args("generate.yaml", tasks, out);

  // Phase 1: rank 1 dies by SIGKILL once it has written a record.
  const pid_t job_pid = start_job(3, args, "kill", model);
  pid_t victim = 0;
  const auto until = std::chrono::steady_clock::now() + kJobDeadline;
  while (std::chrono::steady_clock::now() < until) {
    if (lines_in(fs::path(out.string() + ".rank-1")) >= 1 && (victim = rank_pid(1)) != 0) break;
    int status = 0;
    if (::waitpid(job_pid, &status, WNOHANG) == job_pid) FAIL("the job ended before the kill");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(victim != 0);
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(victim, SIGKILL);
  const Outcome killed = finish(job_pid, "kill");
  const auto took = std::chrono::steady_clock::now() - killed_at;
  INFO(killed.err);
  CHECK(killed.code != 0);
  CHECK(took < std::chrono::seconds(30));
  CHECK(killed.err.find("rank 1") != std::string::npos);
  CHECK(killed.err.find("unfinished") != std::string::npos);
  CHECK(killed.err.find("--resume") != std::string::npos);

  // Phase 2: the same command with --resume: every task once, as a run that was never killed.
  auto resume_args = args;
  resume_args.push_back("--resume");
  const Outcome resumed = job(3, resume_args, "resume", model);
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  const Outcome whole =
      job(1, run_args("generate.yaml", tasks, kWork / "unkilled.jsonl"), "unkilled", model);
  REQUIRE(whole.code == 0);
  CHECK(comparable(out, tasks) == comparable(kWork / "unkilled.jsonl", tasks));
}

TEST_CASE("a rank that cannot load its model stops the whole job before any task runs") {
  if (!mpi_ready()) return;
  const fs::path tasks = tasks_from("generate.jsonl", 1, "load_tasks.jsonl");
  const fs::path out = kWork / "load.jsonl";
  // MPMD: rank 0 gets the model, rank 1 a path that does not exist.
  std::vector<std::string> a = {"--oversubscribe",
                                "--bind-to",
                                "none",
                                "-np",
                                "1",
                                "-x",
                                "VSYNTH_MODEL=" + kGoldenModel.string(),
                                kVsynthBinary};
  const auto run = run_args("generate.yaml", tasks, out);
  a.insert(a.end(), run.begin(), run.end());
  a.insert(a.end(), {":", "-np", "1", "-x", "VSYNTH_MODEL=/nonexistent/model.gguf", kVsynthBinary});
  a.insert(a.end(), run.begin(), run.end());
  const Outcome o =
      finish(spawn_program("mpirun", a, job_env(), kWork / "load.out", kWork / "load.err"), "load");
  INFO(o.err);
  if (o.err.find("built without MPI") != std::string::npos) {
    VSYNTH_SKIP("this vsynth was built without MPI");
  }
  CHECK(o.code == 3);
  CHECK(o.err.find("rank 1: ") != std::string::npos);
  CHECK(o.err.find("/nonexistent/model.gguf") != std::string::npos);
  CHECK(o.err.find("did not start") != std::string::npos);
  CHECK(lines_in(fs::path(out.string() + ".rank-0")) == 0);  // rank 0 ran nothing
}
