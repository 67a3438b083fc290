// Continuous batching: a scheduler thread that owns a model's forward passes and runs the
// evaluations of many sequences as batched steps (Model::forward_batch).
//
//   auto sched = std::make_shared<Scheduler>(model, SchedulerOptions{.window_ms = 5});
//   std::unique_ptr<Sequence> seq = sched->new_sequence();   // used like model->new_sequence()
//   logits = seq->prefill(prompt);                           // blocks until its step ran
//   Generation g = generate(*seq, tok, logits, options);    // the generator loop, unchanged
//
// Sequences it hands out are ScheduledSequence proxies: prefill / prefill_all / decode queue a
// row and wait for the step that evaluates it; everything else (position, rollback, fork, ...)
// goes straight to the engine's sequence. Speculative verification (prefill_all) is a row like
// any other.
//
// One step: the thread waits for submissions up to `window_ms` after the oldest one, or after
// the previous step's end for requests that queued behind it (or until as many rows are queued
// as the batch target and every sequence the previous step served has queued its next row or
// is gone, or max_rows are queued; the timed wait wakes early by the recent wake-up lateness,
// WakeSlack, so that a full window ends on time on a loaded machine), then takes rows in this
// order: requests that waited longer than the window first, then new ones; within each, decode
// and verify rows before prefills; up to max_rows rows and max_batch_tokens tokens. A prefill
// longer than prefill_chunk is evaluated one chunk per step (cut on KV block boundaries), so
// decodes keep flowing while it runs. The batch target is the sequences the previous step
// served plus the new requests expected while one step runs and the next gathers: the arrival
// rate of new requests (submissions from sequences that step did not serve) over the last 100
// of them, at most one per time since the newest, x (step time + window).
//
// Determinism: forward_batch gives each row the logits that row gets alone, and chunked
// prefills equal one prefill, so results depend on the requests only, never on which other
// requests shared a step, the window or the timing.
//
// Lifetime: sequences keep the scheduler's state alive, not its thread. A sequence destroyed
// with a request queued removes it (waiting if its step is running). Destroying the Scheduler
// fails requests still queued (EngineError "scheduler stopped") and joins the thread; sequences
// that outlive it evaluate directly on the engine, with the same results.
#pragma once

#include <algorithm>
#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <vector>

#include "kernels/engine.h"

namespace vsynth::kernels {

struct SchedulerOptions {
  // How long the oldest queued request may wait for others to join its step (ms); 0: none.
  double window_ms = 5.0;
  // Caps per step: rows (sequences) and tokens (all rows together; a lone longer row still
  // runs, alone).
  int32_t max_rows = 16;
  int32_t max_batch_tokens = 512;
  // Tokens of a prefill evaluated per step; a positive multiple of 32 (the KV block size).
  int32_t prefill_chunk = 256;
  // suggested_max_draft() turns speculation off at this many rows per step (recent mean).
  int32_t draft_off_rows = 4;
};

// Counters since the scheduler started.
struct SchedulerStats {
  int64_t submissions = 0;
  int64_t steps = 0;
  int64_t rows = 0;    // rows over all steps (a chunked prefill counts once per chunk)
  int64_t tokens = 0;  // tokens evaluated
  int64_t cancelled = 0;
  double mean_rows = 0.0;    // rows per step, exponential moving average
  int32_t batch_target = 1;  // rows the gather waits for (served + expected new requests)
  int64_t full_windows = 0;  // gathers that ran to the window's end (rows still expected)
  double busy_ms = 0.0;      // time spent in steps (the rest: gathering and idle)
  // Per submission (the last 4096): submission to the start of its first step, and the part of
  // that the window added (from the later of submission and the previous step's end).
  std::vector<double> wait_ms;
  std::vector<double> window_wait_ms;
  // Per step (the last 4096): its time (ms) and rows.
  std::vector<double> step_ms;
  std::vector<int32_t> step_rows;
};

namespace detail {
struct SchedulerCore;

// How early the gather's timed wait wakes before the window ends, so that the thread is running
// by then: on a loaded machine a timed wait returns late by the OS's wake-up latency, which would
// otherwise add to every wait that runs the whole window. A decaying maximum of the lateness of
// the last timed waits (a high-percentile estimate, not a mean), at most half the window.
class WakeSlack {
 public:
  void observe(double late_ms) { est_ms_ = std::max(late_ms, kDecay * est_ms_); }
  double slack_ms(double window_ms) const { return std::min(est_ms_, window_ms / 2); }

 private:
  static constexpr double kDecay = 0.9;  // per timed wait
  double est_ms_ = 0.0;
};
}  // namespace detail

class Scheduler {
 public:
  // Starts the thread. Throws EngineError for bad options (naming the option).
  explicit Scheduler(std::shared_ptr<Model> model, const SchedulerOptions& options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Like Model::new_sequence / new_sequence_with_prefix, as ScheduledSequence proxies.
  std::unique_ptr<Sequence> new_sequence();
  std::unique_ptr<Sequence> new_sequence_with_prefix(std::span<const TokenId> prompt,
                                                     PrefixUse* use);

  // Speculation under load: the draft length a generator should use now instead of
  // `requested` (verify rows stop paying once a step already holds several sequences).
  int32_t suggested_max_draft(int32_t requested) const;

  // Holds queued work (submissions still queue) until resume(); for draining and tests.
  void pause();
  void resume();

  SchedulerStats stats() const;
  Model& model() const;
  const SchedulerOptions& options() const;

 private:
  std::shared_ptr<detail::SchedulerCore> core_;
};

// A sequence whose evaluations run as rows of its scheduler's steps.
class ScheduledSequence final : public Sequence {
 public:
  ScheduledSequence(std::shared_ptr<detail::SchedulerCore> core, std::unique_ptr<Sequence> inner);
  ~ScheduledSequence() override;

  // Queues one evaluation (the blocking calls below are submit(...).get()). The tokens are
  // copied. One at a time per sequence: EngineError while one is pending. The logits span
  // follows Sequence's rule (valid until the next evaluation).
  std::future<std::span<const float>> submit(std::span<const TokenId> tokens, RowLogits logits,
                                             bool publish);

  std::span<const float> prefill(std::span<const TokenId> tokens) override;
  std::span<const float> prefill_all(std::span<const TokenId> tokens) override;
  std::span<const float> decode(TokenId token) override;
  int32_t position() const override { return inner_->position(); }
  std::span<const TokenId> tokens() const override { return inner_->tokens(); }
  std::span<const float> last_logits() const override { return inner_->last_logits(); }
  void rollback(int32_t pos) override { inner_->rollback(pos); }
  int32_t min_rollback_position() const override { return inner_->min_rollback_position(); }
  std::unique_ptr<Sequence> fork() const override;
  int64_t kv_bytes() const override { return inner_->kv_bytes(); }
  const Model& model() const override { return inner_->model(); }

 private:
  std::shared_ptr<detail::SchedulerCore> core_;
  std::unique_ptr<Sequence> inner_;
};

}  // namespace vsynth::kernels
