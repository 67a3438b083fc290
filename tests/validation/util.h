// Helpers for the validation tests: running a program *outside* the sandbox (the escape
// suite's controls, each bounded so that it is itself safe), host temp dirs, and scans of
// /proc for children and processes of a uid range.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "stages/validation/sandbox.h"

namespace vsynth::test {

// A fresh host directory under /tmp, removed (recursively, without following symlinks) at the
// end of the test.
class HostTempDir {
 public:
  HostTempDir();
  ~HostTempDir();
  HostTempDir(const HostTempDir&) = delete;
  HostTempDir& operator=(const HostTempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path);  // "" when it cannot be read
void write_file(const std::string& path, const std::string& text, int mode = 0644);
bool exists(const std::string& path);  // lstat: a dangling symlink exists

// An unconfined run: a plain fork/exec in its own process group, with optional rlimits, uid,
// working directory and controlling terminal; killed (the whole group) at the timeout.
struct ControlOptions {
  int64_t timeout_ms = 10000;
  std::string cwd;                               // "" : the test's
  std::vector<std::pair<int, uint64_t>> limits;  // (RLIMIT_*, value) soft = hard
  bool drop_uid = false;                         // run as `uid` (root only)
  uid_t uid = 0;
  int ctty = -1;  // a pty slave: stdin and controlling terminal of a new session
  bool inherit_env = true;
  std::function<void()> tick;  // called every ~20 ms while it runs
};
struct ControlResult {
  int status = 0;  // waitpid status
  bool timed_out = false;
  std::string out, err;  // first 1 MiB each
  uint64_t out_bytes = 0;
  bool exited(int code) const;
};
ControlResult run_unconfined(const std::vector<std::string>& argv, const ControlOptions& o = {});

// Same, for a Python program (python3 -I -S -B -c <code>).
ControlResult run_python_unconfined(const std::string& code, const ControlOptions& o = {});

// A sandboxed run of a Python program (python3 -I -S -B main.py) with `limits`.
stages::validation::SandboxResult run_python_sandboxed(
    const std::string& code, const stages::validation::SandboxLimits& limits = {},
    int stdin_fd = -1, const stages::validation::SandboxConfig& config = {});

// Direct children of this process (any state, zombies included).
std::vector<pid_t> children_of_self();
// Processes whose real uid is in [first, first + count).
std::vector<pid_t> processes_of_uids(uid_t first, uid_t count);
// Kills every process of `uid` (as that uid: kill(-1) from a child) until none is left.
void kill_all_of_uid(uid_t uid);

// The uid range sandboxes of this process use when running as root.
uid_t sandbox_uid_base();

bool is_root();

}  // namespace vsynth::test
