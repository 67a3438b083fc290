#include "tools/vsynth/serve/serve_command.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

#include "graph/plugin_loader.h"
#include "graph/validate.h"
#include "tools/vsynth/exit_codes.h"
#include "tools/vsynth/scoped_signals.h"
#include "tools/vsynth/serve/server.h"

namespace vsynth::cli {

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_stop(int) {
  g_stop.store(true);
}

}  // namespace

std::pair<std::string, std::string> pipeline_arg(const std::string& arg) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos) {
    const std::string stem = std::filesystem::path(arg).stem().string();
    if (stem.empty()) throw std::invalid_argument(fmt::format("`{}` names no pipeline file", arg));
    return {stem, arg};
  }
  std::string name = arg.substr(0, eq), file = arg.substr(eq + 1);
  if (name.empty() || file.empty()) {
    throw std::invalid_argument(fmt::format(
        "--pipeline `{}`: expected NAME=FILE (e.g. complete=pipelines/complete.yaml)", arg));
  }
  return {name, file};
}

int cmd_serve(graph::Registry& registry, const ServeArgs& args) {
  // Phase 1: the command line and the config.
  serve::ServerOptions opts;
  opts.host = args.host;
  opts.port = args.port;
  opts.access_log = args.quiet ? nullptr : stderr;
  try {
    if (!args.pipeline.empty()) opts.pipelines.push_back(pipeline_arg(args.pipeline));
    for (const auto& p : args.pipelines) opts.pipelines.push_back(pipeline_arg(p));
    if (opts.pipelines.empty()) {
      std::cerr << "error: no pipeline: pass PIPELINE.yaml or --pipeline NAME=FILE\n";
      return kExitUsage;
    }
    if (!args.config.empty()) opts.config = serve::load_config(args.config);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }

  // Phase 2: pipelines and models, then the socket.
  std::unique_ptr<serve::Server> server;
  try {
    // The pipelines' `plugins:` first: the server validates against the registry as it is.
    for (const auto& [name, file] : opts.pipelines) graph::load_pipeline_plugins(file, registry);
    server = std::make_unique<serve::Server>(opts, registry);
  } catch (const graph::SpecError& e) {
    std::cerr << e.what();
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitRuntime;
  }
  int port = 0;
  try {
    port = server->start();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitRuntime;
  }
  std::string names;
  for (std::size_t i = 0; i < opts.pipelines.size(); ++i) {
    names += (i ? ", " : "") + opts.pipelines[i].first + (i == 0 ? " (default)" : "");
  }
  std::cerr << fmt::format("vsynth serve: listening on http://{}:{} (pipelines: {})\n", opts.host,
                           port, names);

  // Phase 3: serve until a signal.
  g_stop.store(false);
  const ScopedSignals signals({SIGINT, SIGTERM}, on_stop);
  while (!g_stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::cerr << "vsynth serve: stopping\n";
  server->stop();
  return kExitOk;
}

}  // namespace vsynth::cli
