// `vsynth serve`: the command line of the HTTP server (tools/vsynth/serve/server.h).
#pragma once

#include <string>
#include <vector>

#include "graph/registry.h"

namespace vsynth::cli {

struct ServeArgs {
  std::string pipeline;                // the default pipeline (positional); may be empty
  std::vector<std::string> pipelines;  // --pipeline NAME=FILE, repeatable
  std::string host = "127.0.0.1";
  int port = 8080;     // 0: any free port (printed)
  std::string config;  // --config serve.yaml
  bool quiet = false;  // no access log
};

// Serves until SIGINT/SIGTERM. Exit codes: 0 stopped by a signal; 2 bad command line, pipeline
// or config; 3 a model failed to load or the address could not be bound.
int cmd_serve(graph::Registry& registry, const ServeArgs& args);

// "NAME=FILE" -> {NAME, FILE}; a bare FILE is named after its stem (pipelines/complete.yaml ->
// complete). Throws std::invalid_argument naming the argument.
std::pair<std::string, std::string> pipeline_arg(const std::string& arg);

}  // namespace vsynth::cli
