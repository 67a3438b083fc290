// The scheduler thread (see scheduler.h): a queue of requests, the gather / pick / step / hand
// out loop, the arrival-rate batch target, and the ScheduledSequence proxies that submit to it.
#include "kernels/sched/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace vsynth::kernels {

namespace detail {

using Clock = std::chrono::steady_clock;

namespace {
constexpr int32_t kBlock = 32;         // KV block tokens: chunk cuts fall on its multiples
constexpr size_t kArrivals = 100;      // submissions the arrival rate is measured over
constexpr size_t kWaitHistory = 4096;  // waits kept for stats()
constexpr double kEmaWeight = 0.1;     // step time and rows per step averages

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

// One queued evaluation of one sequence.
struct Request {
  const ScheduledSequence* owner = nullptr;
  Sequence* seq = nullptr;
  std::vector<TokenId> tokens;
  RowLogits logits = RowLogits::Last;
  bool publish = false;
  size_t done = 0;       // tokens evaluated by earlier steps (chunked prefills)
  bool started = false;  // its first step began (the wait is recorded then)
  bool in_step = false;  // the running step holds it
  Clock::time_point arrival;
  std::promise<std::span<const float>> promise;

  // Decode and verify rows go before prefills.
  bool prefill_class() const { return logits != RowLogits::All && tokens.size() - done > 1; }
};

struct SchedulerCore {
  std::shared_ptr<Model> model;
  SchedulerOptions opt;

  mutable std::mutex mu;
  std::condition_variable work_cv;  // the thread waits for work
  std::condition_variable step_cv;  // cancellers wait for the running step
  std::list<std::shared_ptr<Request>> queue;
  bool stop = false, stopped = false, paused = false;
  std::deque<Clock::time_point> arrivals;  // new requests' submission times (target_locked)
  double step_ms = 0.0;                    // EMA of a step's duration
  WakeSlack wake_slack;                    // how early the gather's timed wait wakes
  // When the thread last became free (the previous step's end): the window counts from here
  // for requests that queued behind a running step, so that the sequences that step just
  // served have the window to submit their next row and join.
  Clock::time_point free_since = Clock::now();
  // The sequences whose evaluation the previous step finished: the gather waits (within the
  // window) until each has queued its next row or is gone. Without it two streams fall into
  // lockstep apart: A's step runs while B queues, then B's alone while A samples, and so on,
  // since the arrival-rate target of one submission per step is 1 row.
  std::vector<const ScheduledSequence*> served;
  SchedulerStats stats;
  std::thread thread;

