// `vsynth serve` (cmd_serve, the command's own code) over a registry of the generation and ast
// stages only, for the client tests (openai_client_test.py, curl): the same server and command
// line as the vsynth binary without building every capability.
//
//   serve_fixture PIPELINE.yaml [--config serve.yaml]   (port 0: the chosen one is printed)
#include <cstring>
#include <iostream>

#include "stages/ast/register.h"
#include "stages/generation/register.h"
#include "tools/vsynth/serve/serve_command.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: serve_fixture PIPELINE.yaml [--config serve.yaml]\n";
    return 2;
  }
  vsynth::graph::Registry reg;
  vsynth::stages::generation::register_stages(reg);
  vsynth::stages::ast::register_stages(reg);
  vsynth::cli::ServeArgs args;
  args.pipeline = argv[1];
  args.port = 0;
  if (argc >= 4 && std::strcmp(argv[2], "--config") == 0) args.config = argv[3];
  return vsynth::cli::cmd_serve(reg, args);
}
