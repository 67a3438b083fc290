// Observer: what someone waiting on one task (a server's request) sees of it while it runs,
// and how they call it off. Generic, not HTTP: the runner reports stage begin/end, a stage
// that produces text as it goes (generate.llm) forwards it, and a stage that loops checks
// cancelled() (or hands cancel_flag() to the engine) so that work stops early when nobody
// waits any more.
//
// Carried by the Task (a shared pointer, never serialized); reachable from the item as
// item.task().observer. Callbacks come from graph threads and stage workers, one stage at a
// time per item, so an observer sees its own task's events in order; it must be thread-safe
// against the waiter that reads what it collected.
#pragma once

#include <atomic>
#include <cstddef>
#include <string_view>

namespace vsynth::graph {

enum class StageEvent { Begin, End };

class Observer {
 public:
  virtual ~Observer() = default;
  // The runner: the item entered / left stage `stage` (its name in the pipeline).
  virtual void on_stage(std::string_view /*stage*/, StageEvent /*event*/) {}
  // A generating stage: text ready to show (candidate 0 only), in order.
  virtual void on_text(std::string_view /*text*/) {}
  // A generating stage: the last `bytes` of the text shown are void (a hook rolled back).
  virtual void on_retract(std::size_t /*bytes*/) {}

  // The waiter gave up (a client disconnected, a deadline passed). Async-signal-safe.
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // For loops that take a plain flag (kernels::GenerateOptions::cancel).
  const std::atomic<bool>* cancel_flag() const { return &cancelled_; }

 private:
  std::atomic<bool> cancelled_{false};
};

}  // namespace vsynth::graph
