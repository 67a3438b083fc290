// The vsynth commands called in-process: what `vsynth run` leaves behind once it returns. Its
// Ctrl-C handler points at the run's own RunControl, a local: after the run the handlers the
// caller had must be back, or the next SIGINT writes through a dead pointer.
#include <signal.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "stages/register_all.h"
#include "tools/vsynth/commands.h"
#include "tools/vsynth/exit_codes.h"
#include "tools/vsynth/scoped_signals.h"

using namespace vsynth;
namespace fs = std::filesystem;

namespace {

volatile sig_atomic_t g_caller_handled = 0;
extern "C" void caller_handler(int sig) {
  g_caller_handled = sig;
}
volatile sig_atomic_t g_scoped_handled = 0;
extern "C" void scoped_handler(int sig) {
  g_scoped_handled = sig;
}

void (*current_handler(int sig))(int) {
  struct sigaction sa {};
  ::sigaction(sig, nullptr, &sa);
  return sa.sa_handler;
}

fs::path work_dir() {
  const fs::path d = fs::path(VSYNTH_BINARY_DIR) / "cli_inprocess" / std::to_string(::getpid());
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("scoped signals: installed while alive, the previous handlers back after, throw too") {
  ::signal(SIGUSR1, caller_handler);
  ::signal(SIGUSR2, caller_handler);
  try {
    const cli::ScopedSignals scoped({SIGUSR1, SIGUSR2}, scoped_handler);
    CHECK(current_handler(SIGUSR1) == scoped_handler);
    CHECK(current_handler(SIGUSR2) == scoped_handler);
    ::raise(SIGUSR1);
    CHECK(g_scoped_handled == SIGUSR1);
    throw std::runtime_error("leave early");
  } catch (const std::runtime_error&) {
  }
  CHECK(current_handler(SIGUSR1) == caller_handler);
  CHECK(current_handler(SIGUSR2) == caller_handler);
  ::raise(SIGUSR2);
  CHECK(g_caller_handled == SIGUSR2);
  ::signal(SIGUSR1, SIG_DFL);
  ::signal(SIGUSR2, SIG_DFL);
}

TEST_CASE("vsynth run returns with the caller's signal handlers, not its own") {
  graph::Registry registry;
  stages::register_all(registry);
  const fs::path dir = work_dir();
  const fs::path tasks = dir / "tasks.jsonl", out = dir / "out.jsonl";
  {
    std::ofstream f(tasks);
    for (int i = 0; i < 20; ++i) f << "{\"id\":\"t" << i << "\",\"language\":\"python\"}\n";
  }
  fs::remove(out);
  for (int sig : {SIGINT, SIGTERM, SIGXFSZ}) ::signal(sig, caller_handler);
  cli::RunArgs args;
  args.pipeline = std::string(VSYNTH_SOURCE_DIR) + "/pipelines/route-by-language.yaml";
  args.input = tasks.string();
  args.output = out.string();
  args.quiet = true;
  CHECK(cli::cmd_run(registry, args) == cli::kExitOk);
  for (int sig : {SIGINT, SIGTERM, SIGXFSZ}) {
    INFO(sig);
    CHECK(current_handler(sig) == caller_handler);
  }
  g_caller_handled = 0;
  ::raise(SIGINT);  // reaches the caller; vsynth's handler would cancel a run long gone
  CHECK(g_caller_handled == SIGINT);

  // Defaults the caller left stay defaults (a resumed run: every task is already there).
  for (int sig : {SIGINT, SIGTERM, SIGXFSZ}) ::signal(sig, SIG_DFL);
  args.resume = true;
  CHECK(cli::cmd_run(registry, args) == cli::kExitOk);
  CHECK(current_handler(SIGINT) == SIG_DFL);
  CHECK(current_handler(SIGXFSZ) == SIG_DFL);
}
