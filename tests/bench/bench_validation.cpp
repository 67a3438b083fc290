// Benchmark (never a test): what a sandboxed check costs. Times one sandbox start (bwrap +
// namespaces + /usr/bin/true), Python and cc inside the sandbox against the same command
// unconfined, each validate.async check on a small task, and the throughput of a pool of
// workers. Prints a table and writes JSON.
//
//   bench_validation [--runs N] [--json PATH]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stages/validation/checks.h"
#include "stages/validation/sandbox.h"
#include "stages/validation/sandbox_pool.h"
#include "stages/validation/task_tests.h"

using namespace vsynth::stages::validation;
using Clock = std::chrono::steady_clock;

namespace {

struct Stats {
  double median = 0, p90 = 0, min = 0;
};

Stats measure(int runs, const std::function<void()>& fn) {
  std::vector<double> ms;
  fn();  // warm the page cache
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 9 / 10)], ms.front()};
}

// fork + exec + wait, no sandbox.
void unconfined(const std::vector<std::string>& argv) {
  std::vector<char*> a;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 20;
  std::string json_path = "bench_validation.json";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
  }
  const Checker checker{CheckerConfig{}};
  const Sandbox& sandbox = checker.sandbox();
  nlohmann::json out = nlohmann::json::array();
  std::printf("%-44s %10s %10s %10s\n", "what", "median ms", "p90 ms", "min ms");
  const auto row = [&](const std::string& what, const Stats& s) {
    std::printf("%-44s %10.1f %10.1f %10.1f\n", what.c_str(), s.median, s.p90, s.min);
    out.push_back({{"what", what},
                   {"median_ms", s.median},
                   {"p90_ms", s.p90},
                   {"min_ms", s.min},
                   {"runs", runs}});
  };
  const auto boxed = [&](std::vector<std::string> args) {
    SandboxRequest req;
    req.argv = std::move(args);
    return [&sandbox, req] {
      if (!sandbox.run(req).exited_ok()) std::fprintf(stderr, "sandboxed run failed\n");
    };
  };

  row("sandbox: /usr/bin/true", measure(runs, boxed({"/usr/bin/true"})));
  row("unconfined: /usr/bin/true", measure(runs, [] { unconfined({"/usr/bin/true"}); }));
  row("sandbox: python3 -I -S -c pass",
      measure(runs, boxed({checker.python(), "-I", "-S", "-B", "-c", "pass"})));
  row("unconfined: python3 -I -S -c pass", measure(runs, [&] {
        unconfined({checker.python(), "-I", "-S", "-B", "-c", "pass"});
      }));

  const std::string py = "def add(a, b):\n    return a + b\n";
  const std::string c = "int add(int a, int b) { return a + b; }\n";
  Program py_prog{{py}, 0, "bench"};
  Program c_prog{{c}, 0, "bench"};
  vsynth::graph::Task py_task{"py",
                              {{"id", "py"},
                               {"language", "python"},
                               {"tests", {"assert add(1, 2) == 3", "assert add(0, 0) == 0"}}}};
  vsynth::graph::Task c_task{"c", {{"id", "c"}, {"language", "c"}, {"tests", {"add(1, 2) == 3"}}}};
  const TaskTests py_tt = read_task_tests(py_task), c_tt = read_task_tests(c_task);
  const SandboxLimits lim = checker.limits();
  row("check syntax (python, tree-sitter)",
      measure(runs, [&] { checker.syntax(py_prog, "python"); }));
  row("check compile (python, py_compile)",
      measure(runs, [&] { checker.compile(py_prog, "python", lim); }));
  row("check tests (python, 2 asserts)",
      measure(runs, [&] { checker.tests(py_prog, py_tt, py_tt.visible, false, lim); }));
  row("check compile (c, cc -fsyntax-only)",
      measure(runs, [&] { checker.compile(c_prog, "c", lim); }));
  row("check tests (c, cc -O0 + run)",
      measure(runs, [&] { checker.tests(c_prog, c_tt, c_tt.visible, false, lim); }));

  // Throughput: python test checks through pools of 1 and 2 workers.
  for (int workers : {1, 2}) {
    SandboxPoolConfig pc;
    pc.workers = workers;
    SandboxPool pool(std::move(pc));
    const int jobs = runs * 2;
    const auto t0 = Clock::now();
    std::vector<std::future<void>> done;
    for (int i = 0; i < jobs; ++i) {
      auto p = std::make_shared<std::promise<void>>();
      done.push_back(p->get_future());
      pool.submit([&, p] {
        pool.checker().tests(py_prog, py_tt, py_tt.visible, false, lim);
        p->set_value();
      });
    }
    for (auto& f : done) f.get();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("%-44s %10.1f checks/s\n",
                ("pool of " + std::to_string(workers) + ": python test checks").c_str(), jobs / s);
    out.push_back({{"what", "pool python test checks"},
                   {"workers", workers},
                   {"checks_per_s", jobs / s},
                   {"jobs", jobs}});
  }
  std::ofstream(json_path) << out.dump(2) << "\n";
  std::printf("wrote %s\n", json_path.c_str());
}
