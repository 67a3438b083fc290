#include "stages/validation/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <optional>

#include "stages/validation/error.h"
#include "stages/validation/unique_fd.h"

namespace vsynth::stages::validation {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxFiles = 32;
constexpr int kMaxChildFds = 4 + kMaxFiles + 1;  // stdio, report, files, status pipe
// Where the supervisor parks the descriptors it hands on before it closes everything else:
// above any target number, so moving them never clobbers one.
constexpr int kParkedFdBase = 256;
// After a kill, how long the supervisor may take to reap everything before it is killed too.
constexpr auto kKillGrace = std::chrono::seconds(5);
// After the supervisor exits, how long a pipe may stay open (it cannot: every writer is dead).
constexpr auto kDrainGrace = std::chrono::seconds(2);
// How often a run with a SandboxLimits::stop flag looks at it.
constexpr auto kStopPoll = std::chrono::milliseconds(50);
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr uint32_t kSlots = 64;

std::string errno_text(int err) {
  return std::strerror(err);
}

[[noreturn]] void throw_errno(const std::string& what) {
  throw ValidationError(fmt::format("sandbox: {}: {}", what, errno_text(errno)));
}

// --- uids for runs as root ---------------------------------------------------------------

// One outside uid per concurrent run, so that RLIMIT_NPROC (which the kernel counts per uid,
// across user namespaces) counts only that run's processes and no two runs share a uid.
class UidLease {
 public:
  explicit UidLease(uint32_t base) : base_(base) {
    std::unique_lock l(mu());
    cv().wait(l, [] { return !used().all(); });
    for (uint32_t i = 0; i < kSlots; ++i) {
      if (!used().test(i)) {
        used().set(i);
        slot_ = i;
        break;
      }
    }
  }
  ~UidLease() {
    {
      std::lock_guard l(mu());
      used().reset(slot_);
    }
    cv().notify_one();
  }
  UidLease(const UidLease&) = delete;
  UidLease& operator=(const UidLease&) = delete;
  uint32_t uid() const { return base_ + slot_; }

 private:
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::condition_variable& cv() {
    static std::condition_variable c;
    return c;
  }
  static std::bitset<kSlots>& used() {
    static std::bitset<kSlots> u;
    return u;
  }
  uint32_t base_;
  uint32_t slot_ = 0;
};

uint32_t auto_uid_base() {
  return 1'800'000'000u + (static_cast<uint32_t>(::getpid()) % (1u << 22)) * kSlots;
}

// Processes the real uid already runs (non-root runs share the uid with the user's own
// processes, and RLIMIT_NPROC counts them all).
uint64_t processes_of_uid(uid_t uid) {
  uint64_t n = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, 0) == 0 && st.st_uid == uid) ++n;
  }
  ::closedir(d);
  return n;
}

// --- the two child processes ---------------------------------------------------------------

// Everything the children need, prepared before fork: after fork they only make system calls.
struct ChildPlan {
  const char* bwrap = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  std::array<int, kMaxChildFds> src{};  // descriptor for target i (0 stdin, 1, 2, [3], files)
  int targets = 0;
  int status_w = -1;
  std::array<std::pair<__rlimit_resource_t, rlimit>, 7> limits{};
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t parent = 0;
};

void write_all_raw(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void raw_message(const char* text) {
  write_all_raw(2, text, std::strlen(text));
}

// Closes descriptors [first, last]; close_range where the kernel has it (5.9+), else one by
// one up to the descriptor limit.
void close_span(unsigned first, unsigned last) {
  if (first > last) return;
  if (::syscall(SYS_close_range, first, last, 0) == 0) return;
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  const rlim_t top = std::min<rlim_t>({rl.rlim_cur, rlim_t{1} << 20, rlim_t{last} + 1});
  for (rlim_t fd = first; fd < top; ++fd) ::close(static_cast<int>(fd));
}

// Closes every descriptor but those in keep[0..n) (sorted ascending).
void close_all_but(const int* keep, int n) {
  unsigned next = 0;
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<unsigned>(keep[i]);
    if (k > next) close_span(next, k - 1);
    next = k + 1;
  }
  close_span(next, ~0u);
}