  int32_t target_locked(Clock::time_point now) const;
  bool served_back_locked() const;
  std::vector<std::shared_ptr<Request>> pick_locked(Clock::time_point now);
  void run_step(std::vector<std::shared_ptr<Request>>& picked);
  void loop();
  void cancel(const ScheduledSequence* owner);
  std::future<std::span<const float>> submit(const ScheduledSequence* owner, Sequence* seq,
                                             std::span<const TokenId> tokens, RowLogits logits,
                                             bool publish);
};

// Rows the gather waits for: the sequences the previous step served (they come back with their
// next row) plus the new requests expected before the next step starts: the rate of new
// requests (submissions from sequences that step did not serve) over the last kArrivals of
// them, times the step plus the window. The rate is at most one request per time since the
// newest one, so that a burst (streams starting together) is not taken for a steady rate once
// it is over. Counting the served sequences' own resubmissions as arrivals, as a plain rate
// would, expects more rows than there are streams, and every step then waits out the window.
int32_t SchedulerCore::target_locked(Clock::time_point now) const {
  double expected_new = 0.0;
  if (arrivals.size() >= 2) {
    const double span = ms_between(arrivals.front(), arrivals.back());
    const double quiet = ms_between(arrivals.back(), now);
    double rate = span <= 0.0 ? 1e9 : static_cast<double>(arrivals.size() - 1) / span;  // per ms
    if (quiet > 0.0) rate = std::min(rate, 1.0 / quiet);
    expected_new = rate * (step_ms + opt.window_ms);
  }
  const double rows = static_cast<double>(served.size()) + std::floor(expected_new);
  return static_cast<int32_t>(std::clamp(rows, 1.0, static_cast<double>(opt.max_rows)));
}

// Whether every sequence the previous step finished has queued its next row (or is gone).
bool SchedulerCore::served_back_locked() const {
  for (const ScheduledSequence* o : served) {
    const bool queued =
        std::any_of(queue.begin(), queue.end(), [&](const auto& r) { return r->owner == o; });
    if (!queued) return false;
  }
  return true;
}

// The next step's rows: aged before new, decode/verify before prefill, arrival order within.
std::vector<std::shared_ptr<Request>> SchedulerCore::pick_locked(Clock::time_point now) {
  std::vector<std::shared_ptr<Request>> order(queue.begin(), queue.end());
  const auto rank = [&](const Request& r) {
    const bool aged = ms_between(r.arrival, now) >= opt.window_ms;
    return (aged ? 0 : 2) + (r.prefill_class() ? 1 : 0);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return rank(*a) < rank(*b); });
  std::vector<std::shared_ptr<Request>> picked;
  int64_t tokens = 0;
  for (auto& r : order) {
    if (static_cast<int32_t>(picked.size()) >= opt.max_rows) break;
    const int64_t left = static_cast<int64_t>(r->tokens.size() - r->done);
    const int64_t n = r->prefill_class() ? std::min<int64_t>(left, opt.prefill_chunk) : left;
    if (!picked.empty() && tokens + n > opt.max_batch_tokens) continue;
    tokens += n;
    r->in_step = true;
    if (!r->started) {
      r->started = true;
      stats.wait_ms.push_back(ms_between(r->arrival, now));
      stats.window_wait_ms.push_back(ms_between(std::max(r->arrival, free_since), now));
      if (stats.wait_ms.size() > kWaitHistory) {
        stats.wait_ms.erase(stats.wait_ms.begin());
        stats.window_wait_ms.erase(stats.window_wait_ms.begin());
      }
    }
    picked.push_back(r);
  }
  return picked;
}

// One forward_batch over the picked requests; a failed batch is retried row by row so that an
// error reaches only the request that caused it.
void SchedulerCore::run_step(std::vector<std::shared_ptr<Request>>& picked) {
  std::vector<BatchRow> rows(picked.size());
  for (size_t i = 0; i < picked.size(); ++i) {
    Request& r = *picked[i];
    const int32_t pos = r.seq->position();
    const size_t left = r.tokens.size() - r.done;
    size_t n = left;
    if (r.prefill_class()) {
      // Cut on an absolute block boundary, so the chunks equal one prefill.
      n = std::min<size_t>(left, static_cast<size_t>(opt.prefill_chunk - pos % kBlock));
    }
    rows[i].sequence = r.seq;
    rows[i].tokens = std::span<const TokenId>(r.tokens).subspan(r.done, n);
    rows[i].logits = n == left ? r.logits : RowLogits::None;
    rows[i].publish = r.publish;
  }
  std::vector<std::exception_ptr> errors(picked.size());
  try {
    model->forward_batch(rows);
  } catch (...) {
    if (rows.size() == 1) {
      errors[0] = std::current_exception();
    } else {
      for (size_t i = 0; i < rows.size(); ++i) {
        try {
          model->forward_batch({&rows[i], 1});
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    }
  }

  const std::lock_guard<std::mutex> lock(mu);
  served.clear();
  for (size_t i = 0; i < picked.size(); ++i) {
    Request& r = *picked[i];
    r.in_step = false;
    stats.tokens += static_cast<int64_t>(rows[i].tokens.size());
    const bool finished = errors[i] || r.done + rows[i].tokens.size() == r.tokens.size();
    if (!finished) {
      r.done += rows[i].tokens.size();
      continue;
    }
    if (errors[i]) {
      r.promise.set_exception(errors[i]);
    } else {
      r.promise.set_value(rows[i].result);
      served.push_back(r.owner);
    }
    queue.remove(picked[i]);
  }
  stats.steps += 1;
  stats.rows += static_cast<int64_t>(picked.size());
  stats.mean_rows = stats.steps == 1 ? static_cast<double>(picked.size())
                                     : (1 - kEmaWeight) * stats.mean_rows +
                                           kEmaWeight * static_cast<double>(picked.size());
  step_cv.notify_all();
}

void SchedulerCore::loop() {
  std::unique_lock<std::mutex> lk(mu);
  for (;;) {
    // Phase 1: wait for work, then gather up to the window after the oldest request.
    work_cv.wait(lk, [&] { return stop || (!paused && !queue.empty()); });
    if (stop) break;
    if (opt.window_ms > 0) {
      Clock::time_point oldest = queue.front()->arrival;
      for (const auto& r : queue) oldest = std::min(oldest, r->arrival);
      const auto deadline = std::max(oldest, free_since) +
                            std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double, std::milli>(opt.window_ms));
      const int32_t target = target_locked(Clock::now());
      stats.batch_target = target;
      const auto wake =
          deadline -
          std::chrono::duration_cast<Clock::duration>(
              std::chrono::duration<double, std::milli>(wake_slack.slack_ms(opt.window_ms)));
      const Clock::time_point waited_from = Clock::now();
      const bool ready = work_cv.wait_until(lk, wake, [&] {
        const auto n = static_cast<int32_t>(queue.size());
        return stop || paused || n >= opt.max_rows || (n >= target && served_back_locked());
      });
      if (!ready) {
        // Lateness is only measured against a wake-up still ahead when the wait began (after a
        // pause the window may already be over: no wake-up to be late for).
        if (wake > waited_from) wake_slack.observe(std::max(0.0, ms_between(wake, Clock::now())));
        stats.full_windows += 1;
      }
      if (stop) break;
      if (paused || queue.empty()) continue;
    }
    // Phase 2: pick and run one step, the lock released while it computes.
    const Clock::time_point t0 = Clock::now();
    std::vector<std::shared_ptr<Request>> picked = pick_locked(t0);
    lk.unlock();
    run_step(picked);
    const Clock::time_point t1 = Clock::now();
    const double ms = ms_between(t0, t1);
    lk.lock();
    free_since = t1;
    stats.busy_ms += ms;
    stats.step_ms.push_back(ms);
    stats.step_rows.push_back(static_cast<int32_t>(picked.size()));
    if (stats.step_ms.size() > kWaitHistory) {
      stats.step_ms.erase(stats.step_ms.begin());
      stats.step_rows.erase(stats.step_rows.begin());
    }
    step_ms = stats.steps == 1 ? ms : (1 - kEmaWeight) * step_ms + kEmaWeight * ms;
  }
  // Shutdown: fail what is still queued.
  for (auto& r : queue) {
    r->promise.set_exception(std::make_exception_ptr(
        EngineError("scheduler stopped before this evaluation ran (the Scheduler was destroyed)")));
  }
  queue.clear();
  stopped = true;
  step_cv.notify_all();
}

std::future<std::span<const float>> SchedulerCore::submit(const ScheduledSequence* owner,
                                                          Sequence* seq,
                                                          std::span<const TokenId> tokens,
                                                          RowLogits logits, bool publish) {
  // Checked here, in the caller's thread, as Sequence::prefill checks before evaluating: a bad
  // request never reaches a step (and a chunked prefill never half-runs).
  const int32_t vocab = model->config().vocab_size;
  if (tokens.empty()) throw EngineError("prefill: no tokens to evaluate");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      throw EngineError("token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                        " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
  }
  const int64_t end = int64_t{seq->position()} + static_cast<int64_t>(tokens.size());
  if (end > model->options().context_length) {
    throw EngineError(
        "sequence would reach " + std::to_string(end) + " positions, past the context length " +
        std::to_string(model->options().context_length) + " (ModelOptions::context_length)");
  }
  auto r = std::make_shared<Request>();
  r->owner = owner;
  r->seq = seq;
  r->tokens.assign(tokens.begin(), tokens.end());
  r->logits = logits;
  r->publish = publish;
  std::future<std::span<const float>> f = r->promise.get_future();
  std::unique_lock<std::mutex> lk(mu);
  for (const auto& q : queue) {
    if (q->owner == owner) {
      throw EngineError(
          "scheduled sequence: an evaluation is already pending on it (one at a time per "
          "sequence)");
    }
  }
  if (stopped || stop) {
    // The thread is gone: evaluate here, as the step would have.
    lk.unlock();
    BatchRow row;
    row.sequence = seq;
    row.tokens = r->tokens;
    row.logits = logits;
    row.publish = publish;
    try {
      model->forward_batch({&row, 1});
      r->promise.set_value(row.result);
    } catch (...) {
      r->promise.set_exception(std::current_exception());
    }
    return f;
  }
  r->arrival = Clock::now();
  if (std::find(served.begin(), served.end(), owner) == served.end()) {  // a new request
    arrivals.push_back(r->arrival);
    if (arrivals.size() > kArrivals) arrivals.pop_front();
  }
  stats.submissions += 1;
  queue.push_back(std::move(r));
  work_cv.notify_all();
  return f;
}

void SchedulerCore::cancel(const ScheduledSequence* owner) {
  std::unique_lock<std::mutex> lk(mu);
  // A sequence going away will not queue again: the gather stops waiting for it.
  if (const auto it = std::find(served.begin(), served.end(), owner); it != served.end()) {
    served.erase(it);
    work_cv.notify_all();
  }
  for (;;) {
    auto it =
        std::find_if(queue.begin(), queue.end(), [&](const auto& r) { return r->owner == owner; });
    if (it == queue.end()) return;
    if (!(*it)->in_step) {
      queue.erase(it);  // nobody waits on its future any more
      stats.cancelled += 1;
      return;
    }
    step_cv.wait(lk);  // its step is running on the sequence: let it finish
  }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Scheduler

Scheduler::Scheduler(std::shared_ptr<Model> model, const SchedulerOptions& options)
    : core_(std::make_shared<detail::SchedulerCore>()) {
  if (!model) throw EngineError("Scheduler: no model");
  if (!(options.window_ms >= 0.0) || options.window_ms > 1000.0) {
    throw EngineError("SchedulerOptions::window_ms = " + std::to_string(options.window_ms) +
                      " (valid: 0 .. 1000 ms)");
  }
  if (options.max_rows < 1 || options.max_batch_tokens < 1 || options.draft_off_rows < 1) {
    throw EngineError(
        "SchedulerOptions: max_rows, max_batch_tokens and draft_off_rows must be >= 1");
  }
  if (options.prefill_chunk < detail::kBlock || options.prefill_chunk % detail::kBlock != 0) {
    throw EngineError("SchedulerOptions::prefill_chunk = " + std::to_string(options.prefill_chunk) +
                      " (valid: a positive multiple of 32, the KV block size)");
  }
  core_->model = std::move(model);
  core_->opt = options;
  core_->thread = std::thread([c = core_.get()] { c->loop(); });
}

Scheduler::~Scheduler() {
  {
    const std::lock_guard<std::mutex> lock(core_->mu);
    core_->stop = true;
  }
  core_->work_cv.notify_all();
  core_->thread.join();
}

std::unique_ptr<Sequence> Scheduler::new_sequence() {
  return std::make_unique<ScheduledSequence>(core_, core_->model->new_sequence());
}

std::unique_ptr<Sequence> Scheduler::new_sequence_with_prefix(std::span<const TokenId> prompt,
                                                              PrefixUse* use) {
  return std::make_unique<ScheduledSequence>(core_,
                                             core_->model->new_sequence_with_prefix(prompt, use));
}

int32_t Scheduler::suggested_max_draft(int32_t requested) const {
  const std::lock_guard<std::mutex> lock(core_->mu);
  const double rows = core_->stats.mean_rows;
  if (rows >= core_->opt.draft_off_rows) return 0;
  if (rows >= 2.0) return std::max(1, requested / 2);
  return requested;
}

void Scheduler::pause() {
  const std::lock_guard<std::mutex> lock(core_->mu);
  core_->paused = true;
  core_->work_cv.notify_all();
}

void Scheduler::resume() {
  const std::lock_guard<std::mutex> lock(core_->mu);
  core_->paused = false;
  core_->work_cv.notify_all();
}

SchedulerStats Scheduler::stats() const {
  const std::lock_guard<std::mutex> lock(core_->mu);
  return core_->stats;
}

Model& Scheduler::model() const {
  return *core_->model;
}

const SchedulerOptions& Scheduler::options() const {
  return core_->opt;
}

// ---------------------------------------------------------------------------------------------
// ScheduledSequence

ScheduledSequence::ScheduledSequence(std::shared_ptr<detail::SchedulerCore> core,
                                     std::unique_ptr<Sequence> inner)
    : core_(std::move(core)), inner_(std::move(inner)) {}

ScheduledSequence::~ScheduledSequence() {
  core_->cancel(this);
}

std::future<std::span<const float>> ScheduledSequence::submit(std::span<const TokenId> tokens,
                                                              RowLogits logits, bool publish) {
  return core_->submit(this, inner_.get(), tokens, logits, publish);
}

std::span<const float> ScheduledSequence::prefill(std::span<const TokenId> tokens) {
  return submit(tokens, RowLogits::Last, true).get();
}

std::span<const float> ScheduledSequence::prefill_all(std::span<const TokenId> tokens) {
  return submit(tokens, RowLogits::All, false).get();
}

std::span<const float> ScheduledSequence::decode(TokenId token) {
  return submit({&token, 1}, RowLogits::Last, false).get();
}

std::unique_ptr<Sequence> ScheduledSequence::fork() const {
  return std::make_unique<ScheduledSequence>(core_, inner_->fork());
}

}  // namespace vsynth::kernels
