#include "solvers/z3_watchdog.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace vsynth::solvers::detail {

struct Watchdog::State {
  struct Entry {
    Clock::time_point deadline;
    Z3_context ctx;
    Z3_solver solver;
    bool fired = false;
    std::chrono::microseconds retry{500};  // re-interrupt period after the deadline
  };
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, Entry> entries;
  std::set<std::pair<Clock::time_point, uint64_t>> queue;  // pending deadlines, earliest first
  Clock::time_point wake_at = Clock::time_point::max();    // when the thread will next look
  uint64_t next_ticket = 1;
  bool stop = false;
  std::thread thread;

  void run() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      const auto now = Clock::now();
      while (!queue.empty() && queue.begin()->first <= now) {
        const uint64_t t = queue.begin()->second;
        queue.erase(queue.begin());
        Entry& e = entries.at(t);
        e.fired = true;
        // Under our mutex: disarm() cannot return (and the solver cannot be reused or freed)
        // while the interrupt is delivered.
        Z3_solver_interrupt(e.ctx, e.solver);
        // An interrupt only reaches a check that has installed its handler; one that lands
        // while Z3 is still setting up (creating the solver kernel can take milliseconds) is
        // lost. So keep interrupting, backing off, until the caller disarms.
        e.retry = std::min(e.retry * 2, std::chrono::microseconds(50000));
        e.deadline = now + e.retry;
        queue.emplace(e.deadline, t);
      }
      wake_at = queue.empty() ? Clock::time_point::max() : queue.begin()->first;
      if (queue.empty()) {
        cv.wait(lock);
      } else {
        cv.wait_until(lock, wake_at);
      }
    }
  }
};

Watchdog& Watchdog::instance() {
  static Watchdog w;
  return w;
}

Watchdog::Watchdog() : state_(std::make_unique<State>()) {
  state_->thread = std::thread([s = state_.get()] { s->run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_one();
  state_->thread.join();
}

uint64_t Watchdog::arm(Clock::time_point deadline, Z3_context ctx, Z3_solver solver) {
  bool wake = false;
  uint64_t t = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    t = state_->next_ticket++;
    state_->entries.emplace(t, State::Entry{deadline, ctx, solver});
    state_->queue.emplace(deadline, t);
    // Sequential checks with one timeout arm later deadlines than the one the thread already
    // sleeps towards: no wake-up (no syscall) on the common path.
    wake = deadline < state_->wake_at;
    if (wake) state_->wake_at = deadline;
  }
  if (wake) state_->cv.notify_one();
  return t;
}

bool Watchdog::disarm(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->entries.find(ticket);
  if (it == state_->entries.end()) return false;
  const bool fired = it->second.fired;
  state_->queue.erase({it->second.deadline, ticket});
  state_->entries.erase(it);
  return fired;
}

}  // namespace vsynth::solvers::detail
