// The escape suite: programs that try to get out of the sandbox. Each is contained when run in
// the sandbox, and each has a control that runs the same program unconfined and shows it does
// the harm there (bounded so the control itself is safe: its own process group killed at a
// timeout, rlimits, a throwaway uid, host paths in a temp dir of the test).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <random>
#include <string>

#include "stages/validation/checks.h"
#include "stages/validation/sandbox.h"
#include "tests/validation/util.h"

using namespace vsynth;
using namespace vsynth::stages::validation;
using test::HostTempDir;

namespace {

std::string random_token() {
  std::random_device rd;
  return "TOPSECRET_" + std::to_string(rd()) + std::to_string(rd());
}

// Nothing of a sandbox run survives it: no child, no process of the sandbox uids.
void check_no_leftovers() {
  CHECK(test::children_of_self().empty());
  if (test::is_root()) CHECK(test::processes_of_uids(test::sandbox_uid_base(), 64).empty());
}

// A throwaway uid for controls that must not run as root (RLIMIT_NPROC does not bind root).
uid_t control_uid() {
  return 1'700'000'000u + static_cast<uid_t>(::getpid()) % (1u << 22);
}

}  // namespace

TEST_CASE("escape: writing outside the work dir reaches nothing of the host", "[escape]") {
  HostTempDir dir;
  const std::string target = dir.file("deep/escaped.txt");
  const std::string program =
      "import os\n"
      "target = '" +
      target +
      "'\n"
      "os.makedirs(os.path.dirname(target), exist_ok=True)\n"
      "open(target, 'w').write('escaped')\n"
      "print('wrote', target)\n";

  const SandboxResult r = test::run_python_sandboxed(program);
  REQUIRE(r.started);
  // Inside, the write lands in the sandbox's private tmpfs and vanishes with it.
  CHECK(r.exit_code == 0);
  CHECK_FALSE(test::exists(dir.file("deep")));
  check_no_leftovers();

  // System directories are read-only or absent inside.
  const SandboxResult sys = test::run_python_sandboxed(
      "import os\n"
      "for p in ['/usr/vsynth-escape', '/etc/vsynth-escape', '/vsynth-escape', "
      "'/dev/vsynth-escape', '/proc/sys/kernel/hostname', '/bin/vsynth-escape']:\n"
      "    try:\n"
      "        open(p, 'w').write('x')\n"
      "        print('WROTE', p)\n"
      "    except OSError as e:\n"
      "        print('refused', p, e.errno)\n");
  REQUIRE(sys.exited_ok());
  CHECK(sys.out.data.find("WROTE") == std::string::npos);
  CHECK(std::count(sys.out.data.begin(), sys.out.data.end(), '\n') == 6);

  // Control: the same program, unconfined, writes the host file.
  const test::ControlResult c = test::run_python_unconfined(program);
  CHECK(c.exited(0));
  CHECK(test::read_file(target) == "escaped");
}