// The grandchild: becomes bwrap. Async-signal-safe calls only.
[[noreturn]] void exec_bwrap(const ChildPlan& p, const int* parked, pid_t supervisor) {
  ::setpgid(0, 0);
  // Inherited signal state would survive execve: start the sandbox from defaults.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) {
    if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &dfl, nullptr);
  }
  for (int i = 0; i < p.targets; ++i) {
    if (::dup2(parked[i], i) < 0) {
      raw_message("vsynth-sandbox: dup2 failed\n");
      ::_exit(127);
    }
  }
  close_span(static_cast<unsigned>(p.targets), ~0u);
  for (const auto& [resource, value] : p.limits) {
    if (::setrlimit(resource, &value) != 0) {
      raw_message("vsynth-sandbox: setrlimit failed\n");
      ::_exit(127);
    }
  }
  if (p.drop) {
    // Raw system calls: glibc's wrappers would try to synchronise threads this child lacks.
    if (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
        ::syscall(SYS_setresgid, p.gid, p.gid, p.gid) != 0 ||
        ::syscall(SYS_setresuid, p.uid, p.uid, p.uid) != 0) {
      raw_message("vsynth-sandbox: cannot switch to the sandbox uid\n");
      ::_exit(127);
    }
  }
  // Set after the uid change (which clears it); dies with the supervisor.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != supervisor) ::_exit(127);
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (::chdir("/") != 0) ::_exit(127);
  ::execve(p.bwrap, p.argv, p.envp);
  raw_message("vsynth-sandbox: cannot execute bwrap\n");
  ::_exit(127);
}

// The supervisor (our child): a session of its own, child subreaper for the run, parent of
// bwrap. It tells the parent bwrap's pid, reaps every process of the run (bwrap's pid-1
// reaper is re-parented to it when bwrap exits first) and then reports bwrap's wait status.
// Async-signal-safe calls only: the parent is multi-threaded.
[[noreturn]] void supervise(const ChildPlan& p) {
  ::setsid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != p.parent) ::_exit(120);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);

  // Park what bwrap needs (and the status pipe) above kParkedFdBase; close everything else,
  // including descriptors other threads of the parent had open when it forked.
  int parked[kMaxChildFds + 1];
  const int n = p.targets;
  for (int i = 0; i < n; ++i) {
    parked[i] = ::fcntl(p.src[i], F_DUPFD, kParkedFdBase + i);
    if (parked[i] < 0) ::_exit(121);
  }
  const int status_w = ::fcntl(p.status_w, F_DUPFD, kParkedFdBase + n);
  if (status_w < 0) ::_exit(121);
  int keep[kMaxChildFds + 1];
  for (int i = 0; i < n; ++i) keep[i] = parked[i];
  keep[n] = status_w;
  std::sort(keep, keep + n + 1);
  close_all_but(keep, n + 1);

  // A raw clone: glibc's fork() would run atfork handlers meant for the parent's threads.
  const long g = ::syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (g == 0) exec_bwrap(p, parked, static_cast<pid_t>(::syscall(SYS_getppid)));
  int32_t gpid = static_cast<int32_t>(g);
  if (g > 0) ::setpgid(static_cast<pid_t>(g), static_cast<pid_t>(g));  // before the parent kills it
  write_all_raw(status_w, &gpid, sizeof gpid);
  for (int i = 0; i < n; ++i) ::close(parked[i]);

  int32_t gstatus = -1;
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(-1, &st, __WALL);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: every process of the run is reaped
    }
    if (r == g) gstatus = st;
  }
  write_all_raw(status_w, &gstatus, sizeof gstatus);
  ::_exit(0);
}

// --- parent side -------------------------------------------------------------------------

struct Pipe {
  UniqueFd r, w;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
  Pipe p{UniqueFd(fds[0]), UniqueFd(fds[1])};
  ::fcntl(p.r.get(), F_SETFL, O_NONBLOCK);
  return p;
}

