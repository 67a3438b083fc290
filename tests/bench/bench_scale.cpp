// Scale-out throughput: the same batch job under mpirun with 1 and 2 (or more) ranks, run
// alternately so that both see the same machine, plus what does not shrink with ranks: the
// job's fixed cost (launch, pipeline + model load, startup agreement, merge: a job of one task
// on the same ranks) and rank 0's merge of the whole job's parts.
// Prints a table and writes JSON (docs/performance.md, "Scale-out", holds the figures and the
// scaling model built from them).
//
//   build/tests/bench/bench_scale [--pipeline P.yaml] [--tasks examples/tasks/generate.jsonl]
//       [--copies 4] [--ranks 1,2] [--repeat 3] [--model PATH] [--json bench_scale.json]
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kVsynth = std::string(VSYNTH_BINARY_DIR) + "/tools/vsynth/vsynth";

// Runs argv to the end with stdout/stderr to `log`; returns the wall seconds (negative: failed).
double timed(const std::vector<std::string>& argv, const std::string& model, const fs::path& log) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen(log.c_str(), "w", stdout);
    std::freopen(log.c_str(), "a", stderr);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    if (!model.empty()) ::setenv("VSYNTH_MODEL", model.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? s : -1;
}

// `copies` copies of the tasks under new ids and paths.
std::size_t write_tasks(const fs::path& from, int copies, const fs::path& to) {
  std::vector<json> base;
  std::ifstream in(from);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) base.push_back(json::parse(line));
  }
  std::ofstream out(to);
  for (int c = 0; c < copies; ++c) {
    for (json t : base) {
      const char* key = t.contains("id") ? "id" : "task_id";
      t[key] = t[key].get<std::string>() + "-" + std::to_string(c);
      t["path"] = "copy" + std::to_string(c) + "/" + t.value("path", t[key].get<std::string>());
      out << t.dump() << "\n";
    }
  }
  return base.size() * static_cast<std::size_t>(copies);
}

std::vector<std::string> job(int ranks, const std::string& pipeline, const fs::path& tasks,
                             const fs::path& out) {
  return {"mpirun",       "--oversubscribe",
          "--bind-to",    "none",
          "-np",          std::to_string(ranks),
          kVsynth,        "run",
          pipeline,       "--input",
          tasks.string(), "--output",
          out.string(),   "--overwrite",
          "--quiet"};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_scale: MPI job throughput by rank count"};
  std::string pipeline = std::string(VSYNTH_SOURCE_DIR) + "/pipelines/generate.yaml";
  std::string tasks_file = std::string(VSYNTH_SOURCE_DIR) + "/examples/tasks/generate.jsonl";
  std::string model, json_out = "bench_scale.json";
  std::vector<int> rank_counts = {1, 2};
  int copies = 4, repeat = 3;
  app.add_option("--pipeline", pipeline);
  app.add_option("--tasks", tasks_file);
  app.add_option("--copies", copies)->check(CLI::Range(1, 100000));
  app.add_option("--ranks", rank_counts)->delimiter(',');
  app.add_option("--repeat", repeat)->check(CLI::Range(1, 100));
  app.add_option("--model", model, "VSYNTH_MODEL for the job (default: the pipeline's)");
  app.add_option("--json", json_out);
  CLI11_PARSE(app, argc, argv);

  // Phase 1: the job's tasks, and a one-task job for the startup cost.
  const fs::path dir = fs::temp_directory_path() / ("bench_scale." + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::size_t n = write_tasks(tasks_file, copies, dir / "tasks.jsonl");
  write_tasks(tasks_file, 1, dir / "all1.jsonl");
  {
    std::ifstream in(dir / "all1.jsonl");
    std::string first;
    std::getline(in, first);
    std::ofstream(dir / "one.jsonl") << first << "\n";
  }

  // Phase 2: alternate rank counts, `repeat` rounds; startup from one-task jobs.
  std::map<int, std::vector<double>> wall, startup;
  for (int r = 0; r < repeat; ++r) {
    for (int k : rank_counts) {
      const double s =
          timed(job(k, pipeline, dir / "tasks.jsonl", dir / "out.jsonl"), model, dir / "log.txt");
      const double s1 = timed(job(k, pipeline, dir / "one.jsonl", dir / "one_out.jsonl"), model,
                              dir / "log1.txt");
      if (s < 0 || s1 < 0) {
        std::fprintf(stderr, "bench_scale: a job failed; its log: %s\n", (dir / "log.txt").c_str());
        return 1;
      }
      wall[k].push_back(s);
      startup[k].push_back(s1);
    }
  }
  // Phase 3: the merge alone: rank 0's last step, on the parts of a whole run.
  const int widest = *std::max_element(rank_counts.begin(), rank_counts.end());
  std::vector<double> merge_s;
  for (int r = 0; r < repeat; ++r) {
    std::vector<std::string> run = job(widest, pipeline, dir / "tasks.jsonl", dir / "m.jsonl");
    run.erase(run.begin(), run.begin() + 6);  // vsynth run ... per shard, no mpirun
    for (int k = 0; k < widest; ++k) {
      auto shard = run;
      shard.insert(shard.end(), {"--shard", std::to_string(k) + "/" + std::to_string(widest)});
      timed(shard, model, dir / "logm.txt");
    }
    fs::remove(dir / "m.jsonl");
    merge_s.push_back(
        timed({kVsynth, "merge", (dir / "m.jsonl").string()}, model, dir / "logm.txt"));
  }

  // Phase 4: the table and the JSON.
  const double base = median(wall[rank_counts.front()]);
  std::printf("%zu tasks (%s x %d), %d rounds, medians\n", n,
              fs::path(tasks_file).filename().c_str(), copies, repeat);
  std::printf("%-6s %10s %10s %10s %12s\n", "ranks", "wall s", "tasks/s", "speedup", "startup s");
  json rows = json::array();
  for (int k : rank_counts) {
    const double w = median(wall[k]);
    std::printf("%-6d %10.2f %10.2f %10.2f %12.2f\n", k, w, static_cast<double>(n) / w, base / w,
                median(startup[k]));
    rows.push_back({{"ranks", k},
                    {"wall_s", wall[k]},
                    {"startup_s", startup[k]},
                    {"tasks_per_s", static_cast<double>(n) / w},
                    {"speedup", base / w}});
  }
  std::printf("merge of %d parts, %zu records: %.3f s\n", widest, n, median(merge_s));
  std::ofstream(json_out) << json{{"pipeline", pipeline},
                                  {"tasks", n},
                                  {"repeat", repeat},
                                  {"rows", rows},
                                  {"merge_s", merge_s}}
                                 .dump(2)
                          << "\n";
  fs::remove_all(dir);
  return 0;
}