TEST_CASE("escape: a symlink to a host file is never followed on the host", "[escape]") {
  HostTempDir host;
  const std::string canary = host.file("canary");
  test::write_file(canary, "original", 0600);
  const std::string program =
      "import os\n"
      "os.symlink('" +
      canary +
      "', 'link')\n"
      "os.symlink('" +
      host.path() +
      "', 'dirlink')\n"
      "for what, fn in [('append', lambda: open('link', 'a').write('pwned')),\n"
      "                 ('chmod', lambda: os.chmod('link', 0o666)),\n"
      "                 ('create', lambda: open('dirlink/planted', 'w').write('x'))]:\n"
      "    try:\n"
      "        fn()\n"
      "        print(what, 'ok')\n"
      "    except OSError as e:\n"
      "        print(what, 'failed', e.errno)\n";

  const SandboxResult r = test::run_python_sandboxed(program);
  REQUIRE(r.exited_ok());
  CHECK(r.out.data.find(" ok") == std::string::npos);
  // The links lived in the sandbox's tmpfs; the host never saw a path it could follow.
  CHECK(test::read_file(canary) == "original");
  struct stat st {};
  REQUIRE(::stat(canary.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK_FALSE(test::exists(host.file("planted")));
  check_no_leftovers();

  // Control: run unconfined in a work dir of its own, the program follows its links.
  HostTempDir work;
  test::ControlOptions o;
  o.cwd = work.path();
  const test::ControlResult c = test::run_python_unconfined(program, o);
  CHECK(c.exited(0));
  CHECK(test::read_file(canary) == "originalpwned");
  REQUIRE(::stat(canary.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0666);
  CHECK(test::exists(host.file("planted")));
}

TEST_CASE("escape: connecting to a loopback port of the host fails", "[escape]") {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener, 8) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const int port = ntohs(addr.sin_port);
  const std::string program =
      "import socket\n"
      "for host, port in [('127.0.0.1', " +
      std::to_string(port) +
      "), ('10.0.0.1', 80)]:\n"
      "    s = socket.socket()\n"
      "    s.settimeout(3)\n"
      "    try:\n"
      "        s.connect((host, port))\n"
      "        print('connected', host)\n"
      "    except OSError as e:\n"
      "        print('failed', host, e.errno)\n";

  const SandboxResult r = test::run_python_sandboxed(program);
  REQUIRE(r.exited_ok());
  CHECK(r.out.data.find("connected") == std::string::npos);
  CHECK(r.out.data.find("failed 127.0.0.1 111") != std::string::npos);  // ECONNREFUSED
  check_no_leftovers();

  // Control: unconfined, the same program reaches the listener.
  const test::ControlResult c = test::run_python_unconfined(program);
  CHECK(c.out.find("connected 127.0.0.1") != std::string::npos);
  ::close(listener);
}

namespace {

// Forks children that stay alive (each blocks reading a pipe the parent holds open) until a
// fork fails or `cap` children exist, then prints `forks <count> errno <errno>` (0: reached the
// cap), closes the pipe (every child exits on EOF), reaps them and exits 0.
std::string fork_until_refused(int cap) {
  return "import os\n"
         "r, w = os.pipe()\n"
         "count, err = 0, 0\n"
         "while count < " +
         std::to_string(cap) +
         ":\n"
         "    try:\n"
         "        pid = os.fork()\n"
         "    except OSError as e:\n"
         "        err = e.errno\n"
         "        break\n"
         "    if pid == 0:\n"
         "        os.close(w)\n"
         "        os.read(r, 1)\n"
         "        os._exit(0)\n"
         "    count += 1\n"
         "os.close(w)\n"
         "print('forks', count, 'errno', err, flush=True)\n"
         "for _ in range(count):\n"
         "    os.wait()\n";
}

// `forks N errno E` from fork_until_refused's output; {-1, -1} when absent.
std::pair<int, int> forks_and_errno(const std::string& out) {
  int forks = -1, err = -1;
  if (std::sscanf(out.c_str(), "forks %d errno %d", &forks, &err) != 2) return {-1, -1};
  return {forks, err};
}

}  // namespace

TEST_CASE("escape: a fork bomb meets the process limit inside the sandbox (EAGAIN)", "[escape]") {
  constexpr int kLimit = 16;  // SandboxLimits::processes: every process of the run
  constexpr int kCap = 4 * kLimit;
  SandboxLimits lim;
  lim.processes = kLimit;
  lim.wall_ms = 120000;  // generous: the process limit, not the clock, must stop it
  const SandboxResult r = test::run_python_sandboxed(fork_until_refused(kCap), lim);
  INFO(r.describe(lim) << "\n" << r.out.data << r.err.data);
  REQUIRE(r.exited_ok());  // ended on its own, not killed
  const auto [forks, err] = forks_and_errno(r.out.data);
  // The limit binds inside: a fork failed with EAGAIN, and the children that did start, with
  // python and bwrap's two processes, fit in the limit.
  CHECK(err == EAGAIN);
  CHECK(forks > 0);
  CHECK(forks + 3 <= kLimit);
  // As root the run's uid is its own: the limit binds exactly there.
  if (test::is_root()) CHECK(forks + 3 == kLimit);
  check_no_leftovers();
  // The host still forks.
  CHECK(test::run_unconfined({"/bin/true"}).exited(0));

  // Control: unconfined (as root, as a throwaway uid so the cleanup can kill all of it), the same
  // program is not stopped at the sandbox's limit: it reaches its own cap of 4x the limit.
  test::ControlOptions o;
  const uid_t uid = control_uid();
  if (test::is_root()) {
    o.drop_uid = true;
    o.uid = uid;
    o.limits = {{RLIMIT_NPROC, 2 * kCap}};  // a safety net well above the cap
  }
  o.limits.emplace_back(RLIMIT_CPU, 10);
  const test::ControlResult c = test::run_python_unconfined(fork_until_refused(kCap), o);
  if (test::is_root()) test::kill_all_of_uid(uid);
  INFO(c.out << c.err);
  CHECK(c.exited(0));
  CHECK(forks_and_errno(c.out) == std::pair<int, int>{kCap, 0});
  if (test::is_root()) CHECK(test::processes_of_uids(uid, 1).empty());
}

TEST_CASE("escape: a memory bomb stops at the address-space limit", "[escape]") {
  // Reserves 64 MiB at a time (bytearray's zeroed pages stay untouched, so neither run costs
  // real memory) and reports how far it got.
  const std::string program =
      "chunks = []\n"
      "try:\n"
      "    while len(chunks) < 24:\n"
      "        chunks.append(bytearray(64 << 20))\n"
      "finally:\n"
      "    print('chunks', len(chunks), flush=True)\n";
  const SandboxResult r = test::run_python_sandboxed(program);  // 512 MiB address space
  REQUIRE(r.started);
  CHECK(r.exit_code == 1);
  CHECK(r.err.data.find("MemoryError") != std::string::npos);
  const auto chunks = [](const std::string& out) {
    const auto p = out.find("chunks ");
    return p == std::string::npos ? -1 : std::stoi(out.substr(p + 7));
  };
  CHECK(chunks(r.out.data) >= 0);
  CHECK(chunks(r.out.data) < 8);  // 8 x 64 MiB = the limit
  check_no_leftovers();

  // Control: unconfined under a 2 GiB bound, the same program reserves 1.5 GiB.
  test::ControlOptions o;
  o.limits = {{RLIMIT_AS, 2ull << 30}};
  const test::ControlResult c = test::run_python_unconfined(program, o);
  CHECK(c.exited(0));
  CHECK(chunks(c.out) == 24);
}

TEST_CASE("escape: a busy loop is stopped by the CPU limit", "[escape]") {
  const std::string program = "while True:\n    pass\n";
  SandboxLimits lim;
  lim.cpu_ms = 1000;
  lim.wall_ms = 60000;  // generous: the CPU limit must act first, whatever the load
  const SandboxResult r = test::run_python_sandboxed(program, lim);
  REQUIRE(r.started);
  CHECK_FALSE(r.timed_out);
  CHECK((r.signal == SIGXCPU || r.signal == SIGKILL));
  check_no_leftovers();

  // Control: unconfined, it is still spinning when killed after a second.
  test::ControlOptions o;
  o.timeout_ms = 1000;
  o.limits = {{RLIMIT_CPU, 10}};
  CHECK(test::run_python_unconfined(program, o).timed_out);
}

TEST_CASE("escape: sleeping past the wall-clock limit is killed", "[escape]") {
  const std::string program = "import time\ntime.sleep(3600)\n";
  SandboxLimits lim;
  lim.wall_ms = 1500;
  const SandboxResult r = test::run_python_sandboxed(program, lim);
  REQUIRE(r.started);
  CHECK(r.timed_out);
  CHECK(r.killed == KillReason::WallTime);
  CHECK(r.exit_code == -1);
  check_no_leftovers();

  test::ControlOptions o;
  o.timeout_ms = 1000;
  CHECK(test::run_python_unconfined(program, o).timed_out);
}

TEST_CASE("escape: a huge file stops at the file-size limit and the tmpfs size", "[escape]") {
  const std::string program =
      "import os\n"
      "try:\n"
      "    with open('big', 'wb') as f:\n"
      "        for i in range(32):\n"
      "            f.write(b'\\0' * (1 << 20))\n"
      "    print('size', os.path.getsize('big'))\n"
      "except OSError as e:\n"
      "    print('error', e.errno, os.path.getsize('big'))\n";
  const SandboxResult r = test::run_python_sandboxed(program);
  REQUIRE(r.exited_ok());
  CHECK(r.out.data.find("error 27 1048576") != std::string::npos);  // EFBIG at 1 MiB

  // Many files under the size limit fill the 16 MiB tmpfs, not the host's disk.
  const SandboxResult fill = test::run_python_sandboxed(
      "import os\n"
      "n = 0\n"
      "try:\n"
      "    while n < 64:\n"
      "        open('f%d' % n, 'wb').write(b'\\0' * ((1 << 20) - 4096))\n"
      "        n += 1\n"
      "except OSError as e:\n"
      "    print('stopped', n, e.errno)\n");
  REQUIRE(fill.exited_ok());
  CHECK(fill.out.data.find("stopped") != std::string::npos);
  CHECK(fill.out.data.find(" 28") != std::string::npos);  // ENOSPC
  check_no_leftovers();

  HostTempDir work;
  test::ControlOptions o;
  o.cwd = work.path();
  o.limits = {{RLIMIT_FSIZE, 64ull << 20}};
  const test::ControlResult c = test::run_python_unconfined(program, o);
  CHECK(c.out.find("size 33554432") != std::string::npos);
}

TEST_CASE("escape: an output flood is capped and the run killed", "[escape]") {
  const std::string program = "import sys\nsys.stdout.write('x' * (48 << 20))\n";
  const SandboxLimits lim;
  const SandboxResult r = test::run_python_sandboxed(program, lim);
  REQUIRE(r.started);
  CHECK(r.out.truncated);
  CHECK(r.out.data.size() == lim.output);
  CHECK(r.killed == KillReason::OutputLimit);
  check_no_leftovers();

  const test::ControlResult c = test::run_python_unconfined(program);
  CHECK(c.exited(0));
  CHECK(c.out_bytes == (48u << 20));
}

TEST_CASE("escape: TIOCSTI cannot push input into a terminal the sandbox inherits", "[escape]") {
  // A pty standing in for the terminal vsynth might run in, in raw mode so injected bytes are
  // readable at once.
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(slave >= 0);
  termios tio{};
  REQUIRE(::tcgetattr(slave, &tio) == 0);
  ::cfmakeraw(&tio);
  REQUIRE(::tcsetattr(slave, TCSANOW, &tio) == 0);
  const auto drain = [&] {
    std::string got;
    ::fcntl(slave, F_SETFL, O_NONBLOCK);
    char buf[64];
    for (ssize_t n; (n = ::read(slave, buf, sizeof buf)) > 0;)
      got.append(buf, static_cast<std::size_t>(n));
    return got;
  };
  const std::string program =
      "import fcntl, os, termios\n"
      "for fd in (0, 1, 2):\n"
      "    try:\n"
      "        fcntl.ioctl(fd, termios.TIOCSTI, b'Z')\n"
      "        print('injected', fd)\n"
      "    except OSError as e:\n"
      "        print('refused', fd, e.errno)\n"
      "try:\n"
      "    t = os.open('/dev/tty', os.O_RDWR)\n"
      "    fcntl.ioctl(t, termios.TIOCSTI, b'Z')\n"
      "    print('injected tty')\n"
      "except OSError as e:\n"
      "    print('refused tty', e.errno)\n";

  const SandboxResult r = test::run_python_sandboxed(program, {}, slave);
  REQUIRE(r.exited_ok());
  CHECK(r.out.data.find("injected") == std::string::npos);
  CHECK(drain().find('Z') == std::string::npos);
  check_no_leftovers();

  // Control: the same program on its controlling terminal, unconfined, injects input.
  test::ControlOptions o;
  o.ctty = slave;
  const test::ControlResult c = test::run_python_unconfined(program, o);
  CHECK(c.out.find("injected 0") != std::string::npos);
  CHECK(drain().find('Z') != std::string::npos);
  ::close(slave);
  ::close(master);
}

TEST_CASE("escape: setuid, chroot and unshare are refused", "[escape]") {
  const std::string program =
      "import ctypes, os\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "def unshare(flag):\n"
      "    if libc.unshare(flag) != 0:\n"
      "        raise OSError(ctypes.get_errno(), 'unshare')\n"
      "for name, fn in [('setuid', lambda: os.setuid(0)), ('chroot', lambda: os.chroot('/')),\n"
      "                 ('unshare_user', lambda: unshare(0x10000000)),\n"
      "                 ('unshare_mount', lambda: unshare(0x00020000))]:\n"
      "    try:\n"
      "        fn()\n"
      "        print(name, 'ok')\n"
      "    except OSError as e:\n"
      "        print(name, 'refused', e.errno)\n";
  const SandboxResult r = test::run_python_sandboxed(program);
  REQUIRE(r.exited_ok());
  CHECK(r.out.data.find(" ok") == std::string::npos);
  CHECK(std::count(r.out.data.begin(), r.out.data.end(), '\n') == 4);
  check_no_leftovers();

  // Controls: the same calls succeed where the process holds the privilege they need. As
  // root, unconfined; as any user, in a user namespace of its own where it is root (what
  // `unshare -r` gives an unprivileged user: the same mechanism bwrap uses, without the
  // sandbox's uid 65534, dropped capabilities and --disable-userns).
  const auto all_ok = [](const std::string& out) {
    INFO(out);
    CHECK(out.find("setuid ok") != std::string::npos);
    CHECK(out.find("chroot ok") != std::string::npos);
    CHECK(out.find("unshare_user ok") != std::string::npos);
    CHECK(out.find("unshare_mount ok") != std::string::npos);
  };
  if (test::is_root()) all_ok(test::run_python_unconfined(program).out);
  const test::ControlResult ns =
      test::run_unconfined({"/usr/bin/unshare", "--user", "--map-root-user", "/usr/bin/python3",
                            "-I", "-S", "-B", "-c", program});
  INFO(ns.err);
  CHECK(ns.exited(0));
  all_ok(ns.out);
}

TEST_CASE("escape: a host process cannot be killed from the sandbox", "[escape]") {
  const auto spawn_dummy = [] {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
    return pid;
  };
  const pid_t dummy = spawn_dummy();
  REQUIRE(dummy > 0);
  const std::string program =
      "import os, signal\n"
      "try:\n"
      "    os.kill(" +
      std::to_string(dummy) +
      ", signal.SIGKILL)\n"
      "    print('killed')\n"
      "except OSError as e:\n"
      "    print('kill failed', e.errno)\n";
  const SandboxResult r = test::run_python_sandboxed(program);
  REQUIRE(r.exited_ok());
  CHECK(r.out.data.find("kill failed 3") != std::string::npos);  // ESRCH: not in its pid ns
  // kill(-1) reaches only the sandbox's own processes.
  const SandboxResult all = test::run_python_sandboxed(
      "import os, signal\nos.kill(-1, signal.SIGKILL)\nprint('still here')\n");
  REQUIRE(all.started);
  int st = 0;
  CHECK(::waitpid(dummy, &st, WNOHANG) == 0);  // alive

  // Control: unconfined, the same program kills it.
  const test::ControlResult c = test::run_python_unconfined(program);
  CHECK(c.out.find("killed") != std::string::npos);
  REQUIRE(::waitpid(dummy, &st, 0) == dummy);
  CHECK(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGKILL);
  check_no_leftovers();
}

TEST_CASE("escape: host secrets in the environment are not visible", "[escape]") {
  const std::string secret = random_token();
  ::setenv("VSYNTH_ESCAPE_SECRET", secret.c_str(), 1);
  const std::string program =
      "import os\n"
      "print(dict(os.environ))\n"
      "for p in ('/proc/self/environ', '/proc/1/environ'):\n"
      "    try:\n"
      "        print(p, open(p, 'rb').read())\n"
      "    except OSError as e:\n"
      "        print(p, e.errno)\n";
  const SandboxResult r = test::run_python_sandboxed(program);
  REQUIRE(r.exited_ok());
  CHECK(r.out.data.find(secret) == std::string::npos);
  CHECK(r.out.data.find("VSYNTH_ESCAPE_SECRET") == std::string::npos);

  const test::ControlResult c = test::run_python_unconfined(program);
  CHECK(c.out.find(secret) != std::string::npos);
  ::unsetenv("VSYNTH_ESCAPE_SECRET");
}

TEST_CASE("escape: host files holding secrets cannot be read", "[escape]") {
  HostTempDir dir;
  const std::string secret = random_token();
  test::write_file(dir.file("secret.txt"), secret, 0644);
  const std::string program = "for p in ['" + dir.file("secret.txt") + "', '/proc/1/root" +
                              dir.file("secret.txt") + "', '/etc/hostname', '" +
                              std::string(VSYNTH_SOURCE_DIR) +
                              "/README.md']:\n"
                              "    try:\n"
                              "        print(p, open(p).read()[:200])\n"
                              "    except OSError as e:\n"
                              "        print(p, 'unreadable', e.errno)\n";
  const SandboxResult r = test::run_python_sandboxed(program);
  REQUIRE(r.exited_ok());
  CHECK(r.out.data.find(secret) == std::string::npos);
  CHECK(std::count(r.out.data.begin(), r.out.data.end(), '\n') == 4);
  CHECK(r.out.data.find("unreadable 2\n") != std::string::npos);

  const test::ControlResult c = test::run_python_unconfined(program);
  CHECK(c.out.find(secret) != std::string::npos);
}

TEST_CASE("escape: #include of a host file does not reach the compiler", "[escape]") {
  HostTempDir dir;
  const std::string secret = random_token();
  test::write_file(dir.file("secret.h"), secret + "\n", 0644);
  const std::string candidate =
      "#include \"" + dir.file("secret.h") + "\"\nint f(void) { return 0; }\n";

  const Checker checker(CheckerConfig{});
  REQUIRE_FALSE(checker.cc().empty());
  Program p;
  p.pieces = {candidate};
  const CheckVerdict v = checker.compile(p, "c", checker.limits());
  CHECK(v.status == Status::Fail);
  CHECK(v.message.find("No such file") != std::string::npos);
  CHECK(v.message.find(secret) == std::string::npos);
  REQUIRE(v.run);
  CHECK(v.run->err.data.find(secret) == std::string::npos);
  // Nor do the host's system files outside /usr.
  p.pieces = {"#include \"/etc/passwd\"\n"};
  CHECK(checker.compile(p, "c", checker.limits()).status == Status::Fail);
  check_no_leftovers();

  // Control: unconfined, the compiler reads the file and prints the secret in its error.
  HostTempDir work;
  test::write_file(work.file("candidate.c"), candidate);
  const test::ControlResult c =
      test::run_unconfined({checker.cc(), "-fsyntax-only", work.file("candidate.c")});
  CHECK_FALSE(c.exited(0));
  CHECK(c.err.find(secret) != std::string::npos);
}