UniqueFd make_memfd(const SandboxFile& f) {
  UniqueFd fd(::memfd_create(f.name.c_str(), MFD_CLOEXEC));
  if (!fd) throw_errno("memfd_create for " + f.name);
  for (std::string_view piece : f.pieces) {
    const char* p = piece.data();
    std::size_t n = piece.size();
    while (n > 0) {
      const ssize_t w = ::write(fd.get(), p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        throw_errno("writing " + f.name + " into a memfd");
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) throw_errno("lseek on a memfd");
  return fd;
}

bool valid_file_name(const std::string& n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos &&
         n.find('\0') == std::string::npos && n.size() < 200;
}

void check_request(const SandboxRequest& req) {
  if (req.argv.empty()) throw ValidationError("sandbox request: empty argv (give a command)");
  if (req.argv[0].empty() || req.argv[0][0] != '/') {
    throw ValidationError("sandbox request: argv[0] `" + req.argv[0] +
                          "` must be an absolute path inside the sandbox (e.g. /usr/bin/python3)");
  }
  if (req.files.size() > static_cast<std::size_t>(kMaxFiles)) {
    throw ValidationError(
        fmt::format("sandbox request: {} files, at most {}", req.files.size(), kMaxFiles));
  }
  for (const auto& f : req.files) {
    if (!valid_file_name(f.name)) {
      throw ValidationError("sandbox request: file name `" + f.name +
                            "` must be a plain name (no '/', not . or ..)");
    }
  }
  for (const auto& [k, v] : req.env) {
    if (k.empty() || k.find('=') != std::string::npos) {
      throw ValidationError("sandbox request: environment variable name `" + k +
                            "` must be non-empty and contain no '='");
    }
  }
  const SandboxLimits& l = req.limits;
  if (l.cpu_ms <= 0 || l.wall_ms <= 0 || l.address_space == 0 || l.processes == 0 ||
      l.open_files < 8 || l.tmp_size == 0) {
    throw ValidationError(
        "sandbox request: limits must be positive (cpu_ms, wall_ms, address_space, processes, "
        "tmp_size) and open_files >= 8");
  }
}

// --- one run, step by step (Sandbox::run below calls them in order) ------------------------

// The parent's ends of a run's descriptors. The command gets, in this order: 0 stdin,
// 1 stdout, 2 stderr, [3 report], then one memfd per file.
struct RunFds {
  std::vector<UniqueFd> memfds;
  Pipe out, err, rep, status;
  UniqueFd devnull;  // stdin when the request gives none
  int stdin_fd = -1;
};

RunFds open_run_fds(const SandboxRequest& req) {
  RunFds fds;
  for (const auto& f : req.files) fds.memfds.push_back(make_memfd(f));
  fds.out = make_pipe();
  fds.err = make_pipe();
  fds.status = make_pipe();
  if (req.report_fd) fds.rep = make_pipe();
  fds.stdin_fd = req.stdin_fd;
  if (fds.stdin_fd < 0) {
    fds.devnull.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!fds.devnull) throw_errno("open /dev/null");
    fds.stdin_fd = fds.devnull.get();
  }
  return fds;
}

// A NULL-terminated argv pointing into `args` (which must outlive it).
std::vector<char*> c_argv(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  return argv;
}

// The rlimits of the run, set in the bwrap child so they bind every process under it.
std::array<std::pair<__rlimit_resource_t, rlimit>, 7> run_rlimits(const SandboxLimits& lim,
                                                                  bool root) {
  const auto secs = static_cast<rlim_t>((lim.cpu_ms + 999) / 1000);
  // Not root: the uid is the user's own, whose other processes count against RLIMIT_NPROC.
  const uint64_t nproc = root ? lim.processes : lim.processes + processes_of_uid(::getuid());
  return {{
      {RLIMIT_CPU, {secs, secs + 1}},
      {RLIMIT_AS, {lim.address_space, lim.address_space}},
      {RLIMIT_NPROC, {nproc, nproc}},
      {RLIMIT_FSIZE, {lim.file_size, lim.file_size}},
      {RLIMIT_NOFILE, {lim.open_files, lim.open_files}},
      {RLIMIT_CORE, {0, 0}},
      {RLIMIT_MEMLOCK, {0, 0}},
  }};
}

// Forks the supervisor and closes the parent's copies of what only the children need.
// Returns the supervisor's pid.
pid_t spawn_supervisor(const ChildPlan& plan, RunFds& fds) {
  const pid_t c = ::fork();
  if (c < 0) throw_errno("fork");
  if (c == 0) supervise(plan);
  fds.out.w.reset();
  fds.err.w.reset();
  fds.rep.w.reset();
  fds.status.w.reset();
  fds.memfds.clear();
  fds.devnull.reset();
  return c;
}

// What one poll() slot watches.
enum class PollSource {
  Stdout,      // the command's fd 1
  Stderr,      // its fd 2
  Report,      // its fd 3 (report_fd)
  Status,      // the supervisor's report: bwrap's pid, then bwrap's wait status
  Supervisor,  // a pidfd of the supervisor: readable once it has exited
};
constexpr std::size_t kStreams = 3;  // Stdout, Stderr, Report: the captured streams
constexpr std::size_t kPollSources = 5;

// Collects the run's output and enforces its wall-clock and output limits until the
// supervisor has exited and every pipe is drained (or kDrainGrace has passed). Never throws.
class RunMonitor {
 public:
  RunMonitor(const SandboxLimits& lim, RunFds& fds, pid_t supervisor, Clock::time_point t0,
             SandboxResult& res)
      : lim_(lim),
        res_(res),
        supervisor_(supervisor),
        pidfd_(static_cast<int>(::syscall(SYS_pidfd_open, supervisor, 0))),
        status_fd_(fds.status.r.get()),
        deadline_(t0 + std::chrono::milliseconds(lim.wall_ms)),
        buf_(kReadChunk) {
    streams_ = {Stream{fds.out.r.get(), &res.out, true}, Stream{fds.err.r.get(), &res.err, true},
                Stream{fds.rep.r.get(), &res.report, static_cast<bool>(fds.rep.r)}};
  }

  void run() {
    for (;;) {
      const auto now = Clock::now();
      if (finished(now)) return;
      enforce_limits(now);
      if (!wait_and_read(now)) return;
      if (!pidfd_ && !exited_) poll_supervisor_exit();
    }
  }

  // bwrap's pid as the supervisor reported it; 0 until it has.
  pid_t bwrap_pid() const {
    if (status_bytes_.size() < sizeof(int32_t)) return 0;
    int32_t v;
    std::memcpy(&v, status_bytes_.data(), sizeof v);
    return v;
  }
  const std::string& status_bytes() const { return status_bytes_; }

 private:
  struct Stream {
    int fd;
    StreamCapture* cap;
    bool open;
  };

  bool pipes_open() const {
    return status_open_ ||
           std::any_of(streams_.begin(), streams_.end(), [](const Stream& s) { return s.open; });
  }
  bool finished(Clock::time_point now) const {
    return exited_ && (!pipes_open() || now - exit_time_ > kDrainGrace);
  }

  void enforce_limits(Clock::time_point now) {
    if (!exited_ && res_.killed == KillReason::None && now >= deadline_) {
      kill_run(KillReason::WallTime);
    }
    if (!exited_ && res_.killed == KillReason::None && lim_.stop &&
        lim_.stop->load(std::memory_order_relaxed)) {
      kill_run(KillReason::Stopped);
    }
    if (!exited_ && res_.killed != KillReason::None && !supervisor_killed_ &&
        now - kill_time_ > kKillGrace) {
      ::kill(supervisor_, SIGKILL);
      supervisor_killed_ = true;
    }
  }

  void kill_run(KillReason why) {
    if (res_.killed != KillReason::None) return;
    res_.killed = why;
    kill_time_ = Clock::now();
    const pid_t g = bwrap_pid();
    // bwrap and its pid-1 reaper share a process group; killing it tears down the pid
    // namespace and with it every process of the command.
    if (g > 0) {
      ::kill(-g, SIGKILL);
    } else {
      ::kill(supervisor_, SIGKILL);  // not even started: the death signals take down the rest
      supervisor_killed_ = true;
    }
  }

  // One poll() until the next deadline, then the reads it allows. False when poll() failed
  // (it cannot with valid fds; the caller reaps).
  bool wait_and_read(Clock::time_point now) {
    std::array<pollfd, kPollSources> pfds{};
    std::array<PollSource, kPollSources> what{};
    nfds_t n = 0;
    for (std::size_t i = 0; i < kStreams; ++i) {
      if (!streams_[i].open) continue;
      pfds[n] = {streams_[i].fd, POLLIN, 0};
      what[n++] = static_cast<PollSource>(i);
    }
    if (status_open_) {
      pfds[n] = {status_fd_, POLLIN, 0};
      what[n++] = PollSource::Status;
    }
    if (pidfd_ && !exited_) {
      pfds[n] = {pidfd_.get(), POLLIN, 0};
      what[n++] = PollSource::Supervisor;
    }
    // Wake for the next deadline; without a pidfd (kernel < 5.3) check the child every 20 ms.
    auto wake = exited_                           ? exit_time_ + kDrainGrace
                : res_.killed == KillReason::None ? deadline_
                                                  : kill_time_ + kKillGrace;
    if (!pidfd_) wake = std::min(wake, now + std::chrono::milliseconds(20));
    if (lim_.stop && !exited_ && res_.killed == KillReason::None)
      wake = std::min(wake, now + kStopPoll);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
    const int pr = ::poll(pfds.data(), n, static_cast<int>(std::clamp<int64_t>(ms, 0, 60000)));
    if (pr < 0 && errno != EINTR) return false;
    for (nfds_t i = 0; pr > 0 && i < n; ++i) {
      if (pfds[i].revents != 0) on_ready(what[i], pfds[i].fd);
    }
    return true;
  }

  void on_ready(PollSource src, int fd) {
    if (src == PollSource::Supervisor) {
      mark_exited();
      return;
    }
    const ssize_t r = ::read(fd, buf_.data(), buf_.size());
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (r <= 0) {  // end of file (or a read error): the pipe is done
      if (src == PollSource::Status)
        status_open_ = false;
      else
        streams_[static_cast<std::size_t>(src)].open = false;
      return;
    }
    const auto got = static_cast<std::size_t>(r);
    if (src == PollSource::Status) {
      status_bytes_.append(buf_.data(), got);
      return;
    }
    capture(*streams_[static_cast<std::size_t>(src)].cap, got);
  }

  // Keeps the first `output` bytes of a stream, counts the rest, kills past `output_kill`.
  void capture(StreamCapture& cap, std::size_t got) {
    cap.total += got;
    total_output_ += got;
    const std::size_t room =
        cap.data.size() < lim_.output ? static_cast<std::size_t>(lim_.output - cap.data.size()) : 0;
    cap.data.append(buf_.data(), std::min(room, got));
    if (got > room) cap.truncated = true;
    if (total_output_ > lim_.output_kill) kill_run(KillReason::OutputLimit);
  }

  void poll_supervisor_exit() {
    siginfo_t si{};
    if (::waitid(P_PID, static_cast<id_t>(supervisor_), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == supervisor_) {
      mark_exited();
    }
  }

  void mark_exited() {
    exited_ = true;
    exit_time_ = Clock::now();
  }

  const SandboxLimits& lim_;
  SandboxResult& res_;
  const pid_t supervisor_;
  UniqueFd pidfd_;
  const int status_fd_;
  const Clock::time_point deadline_;
  std::array<Stream, kStreams> streams_{};
  std::string status_bytes_;
  bool status_open_ = true;
  bool exited_ = false;  // the supervisor has exited (not yet reaped)
  bool supervisor_killed_ = false;
  Clock::time_point exit_time_{}, kill_time_{};
  uint64_t total_output_ = 0;
  std::vector<char> buf_;
};

// Reaps the supervisor; returns its wait status and adds the CPU time of the run (the
// supervisor's children are all reaped by then, so its rusage covers them) to `res`.
int reap_supervisor(pid_t supervisor, SandboxResult& res) {
  int status = 0;
  rusage ru{};
  while (::wait4(supervisor, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  res.cpu_ms = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
               static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
  return status;
}

// Turns the supervisor's report (bwrap's pid, then bwrap's wait status) into the verdict:
// the command's exit code or signal, or a setup error when the sandbox never ran it.
void classify(SandboxResult& res, const std::string& status_bytes, pid_t bwrap_pid,
              int supervisor_status, const std::string& bwrap) {
  if (status_bytes.size() < 2 * sizeof(int32_t) || bwrap_pid <= 0) {
    if (res.killed != KillReason::None) {
      res.started = true;  // killed before it could report: the kill is the verdict
      return;
    }
    res.setup_error =
        WIFSIGNALED(supervisor_status)
            ? fmt::format("the sandbox supervisor died of signal {}", WTERMSIG(supervisor_status))
            : fmt::format("the sandbox supervisor failed (exit {}); bwrap at `{}`",
                          WEXITSTATUS(supervisor_status), bwrap);
    return;
  }
  int32_t gstatus;
  std::memcpy(&gstatus, status_bytes.data() + sizeof(int32_t), sizeof gstatus);
  if (!WIFEXITED(gstatus)) {
    res.started = true;
    res.exit_code = -1;
    if (res.killed == KillReason::None && WIFSIGNALED(gstatus)) res.signal = WTERMSIG(gstatus);
    return;
  }
  res.exit_code = WEXITSTATUS(gstatus);
  const std::string_view err_text = res.err.data;
  const bool ours = res.exit_code == 127 && err_text.rfind("vsynth-sandbox: ", 0) == 0;
  // bwrap exits 1 with "bwrap: ..." when it cannot build the sandbox or exec the command.
  const bool bwraps = res.exit_code == 1 && res.out.total == 0 && res.report.total == 0 &&
                      err_text.rfind("bwrap: ", 0) == 0;
  if ((ours || bwraps) && res.killed == KillReason::None) {
    res.setup_error = std::string(err_text.substr(0, err_text.find('\n')));
    return;
  }
  res.started = true;
  // bwrap reports a death by signal n as exit 128 + n.
  if (res.exit_code > 128 && res.exit_code <= 128 + 64) res.signal = res.exit_code - 128;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGXFSZ:
      return "SIGXFSZ";
    case SIGSYS:
      return "SIGSYS";
    default:
      return "signal";
  }
}

}  // namespace

const char* to_string(KillReason r) {
  switch (r) {
    case KillReason::None:
      return "none";
    case KillReason::WallTime:
      return "wall_time";
    case KillReason::OutputLimit:
      return "output_limit";
    case KillReason::Stopped:
      return "stopped";
  }
  return "?";
}

std::string SandboxResult::describe(const SandboxLimits& limits) const {
  if (!started) return "sandbox setup failed: " + setup_error;
  if (killed == KillReason::WallTime) {
    return fmt::format("killed at the wall-clock limit of {} ms", limits.wall_ms);
  }
  if (killed == KillReason::OutputLimit) {
    return fmt::format("killed after writing more than {} bytes of output", limits.output_kill);
  }
  if (killed == KillReason::Stopped) return "killed: the run was called off (stopping)";
  if (signal != 0) {
    std::string why;
    switch (signal) {
      case SIGXCPU:
        why = fmt::format(": CPU time limit of {} ms", limits.cpu_ms);
        break;
      case SIGKILL:
        why = ": CPU hard limit or out of memory";
        break;
      case SIGXFSZ:
        why = fmt::format(": file size limit of {} bytes", limits.file_size);
        break;
      case SIGSEGV:
        why = ": segmentation fault";
        break;
      case SIGABRT:
        why = ": aborted";
        break;
      default:
        break;
    }
    return fmt::format("killed by {} ({}){}", signal_name(signal), signal, why);
  }
  return fmt::format("exit {}", exit_code);
}

Sandbox::Sandbox(SandboxConfig config) : config_(std::move(config)) {
  // The top-level directories that hold programs and libraries: merged-/usr systems make them
  // symlinks into /usr (recreated as such), others real directories (bound read-only).
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    struct stat st {};
    if (::lstat(top, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      const ssize_t n = ::readlink(top, target, sizeof target - 1);
      if (n > 0) root_links_.emplace_back(std::string(target, static_cast<std::size_t>(n)), top);
    } else if (S_ISDIR(st.st_mode)) {
      root_dirs_.emplace_back(top);
    }
  }
  for (const auto& p : config_.ro_binds) {
    struct stat st {};
    if (p.empty() || p[0] != '/' || ::stat(p.c_str(), &st) != 0) {
      throw ValidationError("sandbox: ro_binds entry `" + p +
                            "` must be an absolute path that exists on this machine");
    }
  }
}

std::vector<std::string> Sandbox::bwrap_args(const SandboxRequest& req, int first_file_fd) const {
  std::vector<std::string> a = {
      config_.bwrap,
      // Every namespace; user explicitly so a refusal fails instead of being skipped.
      "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
      "--uid", "65534", "--gid", "65534", "--hostname", "sandbox", "--clearenv"};
  for (const auto& [k, v] : req.env) {
    a.insert(a.end(), {"--setenv", k, v});
  }
  a.insert(a.end(), {"--ro-bind", "/usr", "/usr"});
  for (const auto& [target, path] : root_links_) a.insert(a.end(), {"--symlink", target, path});
  for (const auto& d : root_dirs_) a.insert(a.end(), {"--ro-bind", d, d});
  for (const auto& p : config_.ro_binds) a.insert(a.end(), {"--ro-bind", p, p});
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--size",
                     std::to_string(req.limits.tmp_size), "--tmpfs", "/tmp", "--dir", "/tmp/work"});
  for (std::size_t i = 0; i < req.files.size(); ++i) {
    a.insert(a.end(), {"--perms", req.files[i].executable ? "0755" : "0644", "--file",
                       std::to_string(first_file_fd + static_cast<int>(i)),
                       "/tmp/work/" + req.files[i].name});
  }
  a.insert(a.end(), {"--chdir", "/tmp/work", "--remount-ro", "/dev", "--remount-ro", "/", "--"});
  return a;
}

