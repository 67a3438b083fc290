// Running the vsynth binary from a test as a user would: a child process with its stdout and
// stderr in files, and its exit status read the way a shell reports it (128 + signal).
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace vsynth::test {

inline const std::string kVsynthBinary = std::string(VSYNTH_BINARY_DIR) + "/tools/vsynth/vsynth";

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What the child does before it execs vsynth, besides redirecting stdout and stderr.
struct ChildSetup {
  std::filesystem::path stdin_path;        // empty: inherit
  rlim_t file_size_limit = RLIM_INFINITY;  // RLIMIT_FSIZE, bytes
};

// Starts vsynth with args; stdout/stderr to files. Returns the pid.
inline pid_t spawn_vsynth(const std::vector<std::string>& args, const std::filesystem::path& out,
                          const std::filesystem::path& err, const ChildSetup& setup = {}) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (!setup.stdin_path.empty()) ::dup2(::open(setup.stdin_path.c_str(), O_RDONLY), 0);
    if (setup.file_size_limit != RLIM_INFINITY) {
      const struct rlimit rl { setup.file_size_limit, setup.file_size_limit };
      ::setrlimit(RLIMIT_FSIZE, &rl);
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(kVsynthBinary.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(kVsynthBinary.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

// Starts `program` (looked up on PATH) with args and extra environment variables; stdout and
// stderr to files. Returns the pid (the child exits 127 when the program cannot be run).
inline pid_t spawn_program(const std::string& program, const std::vector<std::string>& args,
                           const std::vector<std::pair<std::string, std::string>>& env,
                           const std::filesystem::path& out, const std::filesystem::path& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
    ::dup2(::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(program.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

// A wait status as a shell reports it: the exit code, or 128 + the signal that ended it.
inline int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

inline int wait_code(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return exit_code(status);
}

}  // namespace vsynth::test
