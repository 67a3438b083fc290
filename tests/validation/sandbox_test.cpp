// The sandbox itself: what the command sees, how it ends, that every run gives exactly one
// result and leaves nothing behind (no child, no process, no file) whatever the command does.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "stages/validation/error.h"
#include "stages/validation/sandbox.h"
#include "tests/validation/util.h"

using namespace vsynth;
using namespace vsynth::stages::validation;

namespace {

// A request running `code` as main.py. Requests hold views: the code is kept alive here for
// the rest of the test program.
SandboxRequest python(std::string code) {
  static std::deque<std::string> kept;
  static std::mutex mu;
  std::lock_guard l(mu);
  kept.push_back(std::move(code));
  SandboxRequest req;
  req.argv = {"/usr/bin/python3", "-I", "-S", "-B", "main.py"};
  req.files.push_back({"main.py", {kept.back()}});
  return req;
}

// Names directly under `dir` (and one level below) that contain `needle`.
std::vector<std::string> find_names(const std::string& dir, const std::string& needle,
                                    int depth = 1) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    if (name.find(needle) != std::string::npos) out.push_back(path);
    struct stat st {};
    if (depth > 0 && ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      for (auto& p : find_names(path, needle, depth - 1)) out.push_back(p);
    }
  }
  ::closedir(d);
  return out;
}

}  // namespace

TEST_CASE("sandbox: a command runs with its files, an empty environment and uid nobody") {
  Sandbox sandbox;
  SandboxRequest req = python(
      "import os, sys\n"
      "print(os.getuid(), os.getgid(), os.getcwd())\n"
      "print(sorted(os.environ))\n"
      "print(open('data.txt').read())\n"
      "print(sorted(os.listdir('/')))\n"
      "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
      "sys.stderr.write('to stderr')\n");
  std::string_view a = "hello ", b = "world";
  req.files.push_back({"data.txt", {a, b}});
  const SandboxResult r = sandbox.run(req);
  REQUIRE(r.started);
  CHECK(r.exit_code == 0);
  CHECK(r.exited_ok());
  CHECK(r.out.data.find("65534 65534 /tmp/work\n") == 0);
  // Only what bwrap and Python add themselves: no variable of the host.
  CHECK(r.out.data.find("'HOME'") == std::string::npos);
  CHECK(r.out.data.find("'PATH'") == std::string::npos);
  CHECK(r.out.data.find("hello world") != std::string::npos);
  CHECK(r.out.data.find("'etc'") == std::string::npos);
  CHECK(r.out.data.find("'root'") == std::string::npos);
  CHECK(r.out.data.find("'work'") == std::string::npos);
  CHECK(r.out.data.find("'usr'") != std::string::npos);
  CHECK(r.out.data.find("0000000000000000") != std::string::npos);  // no capabilities
  CHECK(r.err.data == "to stderr");
  CHECK(r.wall_ms > 0);
  CHECK(r.cpu_ms > 0);
}

TEST_CASE("sandbox: the environment holds exactly the variables the request names") {
  Sandbox sandbox;
  SandboxRequest req = python("import os\nprint(os.environ.get('GREETING'))\n");
  req.env = {{"GREETING", "hi there"}};
  const SandboxResult r = sandbox.run(req);
  REQUIRE(r.exited_ok());
  CHECK(r.out.data == "hi there\n");
}

TEST_CASE("sandbox: exit codes and deaths by signal are reported") {
  Sandbox sandbox;
  SECTION("exit code") {
    const SandboxResult r = sandbox.run(python("import sys\nsys.exit(7)\n"));
    REQUIRE(r.started);
    CHECK(r.exit_code == 7);
    CHECK(r.signal == 0);
    CHECK(r.describe({}) == "exit 7");
  }
  SECTION("signal") {
    const SandboxResult r =
        sandbox.run(python("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"));
    REQUIRE(r.started);
    CHECK(r.signal == SIGSEGV);
    CHECK(r.describe({}).find("SIGSEGV") != std::string::npos);
  }
}

TEST_CASE("sandbox: the report descriptor is captured apart from stdout") {
  Sandbox sandbox;
  SandboxRequest req = python("import os\nprint('out')\nos.write(3, b'{\"event\": \"x\"}\\n')\n");
  req.report_fd = true;
  const SandboxResult r = sandbox.run(req);
  REQUIRE(r.exited_ok());
  CHECK(r.out.data == "out\n");
  CHECK(r.report.data == "{\"event\": \"x\"}\n");
  // Without report_fd, fd 3 is closed in the command.
  const SandboxResult closed = sandbox.run(python("import os\nos.write(3, b'x')\n"));
  CHECK(closed.exit_code == 1);
  CHECK(closed.err.data.find("Bad file descriptor") != std::string::npos);
}

TEST_CASE("sandbox: output beyond the cap is counted and dropped") {
  Sandbox sandbox;
  SandboxRequest req =
      python("import sys\nsys.stdout.write('y' * 200000)\nsys.stderr.write('e' * 10)\n");
  req.limits.output = 1000;
  const SandboxResult r = sandbox.run(req);
  REQUIRE(r.exited_ok());  // under output_kill: the command finishes
  CHECK(r.out.data == std::string(1000, 'y'));
  CHECK(r.out.truncated);
  CHECK(r.out.total == 200000);
  CHECK(r.err.data == "eeeeeeeeee");
  CHECK_FALSE(r.err.truncated);
}