SandboxResult Sandbox::run(const SandboxRequest& req) const {
  check_request(req);
  const auto t0 = Clock::now();

  // 1. The descriptors and the command line (bwrap's arguments, then the command's).
  RunFds fds = open_run_fds(req);
  std::vector<std::string> args = bwrap_args(req, req.report_fd ? 4 : 3);
  args.insert(args.end(), req.argv.begin(), req.argv.end());
  std::vector<char*> argv = c_argv(args);
  char* envp[] = {nullptr};  // bwrap itself needs none; the command's comes from --setenv

  // 2. Everything the children need, prepared before fork (they only make system calls).
  std::optional<UidLease> lease;
  const bool root = ::geteuid() == 0;
  if (root) lease.emplace(uid_base());
  ChildPlan plan;
  plan.bwrap = config_.bwrap.c_str();
  plan.argv = argv.data();
  plan.envp = envp;
  int t = 0;
  plan.src[t++] = fds.stdin_fd;
  plan.src[t++] = fds.out.w.get();
  plan.src[t++] = fds.err.w.get();
  if (req.report_fd) plan.src[t++] = fds.rep.w.get();
  for (const auto& m : fds.memfds) plan.src[t++] = m.get();
  plan.targets = t;
  plan.status_w = fds.status.w.get();
  plan.limits = run_rlimits(req.limits, root);
  plan.drop = root;
  if (lease) plan.uid = plan.gid = lease->uid();
  plan.parent = ::getpid();

  // 3. Spawn. From here on nothing may throw before the supervisor is reaped.
  const pid_t supervisor = spawn_supervisor(plan, fds);

  // 4. Collect the output, enforcing the wall-clock and output limits, until the run is gone.
  SandboxResult res;
  RunMonitor monitor(req.limits, fds, supervisor, t0, res);
  monitor.run();

  // 5. Reap the supervisor and classify what the run did.
  const int supervisor_status = reap_supervisor(supervisor, res);
  res.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  res.timed_out = res.killed == KillReason::WallTime;
  classify(res, monitor.status_bytes(), monitor.bwrap_pid(), supervisor_status, config_.bwrap);
  return res;
}

uint32_t Sandbox::uid_base() const {
  return config_.uid_base ? config_.uid_base : auto_uid_base();
}

void Sandbox::probe() const {
  if (::access(config_.bwrap.c_str(), X_OK) != 0) {
    throw ValidationError("sandbox: bubblewrap not found at `" + config_.bwrap +
                          "` (install the `bubblewrap` package, or set `bwrap:` to its path)");
  }
  SandboxRequest req;
  req.argv = {"/usr/bin/true"};
  req.limits.wall_ms = 20000;
  const SandboxResult r = run(req);
  if (!r.started || r.exit_code != 0) {
    throw ValidationError("sandbox: `" + config_.bwrap + "` cannot create a sandbox here: " +
                          (r.started ? r.describe(req.limits) + ": " + r.err.data : r.setup_error) +
                          " (bubblewrap needs unprivileged user namespaces: check "
                          "/proc/sys/user/max_user_namespaces)");
  }
}

}  // namespace vsynth::stages::validation
