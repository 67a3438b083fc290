#include "tools/vsynth/report/pipeline_svg.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/dot.h"
#include "graph/validate.h"

extern char** environ;

namespace vsynth::cli::report {

namespace {

namespace fs = std::filesystem;

// A temporary file removed when it goes out of scope.
struct TempFile {
  std::string path;
  explicit TempFile(const char* what) {
    std::string tmpl = (fs::temp_directory_path() / fmt::format("vsynth-report-{}-XXXXXX", what));
    const int fd = ::mkstemp(tmpl.data());
    if (fd >= 0) {
      ::close(fd);
      path = tmpl;
    }
  }
  ~TempFile() {
    if (!path.empty()) ::unlink(path.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

// Runs `dot -Tsvg in -o out`; "" on success, else what went wrong.
std::string run_dot(const std::string& program, const std::string& in, const std::string& out,
                    const std::string& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_TRUNC, 0600);
  std::vector<std::string> args = {program, "-Tsvg", in, "-o", out};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return fmt::format("cannot run Graphviz `{}`: {} (Debian package graphviz)", program,
                       std::strerror(rc));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::ifstream e(err);
  std::string first;
  std::getline(e, first);
  return fmt::format("Graphviz `{}` failed ({}){}", program,
                     WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status))
                                       : fmt::format("signal {}", WTERMSIG(status)),
                     first.empty() ? "" : ": " + first);
}

}  // namespace

PipelineSvg draw_pipeline(const graph::Registry& registry, const std::string& pipeline_file,
                          const std::string& dot_program) {
  // Phase 1: the DOT text, as `vsynth dot` prints it.
  std::string dot;
  try {
    dot = graph::to_dot(graph::load_pipeline(pipeline_file, registry));
  } catch (const graph::SpecError& e) {
    return {"", fmt::format("pipeline `{}` has errors:\n{}", pipeline_file, e.what())};
  }
  // Phase 2: Graphviz, through files (no pipe to deadlock on a large graph).
  TempFile in("dot"), out("svg"), err("err");
  if (in.path.empty() || out.path.empty() || err.path.empty()) {
    return {"", fmt::format("cannot create a temporary file: {}", std::strerror(errno))};
  }
  std::ofstream(in.path) << dot;
  if (std::string failed = run_dot(dot_program, in.path, out.path, err.path); !failed.empty()) {
    return {"", failed};
  }
  // Phase 3: the <svg> element alone (the XML prolog and DOCTYPE cannot sit inside HTML).
  std::stringstream svg;
  svg << std::ifstream(out.path).rdbuf();
  const std::string text = svg.str();
  const std::size_t start = text.find("<svg");
  if (start == std::string::npos) return {"", "Graphviz wrote no <svg> element"};
  return {text.substr(start), ""};
}

}  // namespace vsynth::cli::report
