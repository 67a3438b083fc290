// sandbox.bwrap (interface `sandbox`): the sandbox configuration and a pool of worker threads
// that run checks, shared by every stage that names it.
//
//   resources:
//     box: { use: sandbox.bwrap, with: { workers: 2, wall_ms: 10000, memory_mb: 512 } }
//   stages:
//     validate: { use: validate.async, with: { sandbox: box, checks: [syntax, compile, tests] } }
//
// A stage without a `sandbox` gets a private pool with the defaults. The pool's threads are
// its own (never the graph's): a job waits for subprocesses there. Jobs run in submission
// order; at destruction the pool stops taking jobs, finishes those running and drops the
// queued ones (each job owns a Completion, which fails its item when dropped).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "graph/contract.h"
#include "graph/params.h"
#include "graph/resource.h"
#include "stages/validation/checks.h"

namespace vsynth::stages::validation {

struct SandboxPoolConfig {
  CheckerConfig checker;
  int workers = 2;    // concurrent sandbox runs (each a worker thread)
  bool probe = true;  // run `true` in the sandbox at construction, failing early and clearly
};

class SandboxPool : public graph::Resource {
 public:
  // Throws ValidationError when the sandbox cannot work here (probe) or a tool is outside it.
  explicit SandboxPool(SandboxPoolConfig config);
  ~SandboxPool() override;
  SandboxPool(const SandboxPool&) = delete;
  SandboxPool& operator=(const SandboxPool&) = delete;

  // Queues `job` for a worker; returns at once. Never runs it on the caller's thread.
  void submit(std::function<void()> job);

  const Checker& checker() const { return checker_; }
  int workers() const { return static_cast<int>(threads_.size()); }
  std::size_t queued() const;

  // The pool config from validated `sandbox.bwrap` parameters.
  static SandboxPoolConfig config_from(const graph::Params& params);

 private:
  void loop();

  Checker checker_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

graph::ResourceContract sandbox_contract();
std::shared_ptr<graph::Resource> make_sandbox_pool(const graph::ResourceContext& ctx);

}  // namespace vsynth::stages::validation