TEST_CASE("sandbox: a missing bwrap or interpreter is a setup error, not a verdict") {
  SandboxConfig bad;
  bad.bwrap = "/nonexistent/bwrap";
  Sandbox broken(bad);
  const SandboxResult r = broken.run(python("print(1)"));
  CHECK_FALSE(r.started);
  CHECK_FALSE(r.setup_error.empty());
  CHECK_THROWS_WITH(broken.probe(), Catch::Contains("bubblewrap not found") &&
                                        Catch::Contains("/nonexistent/bwrap"));

  Sandbox sandbox;
  SandboxRequest req = python("print(1)");
  req.argv[0] = "/usr/bin/no-such-interpreter";
  const SandboxResult missing = sandbox.run(req);
  CHECK_FALSE(missing.started);
  CHECK(missing.setup_error.find("no-such-interpreter") != std::string::npos);
  CHECK_NOTHROW(sandbox.probe());
}

TEST_CASE("sandbox: malformed requests are refused with the reason") {
  Sandbox sandbox;
  SandboxRequest req = python("print(1)");
  SECTION("relative program") {
    req.argv[0] = "python3";
    CHECK_THROWS_WITH(sandbox.run(req), Catch::Contains("absolute path"));
  }
  SECTION("file name with a slash") {
    req.files.push_back({"../escape.py", {}});
    CHECK_THROWS_WITH(sandbox.run(req), Catch::Contains("plain name"));
  }
  SECTION("empty argv") {
    req.argv.clear();
    CHECK_THROWS_AS(sandbox.run(req), ValidationError);
  }
  SECTION("bad variable name") {
    req.env = {{"A=B", "x"}};
    CHECK_THROWS_WITH(sandbox.run(req), Catch::Contains("no '='"));
  }
  CHECK(test::children_of_self().empty());
}

TEST_CASE("sandbox: a run leaves no process, zombie or file behind, however it ends") {
  Sandbox sandbox;
  const std::string marker = "vsynth-leftover-marker-" + std::to_string(::getpid());
  // Each program writes a marker file in its work dir and /tmp, then ends its own way; some
  // leave background processes that outlive the main one.
  const std::vector<std::string> endings = {
      "pass",
      "import os\nos._exit(3)",
      "import os, time\nif os.fork() == 0:\n    time.sleep(60)\n",
      "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\nelse:\n    "
      "time.sleep(60)",
      "while True:\n    pass",
      "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
  };
  SandboxLimits lim;
  lim.wall_ms = 2000;
  lim.cpu_ms = 1000;
  for (const auto& ending : endings) {
    SandboxRequest req = python("open('" + marker + "', 'w').write('x')\nopen('/tmp/" + marker +
                                "', 'w').write('x')\n" + ending + "\n");
    req.limits = lim;
    const SandboxResult r = sandbox.run(req);
    CHECK(r.started);
    CHECK(test::children_of_self().empty());
    if (test::is_root()) CHECK(test::processes_of_uids(sandbox.uid_base(), 64).empty());
  }
  CHECK(find_names("/tmp", marker).empty());
  CHECK(find_names("/dev/shm", marker).empty());
}

TEST_CASE("sandbox: concurrent runs each get exactly one result") {
  Sandbox sandbox;
  // A mix that ends normally, by timeout, by CPU limit and by crash, on more threads than
  // cores: every thread gets its own result back.
  const std::vector<std::pair<std::string, std::string>> kinds = {
      {"ok", "print('ok')"},
      {"sleep", "import time\ntime.sleep(60)"},
      {"spin", "while True:\n    pass"},
      {"crash", "import os, signal\nos.kill(os.getpid(), signal.SIGABRT)"},
  };
  constexpr int kThreads = 6;
  std::vector<SandboxResult> results(kThreads * 2);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2; ++i) {
        const auto& kind = kinds[static_cast<std::size_t>(t * 2 + i) % kinds.size()];
        SandboxRequest req = python(kind.second);
        // Only the sleeper should meet the wall clock: a short limit for it, a generous one for
        // the runs that end on their own (or by the CPU limit), however loaded the machine.
        req.limits.wall_ms = kind.first == "sleep" ? 2500 : 60000;
        req.limits.cpu_ms = 1000;
        req.env = {{"KIND", kind.first}};
        results[static_cast<std::size_t>(t * 2 + i)] = sandbox.run(req);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const std::string& kind = kinds[i % kinds.size()].first;
    INFO("run " << i << " (" << kind << "): " << r.describe({}) << " " << r.setup_error);
    REQUIRE(r.started);
    if (kind == "ok") CHECK(r.out.data == "ok\n");
    if (kind == "sleep") CHECK(r.timed_out);
    if (kind == "spin") CHECK((r.signal == SIGXCPU || r.signal == SIGKILL));
    if (kind != "sleep") CHECK_FALSE(r.timed_out);
    if (kind == "crash") CHECK(r.signal == SIGABRT);
  }
  CHECK(test::children_of_self().empty());
  if (test::is_root()) CHECK(test::processes_of_uids(sandbox.uid_base(), 64).empty());
}

TEST_CASE("sandbox: bwrap arguments unshare everything and keep the host out") {
  Sandbox sandbox;
  SandboxRequest req = python("pass");
  const auto args = sandbox.bwrap_args(req, 3);
  const auto has = [&](std::string_view a) {
    return std::find(args.begin(), args.end(), a) != args.end();
  };
  for (const char* a : {"--unshare-all", "--unshare-user", "--disable-userns", "--new-session",
                        "--die-with-parent", "--clearenv", "--remount-ro"}) {
    CHECK(has(a));
  }
  CHECK_FALSE(has("--share-net"));
  CHECK_FALSE(has("/etc"));
  CHECK_FALSE(has("/home"));
  CHECK(args.back() == "--");
}
