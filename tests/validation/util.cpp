#include "tests/validation/util.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace vsynth::test {

namespace fs = std::filesystem;

HostTempDir::HostTempDir() {
  std::string tmpl = "/tmp/vsynth-validation-test-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
  ::chmod(path_.c_str(), 0755);
}

HostTempDir::~HostTempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);  // removes symlinks themselves, never their targets
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text, int mode) {
  std::ofstream(path, std::ios::binary) << text;
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool ControlResult::exited(int code) const {
  return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

ControlResult run_unconfined(const std::vector<std::string>& argv, const ControlOptions& o) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2");
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char* no_env[] = {nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork");
  if (pid == 0) {
    if (o.ctty >= 0) {
      ::setsid();
      ::ioctl(o.ctty, TIOCSCTTY, 0);
      ::dup2(o.ctty, 0);
    } else {
      ::setpgid(0, 0);
      const int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
    }
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (const auto& [res, value] : o.limits) {
      const rlimit rl{value, value};
      ::setrlimit(static_cast<__rlimit_resource_t>(res), &rl);
    }
    if (o.drop_uid) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(o.uid) != 0 || ::setuid(o.uid) != 0) {
        ::_exit(126);
      }
    }
    if (!o.cwd.empty() && ::chdir(o.cwd.c_str()) != 0) ::_exit(126);
    ::execve(args[0], args.data(), o.inherit_env ? environ : no_env);
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);
  ControlResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.timeout_ms);
  bool out_open = true, err_open = true, exited = false;
  char buf[65536];
  while (out_open || err_open || !exited) {
    if (!exited) {
      const pid_t w = ::waitpid(pid, &r.status, WNOHANG);
      if (w == pid) exited = true;
    }
    if (exited && !out_open && !err_open) break;
    if (std::chrono::steady_clock::now() > deadline) {
      if (!exited) {
        r.timed_out = true;
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &r.status, 0);
        exited = true;
      }
      break;
    }
    const short in_out = out_open ? POLLIN : 0, in_err = err_open ? POLLIN : 0;
    pollfd p[2] = {{out[0], in_out, 0}, {err[0], in_err, 0}};
    ::poll(p, 2, 20);
    if (o.tick) o.tick();
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = ::read(p[i].fd, buf, sizeof buf);
      if (n <= 0) {
        if (n == 0 || errno != EAGAIN) (i == 0 ? out_open : err_open) = false;
        continue;
      }
      std::string& dst = i == 0 ? r.out : r.err;
      if (i == 0) r.out_bytes += static_cast<uint64_t>(n);
      if (dst.size() < (1u << 20)) dst.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(out[0]);
  ::close(err[0]);
  return r;
}

ControlResult run_python_unconfined(const std::string& code, const ControlOptions& o) {
  return run_unconfined({"/usr/bin/python3", "-I", "-S", "-B", "-c", code}, o);
}

stages::validation::SandboxResult run_python_sandboxed(
    const std::string& code, const stages::validation::SandboxLimits& limits, int stdin_fd,
    const stages::validation::SandboxConfig& config) {
  stages::validation::Sandbox sandbox(config);
  stages::validation::SandboxRequest req;
  req.argv = {"/usr/bin/python3", "-I", "-S", "-B", "main.py"};
  req.files.push_back({"main.py", {code}});
  req.limits = limits;
  req.stdin_fd = stdin_fd;
  return sandbox.run(req);
}

namespace {
// Fields of /proc/<pid>/status: "PPid:" and "Uid:" (real uid first).
bool proc_status(const std::string& pid, pid_t& ppid, uid_t& uid) {
  std::ifstream in("/proc/" + pid + "/status");
  if (!in) return false;
  std::string line;
  bool have_ppid = false, have_uid = false;
  while (std::getline(in, line)) {
    if (line.rfind("PPid:", 0) == 0) {
      ppid = static_cast<pid_t>(std::strtol(line.c_str() + 5, nullptr, 10));
      have_ppid = true;
    } else if (line.rfind("Uid:", 0) == 0) {
      uid = static_cast<uid_t>(std::strtoul(line.c_str() + 4, nullptr, 10));
      have_uid = true;
    }
  }
  return have_ppid && have_uid;
}

template <class Pred>
std::vector<pid_t> scan(Pred pred) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    pid_t ppid = 0;
    uid_t uid = 0;
    if (proc_status(e->d_name, ppid, uid) && pred(ppid, uid)) {
      out.push_back(static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10)));
    }
  }
  ::closedir(d);
  return out;
}
}  // namespace

std::vector<pid_t> children_of_self() {
  const pid_t self = ::getpid();
  return scan([&](pid_t ppid, uid_t) { return ppid == self; });
}

std::vector<pid_t> processes_of_uids(uid_t first, uid_t count) {
  return scan([&](pid_t, uid_t uid) { return uid >= first && uid - first < count; });
}

void kill_all_of_uid(uid_t uid) {
  for (int round = 0; round < 100 && !processes_of_uids(uid, 1).empty(); ++round) {
    const pid_t k = ::fork();
    if (k == 0) {
      if (::setuid(uid) == 0) ::kill(-1, SIGKILL);
      ::_exit(0);
    }
    int st = 0;
    ::waitpid(k, &st, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

uid_t sandbox_uid_base() {
  return stages::validation::Sandbox().uid_base();
}

bool is_root() {
  return ::geteuid() == 0;
}

}  // namespace vsynth::test
