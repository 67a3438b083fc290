#include "tools/vsynth/scale/relay.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "tools/vsynth/run_steps.h"
#include "tools/vsynth/scale/job_summary.h"
#include "tools/vsynth/scale/parts.h"

namespace vsynth::cli {

namespace {

constexpr int kTagProgress = 1;
constexpr int kTagDone = 2;
constexpr auto kSendEvery = std::chrono::milliseconds(250);
constexpr auto kPollEvery = std::chrono::milliseconds(20);
// A rank silent this long while the others report every 250 ms has stopped.
constexpr auto kSilentAfter = std::chrono::milliseconds(1000);
constexpr std::size_t kIdsShown = 10;

}  // namespace

ProgressRelay::ProgressRelay(const World& world, ProgressReporter& reporter,
                             const std::vector<uint64_t>& totals, JobLedger ledger)
    : world_(world),
      reporter_(reporter),
      ledger_(std::move(ledger)),
      ranks_(static_cast<std::size_t>(world.size())),
      heard_(static_cast<std::size_t>(world.size()), std::chrono::steady_clock::now()),
      done_(static_cast<std::size_t>(world.size()), false) {
  for (std::size_t r = 0; r < ranks_.size() && r < totals.size(); ++r) ranks_[r].total = totals[r];
  local_.total = ranks_[static_cast<std::size_t>(world.rank())].total;
  thread_ = std::thread([this] { world_.rank() == 0 ? root_loop() : rank_loop(); });
}

ProgressRelay::~ProgressRelay() {
  if (thread_.joinable()) finish(local_);
}

void ProgressRelay::update(const graph::RunProgress& p) {
  std::lock_guard lock(mu_);
  local_ = p;
}

void ProgressRelay::finish(const graph::RunProgress& final_progress) {
  {
    std::lock_guard lock(mu_);
    local_ = final_progress;
    local_done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressRelay::rank_loop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, kSendEvery, [&] { return local_done_; })) {
    const auto values = progress_values(local_);
    lock.unlock();
    world_.send_to_root(kTagProgress, values);
    lock.lock();
  }
  const auto values = progress_values(local_);
  lock.unlock();
  world_.send_to_root(kTagDone, values);
}

void ProgressRelay::root_loop() {
  bool reported = false;
  for (;;) {
    // Phase 1: what the other ranks said since the last look.
    while (auto m = world_.poll()) {
      const auto from = static_cast<std::size_t>(m->from);
      if (from >= ranks_.size()) continue;
      ranks_[from] = progress_from(m->values);
      heard_[from] = std::chrono::steady_clock::now();
      if (m->tag == kTagDone) done_[from] = true;
    }
    // Phase 2: a stop signal: say what is unfinished now, before SIGKILL follows.
    if (!reported && interrupts_received() > 0) {
      std::cerr << stop_report(ledger_, silent_ranks()) << std::flush;
      reported = true;
    }
    // Phase 3: the job's line; done when every rank is.
    bool local_done = false;
    {
      std::lock_guard lock(mu_);
      ranks_[0] = local_;
      local_done = local_done_;
    }
    heard_[0] = std::chrono::steady_clock::now();
    reporter_.update(job_progress(ranks_));
    if (local_done && std::all_of(done_.begin() + 1, done_.end(), [](bool d) { return d; })) {
      return;
    }
    std::this_thread::sleep_for(kPollEvery);
  }
}

std::vector<int> ProgressRelay::silent_ranks() const {
  std::vector<int> out;
  const auto now = std::chrono::steady_clock::now();
  for (std::size_t r = 1; r < heard_.size(); ++r) {
    if (!done_[r] && now - heard_[r] > kSilentAfter) out.push_back(static_cast<int>(r));
  }
  return out;
}

std::string ProgressRelay::stop_report(const JobLedger& ledger, const std::vector<int>& silent) {
  std::string out =
      "vsynth: the job is stopping on a signal (mpirun sends SIGTERM to every rank when one "
      "dies or the job is cancelled)\n";
  for (int r : silent) {
    out += fmt::format(
        "  rank {} stopped reporting progress over a second ago: it is the one "
        "that failed\n",
        r);
  }
  uint64_t left = 0;
  for (std::size_t r = 0; r < ledger.tasks.size(); ++r) {
    std::set<std::string, std::less<>> written;
    try {
      if (r < ledger.parts.size()) written = record_ids(ledger.parts[r]);
    } catch (const std::exception& e) {
      out += fmt::format("  rank {}: its part cannot be read ({})\n", r, e.what());
    }
    std::vector<std::string_view> unfinished;
    for (const std::string& id : ledger.tasks[r]) {
      if (!written.count(id) && !ledger.done_before.count(id)) unfinished.push_back(id);
    }
    left += unfinished.size();
    std::string ids;
    for (std::size_t i = 0; i < std::min(unfinished.size(), kIdsShown); ++i) {
      ids += fmt::format("{}{}", i ? ", " : ": ", unfinished[i]);
    }
    if (unfinished.size() > kIdsShown)
      ids += fmt::format(", ... {} more", unfinished.size() - kIdsShown);
    out += fmt::format("  rank {}: {} of {} task(s) unfinished{}\n", r, unfinished.size(),
                       ledger.tasks[r].size(), ids);
  }
  out += fmt::format(
      "  {} task(s) unfinished in all; rerun the same command with --resume to run only those\n",
      left);
  return out;
}

}  // namespace vsynth::cli
