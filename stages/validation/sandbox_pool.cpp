#include "stages/validation/sandbox_pool.h"

#include "stages/validation/error.h"

namespace vsynth::stages::validation {

using graph::P::integer;
using graph::P::string;
using graph::P::strings;

SandboxPool::SandboxPool(SandboxPoolConfig config) : checker_(std::move(config.checker)) {
  if (config.probe) checker_.sandbox().probe();
  const int n = std::max(1, config.workers);
  threads_.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
}

SandboxPool::~SandboxPool() {
  {
    std::lock_guard l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  // Queued jobs are destroyed here, outside the lock: their Completions fail their items.
  std::deque<std::function<void()>> left;
  {
    std::lock_guard l(mu_);
    left.swap(jobs_);
  }
}

void SandboxPool::submit(std::function<void()> job) {
  {
    std::lock_guard l(mu_);
    if (stop_) throw ValidationError("sandbox pool: submit after shutdown");
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

std::size_t SandboxPool::queued() const {
  std::lock_guard l(mu_);
  return jobs_.size();
}

void SandboxPool::loop() {
  std::unique_lock l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    l.unlock();
    try {
      job();  // jobs complete their item themselves, exceptions included
    } catch (...) {
      // A job that throws anyway loses only itself (its Completion, dropped, fails the item);
      // the worker lives on.
    }
    job = nullptr;
    l.lock();
  }
}

SandboxPoolConfig SandboxPool::config_from(const graph::Params& p) {
  SandboxPoolConfig c;
  c.workers = static_cast<int>(p.integer("workers"));
  SandboxLimits& l = c.checker.limits;
  l.cpu_ms = p.integer("cpu_ms");
  l.wall_ms = p.integer("wall_ms");
  l.address_space = static_cast<uint64_t>(p.integer("memory_mb")) * kMiB;
  l.processes = static_cast<uint64_t>(p.integer("processes"));
  l.file_size = static_cast<uint64_t>(p.integer("file_size_kb")) * kKiB;
  l.open_files = static_cast<uint64_t>(p.integer("open_files"));
  l.output = static_cast<uint64_t>(p.integer("output_kb")) * kKiB;
  l.tmp_size = static_cast<uint64_t>(p.integer("tmp_mb")) * kMiB;
  c.checker.python = p.string("python");
  c.checker.cc = p.string("cc");
  c.checker.sandbox.bwrap = p.string("bwrap");
  c.checker.sandbox.ro_binds = p.strings("ro_binds");
  c.checker.sandbox.uid_base = static_cast<uint32_t>(p.integer("uid_base"));
  return c;
}

graph::ResourceContract sandbox_contract() {
  const SandboxLimits d;
  graph::ResourceContract c;
  c.kind = "sandbox.bwrap";
  c.interface = "sandbox";
  c.summary =
      "bubblewrap sandbox for generated code (all namespaces, no network, read-only /usr, "
      "rlimits, wall-clock kill) and the worker pool that runs validation checks";
  c.params = {
      integer("workers", 2, 1, 64, "concurrent sandbox runs (worker threads of this pool)"),
      integer("cpu_ms", d.cpu_ms, 1000, 600000,
              "CPU time per process (RLIMIT_CPU, whole seconds, rounded up)"),
      integer("wall_ms", d.wall_ms, 100, 600000,
              "wall-clock limit of one run; then the whole process tree is killed"),
      integer("memory_mb", static_cast<int64_t>(d.address_space / kMiB), 32, 65536,
              "address space per process (RLIMIT_AS), MiB"),
      integer("processes", static_cast<int64_t>(d.processes), 4, 4096,
              "processes of one run, bwrap's two included (RLIMIT_NPROC)"),
      integer("file_size_kb", static_cast<int64_t>(d.file_size / kKiB), 1, 1 << 20,
              "largest file a process may write (RLIMIT_FSIZE), KiB"),
      integer("open_files", static_cast<int64_t>(d.open_files), 16, 65536,
              "open files per process (RLIMIT_NOFILE)"),
      integer("output_kb", static_cast<int64_t>(d.output / kKiB), 1, 1 << 20,
              "stdout / stderr kept per run, KiB each (the rest is counted and dropped)"),
      integer("tmp_mb", static_cast<int64_t>(d.tmp_size / kMiB), 1, 4096,
              "size of the private tmpfs at /tmp that holds the work dir, MiB"),
      string("python", std::string("/usr/bin/python3"),
             "Python interpreter (must resolve under /usr or a ro_binds path)"),
      string("cc", std::string("/usr/bin/cc"), "C compiler (must resolve under /usr or ro_binds)"),
      string("bwrap", std::string("/usr/bin/bwrap"), "bubblewrap binary"),
      strings("ro_binds", std::vector<std::string>{},
              "extra host paths the sandbox sees read-only (e.g. an interpreter's prefix)"),
      integer("uid_base", 0, 0, 4'000'000'000,
              "as root: outside uid of concurrent run k is uid_base + k; 0 picks a range from "
              "the process id"),
  };
  return c;
}

std::shared_ptr<graph::Resource> make_sandbox_pool(const graph::ResourceContext& ctx) {
  return std::make_shared<SandboxPool>(SandboxPool::config_from(ctx.params));
}

}  // namespace vsynth::stages::validation
