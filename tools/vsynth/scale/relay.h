// While a scaled-out job runs: each rank's progress travels to rank 0 (a few numbers every
// 250 ms), where one progress line is drawn for the whole job. When the job is told to stop
// (mpirun sends SIGTERM to every rank when one dies, then SIGKILL about two seconds later),
// rank 0 says at once, from what it worked out at startup and the parts on disk, which tasks
// each rank had not finished and which rank went silent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "graph/pipeline.h"
#include "tools/vsynth/progress.h"
#include "tools/vsynth/scale/world.h"

namespace vsynth::cli {

// What rank 0 needs to say what is unfinished: per rank its tasks and its part.
struct JobLedger {
  std::vector<std::vector<std::string>> tasks;     // [rank] -> task ids it owns, input order
  std::vector<std::string> parts;                  // [rank] -> its results file
  std::set<std::string, std::less<>> done_before;  // finished by an earlier run of the job
};

class ProgressRelay {
 public:
  // `reporter` draws the job's line at rank 0 (elsewhere unused); `totals` are the ranks' task
  // counts at the start (each rank's messages update its own).
  ProgressRelay(const World& world, ProgressReporter& reporter, const std::vector<uint64_t>& totals,
                JobLedger ledger);
  ~ProgressRelay();
  ProgressRelay(const ProgressRelay&) = delete;
  ProgressRelay& operator=(const ProgressRelay&) = delete;

  void update(const graph::RunProgress& p);  // this rank's, from the run's writing thread
  // This rank's run is over. At rank 0, returns once every rank has said so.
  void finish(const graph::RunProgress& final_progress);

  // The stop message (rank 0): per rank the tasks not in its part yet; `silent` names the
  // ranks not heard from lately.
  static std::string stop_report(const JobLedger& ledger, const std::vector<int>& silent);

 private:
  void root_loop();
  void rank_loop();
  std::vector<int> silent_ranks() const;

  const World& world_;
  ProgressReporter& reporter_;
  JobLedger ledger_;
  std::mutex mu_;
  std::condition_variable cv_;
  graph::RunProgress local_;
  bool local_done_ = false;
  std::vector<graph::RunProgress> ranks_;  // rank 0's view
  std::vector<std::chrono::steady_clock::time_point> heard_;
  std::vector<bool> done_;
  std::thread thread_;
};

}  // namespace vsynth::cli
