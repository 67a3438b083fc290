// Per-check timeouts without Z3's own timer (internal to solvers/).
//
// Z3 4.8.12 starts a timer thread for every check that has a "timeout" parameter: about +17 us
// at the median and milliseconds at p99 on this machine, and setting the parameter per check
// costs milliseconds (it resets the solver). Instead one process-wide thread holds the
// deadlines of the checks in flight and interrupts a solver whose deadline passes
// (Z3_solver_interrupt only cancels a check in progress; it leaves nothing behind for the next,
// so the watchdog repeats it, backing off from 1 ms to 50 ms, until the check is disarmed).
#pragma once

#include <z3.h>

#include <chrono>
#include <cstdint>
#include <memory>

namespace vsynth::solvers::detail {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;

  static Watchdog& instance();

  // Registers a check on (ctx, solver) that must end by `deadline`; returns its ticket.
  uint64_t arm(Clock::time_point deadline, Z3_context ctx, Z3_solver solver);
  // Unregisters the check; true when its deadline passed and the solver was interrupted.
  // After disarm() returns, the watchdog never touches that solver for this ticket.
  bool disarm(uint64_t ticket);

  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  Watchdog();
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vsynth::solvers::detail
