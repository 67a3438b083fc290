// Sandbox: runs one command on generated code inside bubblewrap, with limits, and always
// returns exactly one SandboxResult once every process of the run is gone.
//
// What the command sees (docs/sandbox.md has the full list and the reasons):
//   - every namespace unshared (user, mount, pid, net, ipc, uts, cgroup); no network beyond
//     its own loopback; nested user namespaces disabled; `--new-session` (no controlling
//     terminal: TIOCSTI cannot reach ours); `--die-with-parent`;
//   - /usr read-only (with /bin, /lib, /lib64, /sbin as on the host), a fresh /proc and a
//     minimal read-only /dev; nothing else of the host: no /etc, /home, /root, /work, /tmp;
//   - a private size-limited tmpfs at /tmp; the request's files are copied into /tmp/work
//     (from memfds: the host never creates a file or directory for a run, so nothing can be
//     left behind and no host path can be swapped for a symlink); `/` is remounted read-only;
//   - uid/gid 65534 (nobody) inside; when vsynth runs as root the sandbox is also an
//     unprivileged uid outside (one per concurrent run, see UidLease in sandbox.cpp), so
//     RLIMIT_NPROC counts only that run's processes;
//   - an empty environment unless the request names variables;
//   - rlimits on CPU seconds, address space, processes, file size, open files (core dumps off),
//     set before bwrap starts so they cover every process of the run.
// The caller's thread polls the output pipes and a pidfd of the supervisor process: at the
// wall-clock limit (or when output passes `output_kill`) the whole bwrap process group is
// SIGKILLed, which tears down the pid namespace; the supervisor reaps everything (it is the
// child subreaper of the run), so no zombie or process outlives run().
//
//   Sandbox sandbox;                       // default SandboxConfig
//   SandboxRequest req;
//   req.argv = {"/usr/bin/python3", "-I", "-S", "-B", "main.py"};
//   req.files.push_back({"main.py", {code}});
//   SandboxResult r = sandbox.run(req);     // blocks this thread; never throws for the child
//   if (r.timed_out) ...
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vsynth::stages::validation {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * 1024;

// Limits of one run. The defaults serve unit tests of small functions (see docs/sandbox.md for
// what python3 and cc measured here need).
struct SandboxLimits {
  int64_t cpu_ms = 5000;    // RLIMIT_CPU per process, rounded up to whole seconds; SIGXCPU at the
                            // soft limit, SIGKILL one second later
  int64_t wall_ms = 10000;  // whole run, sandbox setup included; then SIGKILL
  uint64_t address_space = 512 * kMiB;  // RLIMIT_AS per process (python3 -I -S starts at ~13 MB)
  uint64_t processes = 64;              // RLIMIT_NPROC: processes of the run, bwrap's 2 included
  uint64_t file_size = 1 * kMiB;        // RLIMIT_FSIZE: largest file any process may write
  uint64_t open_files = 64;             // RLIMIT_NOFILE per process
  uint64_t output = 64 * kKiB;          // bytes kept per stream (stdout, stderr, report)
  uint64_t output_kill = 16 * kMiB;     // bytes on all streams together that kill the run
  uint64_t tmp_size = 16 * kMiB;        // the private tmpfs at /tmp (holds the work dir)
  // Set by another thread (the item's work was called off: Item::stop_flag): the run is
  // killed within kStopPoll (KillReason::Stopped). Null: never. Not owned.
  const std::atomic<bool>* stop = nullptr;
};

struct SandboxConfig {
  std::string bwrap = "/usr/bin/bwrap";
  // Extra host paths bound read-only at the same place (an interpreter outside /usr). Each
  // must be absolute and exist.
  std::vector<std::string> ro_binds;
  // Only when running as root: the outside uid of concurrent run k is uid_base + k (k < 64).
  // 0 picks a range from the process id (1'800'000'000 + (pid mod 2^22) * 64), so two vsynth
  // processes on one machine never share a uid.
  uint32_t uid_base = 0;
};

// A file copied into the work dir before the command starts: the concatenation of `pieces`
// (views, e.g. a prompt and a completion in the item's arena; written once into a memfd).
struct SandboxFile {
  std::string name;  // a plain file name: no '/', not "." or ".."
  std::vector<std::string_view> pieces;
  bool executable = false;
};

struct SandboxRequest {
  std::vector<std::string> argv;  // argv[0]: an absolute path as the sandbox sees it
  std::vector<SandboxFile> files;
  std::vector<std::pair<std::string, std::string>> env;  // the whole environment (default: none)
  SandboxLimits limits;
  // Opens fd 3 in the command for a structured report (our test runners write JSON lines to
  // it), captured apart from stdout/stderr with the same cap.
  bool report_fd = false;
  // The command's stdin; -1 gives /dev/null. Not owned. Tests pass a pty to show that
  // --new-session keeps TIOCSTI away from the host terminal.
  int stdin_fd = -1;
};

enum class KillReason {
  None,
  WallTime,     // wall_ms passed
  OutputLimit,  // output_kill bytes were written
  Stopped,      // SandboxLimits::stop was set
};
const char* to_string(KillReason r);

struct StreamCapture {
  std::string data;    // at most SandboxLimits::output bytes
  uint64_t total = 0;  // bytes the command wrote on the stream
  bool truncated = false;
};

struct SandboxResult {
  // False when the sandbox itself could not be set up (bwrap missing, a mount refused...):
  // `setup_error` says why and nothing of the command ran. An infrastructure failure, never
  // the candidate's.
  bool started = false;
  std::string setup_error;
  // The command's exit code as bwrap reports it: a death by signal n reads 128 + n, so
  // `signal` is inferred from codes 129..192. -1 when the run was killed from outside.
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;  // killed at the wall-clock limit
  KillReason killed = KillReason::None;
  StreamCapture out, err, report;
  double wall_ms = 0;
  double cpu_ms = 0;  // user + system time of every reaped process of the run

  bool exited_ok() const { return started && killed == KillReason::None && exit_code == 0; }
  // "exit 1", "signal 24 (SIGXCPU: CPU limit)", "killed: wall-clock limit of 10000 ms"...
  std::string describe(const SandboxLimits& limits) const;
};

class Sandbox {
 public:
  explicit Sandbox(SandboxConfig config = {});

  // Runs the request in a fresh sandbox and returns when every process of the run has been
  // reaped. Blocks the calling thread (a worker's, never a graph thread). Throws
  // ValidationError only for a malformed request or when the host refuses pipes/processes;
  // whatever the command does becomes the result. Thread-safe; at most 64 concurrent runs
  // per process when running as root.
  SandboxResult run(const SandboxRequest& request) const;

  // Runs `/usr/bin/true` in the sandbox; throws ValidationError naming the bwrap binary and
  // bwrap's message when it cannot (not installed, user namespaces disabled...).
  void probe() const;

  // The bwrap arguments (everything up to and including "--") for a request whose files are
  // at fds first_file_fd, first_file_fd + 1, ...
  std::vector<std::string> bwrap_args(const SandboxRequest& request, int first_file_fd) const;

  const SandboxConfig& config() const { return config_; }
  // The outside uid of concurrent run 0 when running as root (uid_base or the automatic one);
  // runs use [uid_base(), uid_base() + 64).
  uint32_t uid_base() const;

 private:
  SandboxConfig config_;
  std::vector<std::pair<std::string, std::string>> root_links_;  // /bin -> usr/bin ...
  std::vector<std::string> root_dirs_;                           // or real dirs to bind
};

}  // namespace vsynth::stages::validation
