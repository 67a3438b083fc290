#include "stages/ast/reclaim.h"

#include <sched.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace vsynth::stages::ast {

namespace {

class Reclaimer {
 public:
  Reclaimer() : thread_([this] { loop(); }) {}
  ~Reclaimer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  void push(std::shared_ptr<const void> file) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(file));
      ++pushed_;
    }
    wake_.notify_all();
  }

  void drain() {
    std::unique_lock lock(mu_);
    const uint64_t target = pushed_;
    done_cv_.wait(lock, [&] { return dropped_ >= target; });
  }

 private:
  void loop() {
    // SCHED_BATCH: a wake-up (a request retiring a file) does not preempt the thread running
    // on this core, typically the request itself; the frees wait for the next scheduling
    // slice and then take a fair share (a nice value would starve them on a busy machine).
    // Best effort: where the policy cannot be set, the thread runs as before.
    sched_param param{};
    sched_setscheduler(0, SCHED_BATCH, &param);  // 0: this thread (Linux)
    std::unique_lock lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      while (!queue_.empty()) {
        std::shared_ptr<const void> file = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        file.reset();  // the tree is released here, outside the lock
        lock.lock();
        ++dropped_;
        done_cv_.notify_all();
      }
      if (stop_) return;
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, done_cv_;
  std::deque<std::shared_ptr<const void>> queue_;
  uint64_t pushed_ = 0, dropped_ = 0;
  bool stop_ = false;
  std::thread thread_;  // last: started after the state it uses
};

Reclaimer& reclaimer() {
  static Reclaimer r;
  return r;
}

}  // namespace

void retire(std::shared_ptr<const void> file) {
  if (file) reclaimer().push(std::move(file));
}

void drain_retired() {
  reclaimer().drain();
}

}  // namespace vsynth::stages::ast
