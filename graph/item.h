// Item: one job as it travels the graph. Edges move ItemPtrs (shared pointers), never text.
//
// An item holds the immutable task it came from, an arena owning every byte produced
// downstream, typed facets added by stages (looked up by the facet type's kName), the feedback
// that back edges carry into the next attempt, the attempt counter, its outcome and a trace.
// A stage touches an item only while it holds it: at most one stage at a time, so no locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/arena.h"
#include "graph/observer.h"

namespace vsynth::graph {

// A typed piece of state a stage adds to an item. Each facet type declares
//   static constexpr std::string_view kName = "context";
// which is the name contracts use in `requires` / `provides`.
class Facet {
 public:
  virtual ~Facet() = default;
  // What the results file shows of this facet (may be null to omit it).
  virtual nlohmann::json to_json() const = 0;
};

// The immutable input of a job: one record of the input file.
struct Task {
  std::string id;       // unique within a run ("id" or "task_id" of the record)
  nlohmann::json data;  // the whole record
  // Non-empty: the source refused this task (over a size limit, say) and says why. The runner
  // writes it as failed (status `error`, exit `source`, this text as its error) without
  // running any stage, so the other tasks run and --resume sees it done.
  std::string refused = {};
  // Someone waiting on this task (vsynth serve's request): stage events, streamed text,
  // cancellation (graph/observer.h). Null in batch runs; never part of the record.
  std::shared_ptr<Observer> observer = {};
  // Stages this task skips: each lets the item through its default port without running.
  // Built with graph::bypass_closure (graph/bypass.h), so that no stage left to run needs a
  // facet only a skipped one provides; names no stage has never match. The record lists them
  // as `skipped_stages`.
  std::vector<std::string> bypass = {};
};

// What a stage said when it sent the item back over a back edge (a failing test, a
// counterexample, a compiler message); the next attempt's prompt carries it.
struct Feedback {
  std::string stage;
  std::string port;
  std::string message;
  int attempt = 0;
};

// One stage's processing of one item, for --trace (times in ns since the run's start).
struct Span {
  uint32_t stage = 0;  // index into the pipeline's stage list
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t thread = 0;
  int attempt = 0;
};

// How an item left the graph.
struct Outcome {
  bool passed = false;      // reached `out` through a port not marked as a failure port
  std::string status;       // e.g. "tests_passed"; defaults to "<stage>.<port>" when unset
  std::string stage;        // last stage that handled it
  std::string port;         // the port it left through (empty for graph-level failures)
  std::string error;        // exception text, rejection or exhaustion reason
  bool exhausted = false;   // a back edge had no attempts left (status: the last stage's)
  bool unfinished = false;  // cancelled before its next attempt: never written
};

class Item {
 public:
  Item(Task task, uint64_t seq) : task_(std::move(task)), seq_(seq) {}
  Item(const Item&) = delete;
  Item& operator=(const Item&) = delete;

  const Task& task() const { return task_; }
  const std::string& id() const { return task_.id; }
  // Admission order within a run, 0-based and contiguous (ordered output keys on it).
  uint64_t seq() const { return seq_; }
  Arena& arena() { return arena_; }

  // --- facets ---
  template <class F>
  F* find() {
    auto it = facets_.find(F::kName);
    // dynamic_cast: two capabilities that chose the same facet name must not be read as each
    // other's type; a mismatch reads as "absent".
    return it == facets_.end() ? nullptr : dynamic_cast<F*>(it->second.get());
  }
  template <class F>
  const F* find() const {
    auto it = facets_.find(F::kName);
    return it == facets_.end() ? nullptr : dynamic_cast<const F*>(it->second.get());
  }
  // The facet, or an exception naming it when a stage's contract promised it but it is absent.
  template <class F>
  F& get() {
    if (F* f = find<F>()) return *f;
    throw_missing_facet(F::kName);
  }
  // Adds (or replaces) a facet and returns it.
  template <class F, class... Args>
  F& emplace(Args&&... args) {
    auto f = std::make_shared<F>(std::forward<Args>(args)...);
    F& ref = *f;
    facets_[std::string(F::kName)] = std::move(f);
    return ref;
  }
  bool has_facet(std::string_view name) const { return facets_.find(name) != facets_.end(); }
  const std::map<std::string, std::shared_ptr<Facet>, std::less<>>& facets() const {
    return facets_;
  }

  // --- attempts and feedback ---
  // 1-based: the first pass through the graph is attempt 1; each back edge taken adds one.
  int attempt() const { return attempt_; }
  const std::vector<Feedback>& feedback() const { return feedback_; }
  // Called by a stage before it returns a port that is wired to a back edge.
  void add_feedback(std::string stage, std::string port, std::string message) {
    feedback_.push_back({std::move(stage), std::move(port), std::move(message), attempt_});
  }

  // --- outcome ---
  // A stage may name the item's final status ("verified", "tests_passed"...).
  void set_status(std::string status) { outcome_.status = std::move(status); }
  const Outcome& outcome() const { return outcome_; }
  bool failed() const { return !outcome_.error.empty(); }

  const std::vector<Span>& trace() const { return trace_; }

  // --- stopping early ---
  // True once nobody needs this item's result any more: its waiter gave up (Task::observer)
  // or the run is stopping (RunControl::cancel: SIGINT, SIGTERM). A stage whose work can take
  // seconds checks it between steps and throws graph::Cancelled (graph/stage.h); the runner
  // then leaves the item unfinished when the run stops (not written: --resume runs it again)
  // and writes it as `cancelled` when its waiter left.
  bool stop_requested() const {
    return (task_.observer && task_.observer->cancelled()) ||
           (run_stop_ && run_stop_->load(std::memory_order_relaxed));
  }
  // The same as one flag, for loops that poll a plain flag (kernels::GenerateOptions::cancel,
  // a sandbox run): the observer's when the task has one (a served run is never stopped
  // while it has waiters), else the run's; null outside a run.
  const std::atomic<bool>* stop_flag() const {
    return task_.observer ? task_.observer->cancel_flag() : run_stop_;
  }

  // The results-file record: id, status, passed, attempts, facets, feedback, error, and
  // `history`: for each earlier attempt, where it left the graph (`status`: the status a stage
  // gave it, else stage.port) and those of its facets the final record no longer shows as they
  // were (a retry's candidates and verdicts replace the first's; unchanged facets appear once).
  nlohmann::json to_record() const;

 private:
  friend struct PipelineImpl;  // routing state below is the graph's, not the stages'

  [[noreturn]] static void throw_missing_facet(std::string_view name);

  const Task task_;
  const uint64_t seq_;
  Arena arena_;
  std::map<std::string, std::shared_ptr<Facet>, std::less<>> facets_;
  std::vector<Feedback> feedback_;
  // Earlier attempts, snapshotted when a back edge sends the item round again:
  // {"attempt", "status", "facets": {name: json}}.
  std::vector<nlohmann::json> history_;
  int attempt_ = 1;
  Outcome outcome_;
  std::vector<Span> trace_;
  const std::atomic<bool>* run_stop_ = nullptr;  // the run's RunControl flag, set on admission
  uint32_t pending_port_ = 0;                    // port an async stage completed with, until routed
  int64_t async_start_ = 0;  // when the current async stage took the item (ns into the run)
};

using ItemPtr = std::shared_ptr<Item>;

}  // namespace vsynth::graph
