#include "graph/pipeline.h"

#include "graph/clock.h"

#include <fmt/format.h>
#include <oneapi/tbb/flow_graph.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace vsynth::graph {

namespace flow = tbb::flow;

namespace {

// "file:line:col" of a declaration, the place construction errors point at.
std::string where(const std::string& file, Mark m) {
  return m.line > 0 ? fmt::format("{}:{}:{}", file, m.line, m.col) : file;
}

// The pipeline file as an absolute path (the trace names it; a report run elsewhere finds it),
// or as given when it cannot be made absolute.
std::string absolute_path(const std::string& file) {
  std::error_code ec;
  const std::filesystem::path p =
      file.empty() ? std::filesystem::path() : std::filesystem::absolute(file, ec);
  return ec ? file : p.string();
}

uint32_t thread_number() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t id = next.fetch_add(1);
  return id;
}

}  // namespace

Pipeline::Pipeline(ValidatedPipeline spec, const Registry& registry) : spec_(std::move(spec)) {
  (void)registry;
  for (const auto& r : spec_.resources) {
    try {
      ResourceContext ctx{r.name, r.kind->contract, r.params, resources_};
      resources_.add(r.name, r.kind->contract.kind, r.kind->factory(ctx));
      resource_order_.push_back(r.name);
    } catch (const std::exception& e) {
      resources_.clear_in_reverse(resource_order_);
      throw std::runtime_error(fmt::format("{}: building resource `{}` ({}) failed: {}",
                                           where(spec_.file, r.mark), r.name, r.kind->contract.kind,
                                           e.what()));
    }
  }
  for (const auto& s : spec_.stages) {
    const Contract& c = s.kind->contract;
    try {
      StageContext ctx{s.name, c, s.params, resources_};
      std::unique_ptr<StageBase> stage = s.kind->factory(ctx);
      const bool ok = c.execution == Execution::Async
                          ? dynamic_cast<AsyncStage*>(stage.get()) != nullptr
                          : dynamic_cast<SyncStage*>(stage.get()) != nullptr;
      if (!ok) throw std::logic_error("the factory built a stage of the wrong execution type");
      stages_.push_back(std::move(stage));
    } catch (const std::exception& e) {
      stages_.clear();
      resources_.clear_in_reverse(resource_order_);
      // The framework says where (file:line:col, stage, kind); the stage's message says what.
      throw std::runtime_error(fmt::format("{}: building stage `{}` ({}) failed: {}",
                                           where(spec_.file, s.mark), s.name, c.kind, e.what()));
    }
    if (c.ports.size() > StageMetrics::kMaxPorts) {
      throw std::runtime_error(
          fmt::format("stage `{}` ({}) declares {} ports; at most {} are supported", s.name, c.kind,
                      c.ports.size(), StageMetrics::kMaxPorts));
    }
    metrics_.push_back(std::make_unique<StageMetrics>());
  }
}

Pipeline::~Pipeline() {
  stages_.clear();  // stages may hold resources: they go first
  resources_.clear_in_reverse(resource_order_);
}

// One run's flow graph and bookkeeping.
struct PipelineImpl {
  // Stage nodes pass the item on along their native edge (the default port's, see
  // native_edge) and return null when they routed it by hand: TBB then runs the successor
  // in the same thread without spawning a task, like a hand-written chain.
  using SNode = flow::function_node<ItemPtr, ItemPtr, flow::queueing>;
  using FNode = flow::function_node<ItemPtr, flow::continue_msg, flow::queueing>;
  using ANode = flow::async_node<ItemPtr, ItemPtr, flow::queueing>;
  using Clock = std::chrono::steady_clock;

  PipelineImpl(Pipeline& pipeline, Sink& out, RunControl& ctl, const RunOptions& o)
      : p(pipeline), sink(out), control(ctl), opts(o), spec(pipeline.spec_) {
    for (const auto& s : spec.stages) stage_names.push_back(s.name);
    if (!opts.trace_path.empty()) {
      trace = std::make_unique<TraceWriter>(opts.trace_path, absolute_path(spec.file), spec.name);
    }
    build();
    watch_block_edges();
    // Queues that limit something are counted exactly; the rest in cheap per-thread shards.
    for (auto& m : p.metrics_) m->set_exact_queue(false);
    for (const auto& e : spec.edges) {
      if (e.to != kOut && e.policy == QueuePolicy::Reject) p.metrics_[e.to]->set_exact_queue(true);
    }
    for (const auto& w : block_watch) p.metrics_[w->edge->to]->set_exact_queue(true);
  }

  Pipeline& p;
  Sink& sink;
  RunControl& control;
  const RunOptions& opts;
  const ValidatedPipeline& spec;
  std::vector<std::string> stage_names;
  std::unique_ptr<TraceWriter> trace;

  flow::graph g;
  std::vector<std::unique_ptr<SNode>> sync_nodes;
  std::vector<std::unique_ptr<ANode>> async_nodes;
  std::vector<std::unique_ptr<SNode>> routers;
  // Per stage: the edge wired as a flow-graph edge (see wire_natively), if any.
  std::vector<std::optional<std::size_t>> native_edge;
  std::unique_ptr<flow::sequencer_node<ItemPtr>> sequencer;
  std::unique_ptr<FNode> sink_node;
  std::vector<std::shared_ptr<const Completion::Fn>> completions;

  // Admission gate: items inside the graph, bounded by max_in_flight. The feeder sleeps when
  // the graph is full and is woken once it has drained to the low-water mark, not per item:
  // a futex wake per item would cost more than the stages themselves.
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  std::atomic<int64_t> inside{0};
  std::atomic<bool> feeder_waiting{false};
  int64_t low_water = 0;

  RunResult result;  // written by the (serial) sink node, and the feeder before/after
  std::atomic<uint64_t> admitted{0};
  std::mutex fatal_mu;
  int64_t t0 = FastClock::now_ns();

  int64_t now_ns() const { return FastClock::now_ns() - t0; }

  void set_fatal(std::string why) {
    {
      std::lock_guard lock(fatal_mu);
      if (result.fatal.empty()) result.fatal = std::move(why);
    }
    control.cancel();
    gate_cv.notify_all();
  }

  // The default port's edge becomes a flow-graph edge when nothing has to be decided on the
  // way: a forward edge to a stage with a `block` queue, or to `out` when order needs no
  // restoring. Everything else (other ports, back edges, `reject` queues) is routed by hand.
  bool wire_natively(const ResolvedEdge& e) const {
    if (e.port != 0 || e.back_edge) return false;
    if (e.to == kOut) return !spec.ordered;
    return e.policy == QueuePolicy::Block;
  }

  flow::receiver<ItemPtr>& input_of(int stage) {
    if (sync_nodes[stage]) return *sync_nodes[stage];
    return *async_nodes[stage];
  }

  void build() {
    const std::size_t n = spec.stages.size();
    sync_nodes.resize(n);
    async_nodes.resize(n);
    routers.resize(n);
    completions.resize(n);
    native_edge.assign(n, std::nullopt);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& s = spec.stages[i];
      if (!s.port_edges.empty() && wire_natively(spec.edges[s.port_edges[0]])) {
        native_edge[i] = s.port_edges[0];
      }
      const std::size_t conc = s.concurrency.limit == 0 ? static_cast<std::size_t>(flow::unlimited)
                                                        : s.concurrency.limit;
      if (s.kind->contract.execution == Execution::Sync) {
        auto* stage = static_cast<SyncStage*>(p.stages_[i].get());
        sync_nodes[i] = std::make_unique<SNode>(g, conc, [this, i, stage](const ItemPtr& item) {
          return item ? run_sync(i, *stage, item) : ItemPtr();
        });
      } else {
        auto* stage = static_cast<AsyncStage*>(p.stages_[i].get());
        async_nodes[i] = std::make_unique<ANode>(
            g, conc, [this, i, stage](const ItemPtr& item, ANode::gateway_type& gw) {
              if (item) start_async(i, *stage, item, gw);
            });
        routers[i] = std::make_unique<SNode>(g, flow::unlimited, [this, i](const ItemPtr& item) {
          return item && route(i, item, item->pending_port_) ? item : ItemPtr();
        });
        flow::make_edge(*async_nodes[i], *routers[i]);
        ANode::gateway_type* gw = &async_nodes[i]->gateway();
        completions[i] = std::make_shared<const Completion::Fn>(
            [this, i, gw](ItemPtr item, std::optional<Port> port, std::string error) {
              finish_async(i, std::move(item), port, std::move(error), *gw);
            });
      }
    }
    sink_node = std::make_unique<FNode>(g, flow::serial, [this](const ItemPtr& item) {
      if (item) write(item);
      return flow::continue_msg();
    });
    if (spec.ordered) {
      sequencer = std::make_unique<flow::sequencer_node<ItemPtr>>(
          g, [](const ItemPtr& item) -> std::size_t { return item->seq(); });
      flow::make_edge(*sequencer, *sink_node);
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!native_edge[i]) continue;
      const ResolvedEdge& e = spec.edges[*native_edge[i]];
      flow::sender<ItemPtr>& from = sync_nodes[i]
                                        ? static_cast<flow::sender<ItemPtr>&>(*sync_nodes[i])
                                        : static_cast<flow::sender<ItemPtr>&>(*routers[i]);
      if (e.to == kOut) {
        flow::make_edge(from, *sink_node);
      } else {
        flow::make_edge(from, input_of(e.to));
      }
    }
  }

  // --- per item ---

  // Queues the item in front of `stage`, coming from stage `from` (none: admitted): by hand, or
  // (native) by the caller returning it along its flow-graph edge.
  void enter(std::optional<std::size_t> from, std::size_t stage, const ItemPtr& item,
             const ResolvedEdge* edge, bool native = false) {
    StageMetrics& m = *p.metrics_[stage];
    if (edge && edge->policy == QueuePolicy::Reject && m.queued() >= edge->capacity) {
      if (from) left(*from);
      fail(item, stage_names[stage], "",
           fmt::format("rejected: the queue in front of stage `{}` is full ({} items, policy "
                       "reject)",
                       stage_names[stage], edge->capacity),
           "rejected");
      return;
    }
    moved(from, stage);  // before the queue counts it: a watch's count covers its queue
    m.enqueued();
    if (native) return;
    if (sync_nodes[stage]) {
      sync_nodes[stage]->try_put(item);
    } else {
      async_nodes[stage]->try_put(item);
    }
  }

  void begin(std::size_t stage) {
    p.metrics_[stage]->started();
    started(stage);  // after the queue let it go (see moved)
  }

  void end(std::size_t stage, Item& item, int64_t start) {
    const int64_t stop = now_ns();
    p.metrics_[stage]->finished(stop - start);
    if (trace) {
      item.trace_.push_back(
          {static_cast<uint32_t>(stage), start, stop, thread_number(), item.attempt_});
    }
  }

  void stage_error(std::size_t stage, const ItemPtr& item, const std::string& what) {
    if (item->stop_requested()) {
      stopped(stage, item);
      return;
    }
    p.metrics_[stage]->errored();
    left(stage);
    const auto msg = fmt::format("stage `{}` ({}) failed: {}", stage_names[stage],
                                 spec.stages[stage].kind->contract.kind, what);
    if (spec.fail_fast) set_fatal(fmt::format("item `{}`: {} (fail_fast is on)", item->id(), msg));
    fail(item, stage_names[stage], "", msg, "error");
  }

  // The run is stopping (RunControl::cancel): the item is not written, whatever it holds
  // (a stage may have cut its work short), and a resumed run gives it all its attempts.
  // It still passes the sink node (the sequencer needs every seq).
  void leave_unfinished(std::size_t stage, const ItemPtr& item) {
    left(stage);
    item->outcome_.unfinished = true;
    deliver(item);
  }

  // The item was asked to stop while a stage worked on it (Item::stop_requested): no stage
  // error. Unfinished when the run stops; written as `cancelled` when its waiter left.
  void stopped(std::size_t stage, const ItemPtr& item) {
    if (control.cancelled()) {
      leave_unfinished(stage, item);
      return;
    }
    left(stage);
    fail(item, stage_names[stage], "",
         fmt::format("cancelled in stage `{}`: nobody waits for the result", stage_names[stage]),
         "cancelled");
  }

  // The run is stopping, or the item's observer gave up, before this stage started: the
  // stage does not run (a stage already running checks Item::stop_requested itself).
  bool cancelled_at(std::size_t stage, const ItemPtr& item) {
    if (control.cancelled()) {
      end(stage, *item, now_ns());
      leave_unfinished(stage, item);
      return true;
    }
    const Observer* obs = item->task().observer.get();
    if (!obs || !obs->cancelled()) return false;
    end(stage, *item, now_ns());
    left(stage);
    fail(
        item, stage_names[stage], "",
        fmt::format("cancelled before stage `{}`: nobody waits for the result", stage_names[stage]),
        "cancelled");
    return true;
  }

  static void notify(const ItemPtr& item, const std::string& stage, StageEvent e) {
    if (Observer* obs = item->task().observer.get()) obs->on_stage(stage, e);
  }

  // The task skips this stage (Task::bypass, graph/bypass.h): the item leaves through the
  // stage's default port untouched, without a span or a latency sample.
  bool bypasses(std::size_t stage, const Item& item) const {
    const std::vector<std::string>& b = item.task().bypass;
    return !b.empty() && std::find(b.begin(), b.end(), stage_names[stage]) != b.end();
  }

  void pass_by(std::size_t stage) {
    p.metrics_[stage]->bypassed();
    started(stage);  // it left the queue, as begin() would count it
  }

  ItemPtr run_sync(std::size_t stage, SyncStage& s, const ItemPtr& item) {
    if (bypasses(stage, *item)) {
      pass_by(stage);
      return route(stage, item, 0) ? item : nullptr;
    }
    begin(stage);
    if (cancelled_at(stage, item)) return nullptr;
    notify(item, stage_names[stage], StageEvent::Begin);
    const int64_t start = now_ns();
    Port port = 0;
    std::string error;
    try {
      port = s.process(*item);
      if (port >= spec.stages[stage].port_edges.size()) {
        error = fmt::format("returned port {} but declares only {} ports", port,
                            spec.stages[stage].port_edges.size());
      }
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
    end(stage, *item, start);
    notify(item, stage_names[stage], StageEvent::End);
    if (!error.empty()) {
      stage_error(stage, item, error);
      return nullptr;
    }
    return route(stage, item, port) ? item : nullptr;
  }

  void start_async(std::size_t stage, AsyncStage& s, const ItemPtr& item, ANode::gateway_type& gw) {
    if (bypasses(stage, *item)) {
      pass_by(stage);
      item->pending_port_ = 0;
      gw.try_put(item);  // to the router, as a completion would
      return;
    }
    begin(stage);
    if (cancelled_at(stage, item)) return;
    notify(item, stage_names[stage], StageEvent::Begin);
    item->async_start_ = now_ns();
    gw.reserve_wait();  // released by finish_async, whichever thread completes the item
    Completion done(item, completions[stage]);
    try {
      s.submit(item, done);
    } catch (const std::exception& e) {
      fail_completion(done, e.what());
    } catch (...) {
      fail_completion(done, "unknown exception");
    }
  }

  // submit() threw: fail the item unless the stage already completed it.
  static void fail_completion(const Completion& done, const std::string& what) {
    try {
      done.fail(what);
    } catch (const std::logic_error&) {
      // already completed: the item has its result
    }
  }

  void finish_async(std::size_t stage, ItemPtr item, std::optional<Port> port, std::string error,
                    ANode::gateway_type& gw) {
    end(stage, *item, item->async_start_);
    notify(item, stage_names[stage], StageEvent::End);
    const std::size_t n_ports = spec.stages[stage].port_edges.size();
    if (error.empty() && !port) error = "completed without a port";
    if (error.empty() && *port >= n_ports) {
      error = fmt::format("completed with port {} but declares only {} ports", *port, n_ports);
    }
    if (!error.empty()) {
      stage_error(stage, item, error);
    } else {
      item->pending_port_ = *port;
      gw.try_put(item);  // to the router, which routes it on a graph thread
    }
    gw.release_wait();
  }

  // Sends the item on from `stage` through `port`. Returns true when the caller must pass it
  // along its native flow-graph edge; false when it was delivered here.
  bool route(std::size_t stage, const ItemPtr& item, Port port) {
    p.metrics_[stage]->left_through(port);
    if (control.cancelled()) {
      leave_unfinished(stage, item);
      return false;
    }
    const std::size_t edge_index = spec.stages[stage].port_edges[port];
    const ResolvedEdge& e = spec.edges[edge_index];
    const PortSpec& ps = spec.stages[stage].kind->contract.ports[port];
    const bool native = native_edge[stage] == edge_index;
    if (e.to == kOut) {
      left(stage);
      finish(item, stage_names[stage], ps.name, !ps.failure, !native);
      return native;
    }
    if (e.back_edge) {
      if (item->attempt_ >= e.max_attempts) {
        left(stage);
        fail(item, stage_names[stage], ps.name,
             fmt::format("exhausted: {} attempts used (max_attempts of {}.{} -> {})",
                         item->attempt_, stage_names[stage], ps.name, stage_names[e.to]),
             // A status the last stage gave ("failed", "tests_failed") says more than ours.
             item->outcome_.status.empty() ? std::string("exhausted") : item->outcome_.status,
             /*exhausted=*/true);
        return false;
      }
      snapshot_attempt(*item, stage_names[stage], ps.name);
      ++item->attempt_;
    }
    enter(stage, static_cast<std::size_t>(e.to), item, &e, native);
    return native;
  }

  // Before a back edge sends the item round again: what this attempt produced, for the record's
  // `history` (the next attempt's stages replace its facets), and a clean status for the next.
  static void snapshot_attempt(Item& item, const std::string& stage, const std::string& port) {
    nlohmann::json facets = nlohmann::json::object();
    for (const auto& [name, facet] : item.facets_) {
      nlohmann::json j = facet->to_json();
      if (!j.is_null()) facets[name] = std::move(j);
    }
    item.history_.push_back(
        {{"attempt", item.attempt_},
         {"status", item.outcome_.status.empty() ? stage + "." + port : item.outcome_.status},
         {"facets", std::move(facets)}});
    item.outcome_.status.clear();
  }

  void finish(const ItemPtr& item, const std::string& stage, const std::string& port, bool passed,
              bool deliver_now = true) {
    Outcome& o = item->outcome_;
    o.passed = passed;
    o.stage = stage;
    o.port = port;
    if (o.status.empty()) o.status = stage + "." + port;
    if (deliver_now) deliver(item);
  }

  void fail(const ItemPtr& item, const std::string& stage, const std::string& port,
            std::string error, std::string status, bool exhausted = false) {
    Outcome& o = item->outcome_;
    o.passed = false;
    o.exhausted = exhausted;
    o.stage = stage;
    o.port = port;
    o.error = std::move(error);
    o.status = std::move(status);
    deliver(item);
  }

  void deliver(const ItemPtr& item) {
    if (sequencer) {
      sequencer->try_put(item);
    } else {
      sink_node->try_put(item);
    }
  }

  // Serial: the only writer of `result` while the graph runs.
  void write(const ItemPtr& item) {
    if (item->outcome_.unfinished) {
      ++result.unfinished;
      release_slot();
      return;
    }
    try {
      sink.write(*item);
    } catch (const std::exception& e) {
      set_fatal(fmt::format("writing the result of `{}` failed: {}", item->id(), e.what()));
    }
    if (trace) trace->write(*item, stage_names);
    const Outcome& o = item->outcome_;
    ++result.written;
    if (o.passed)
      ++result.passed;
    else
      ++result.failed;
    if (o.status == "error") ++result.errors;
    if (o.status == "rejected") ++result.rejected;
    if (o.exhausted) ++result.exhausted;
    ++result.statuses[o.status];
    if (opts.on_progress) {
      RunProgress pr = result;
      pr.admitted = admitted.load(std::memory_order_relaxed);
      pr.elapsed_s = static_cast<double>(now_ns()) * 1e-9;
      opts.on_progress(pr);
    }
    release_slot();
  }

  // One item fewer inside: wakes the feeder once the graph has drained to the low-water mark.
  void release_slot() {
    const int64_t left = inside.fetch_sub(1, std::memory_order_acq_rel) - 1;
    if (left <= low_water && feeder_waiting.load(std::memory_order_acquire)) {
      std::lock_guard lock(gate_mu);
      gate_cv.notify_one();
    }
  }

  // A `block` edge whose capacity is below max_in_flight is watched: `held` counts, exactly,
  // the items queued in front of its target plus every item queued at or running in a stage
  // upstream of the target (one that reaches it through forward edges). The count changes
  // where an item moves (moved, started, left), so it never misses an item in transit, and
  // along forward edges it only falls: only admission raises it (and a back edge that sends an
  // item round into the region again). Admission waits while it is at the capacity, so the
  // target's queue never exceeds the capacity unless a back edge brings items back into it.
  struct Watch {
    const ResolvedEdge* edge = nullptr;
    std::vector<bool> upstream;  // per stage
    std::atomic<int64_t> held{0};

    bool counts_queued_at(std::size_t s) const { return upstream[s] || edge->to == int(s); }
    bool counts_running_at(std::size_t s) const { return upstream[s]; }
    void add(int64_t d) {
      // release: whoever reads a lower count (the feeder, acquire) also sees the queue counts
      // updated before it (begin: started() then started(stage)).
      if (d != 0) held.fetch_add(d, std::memory_order_acq_rel);
    }
  };
  std::vector<std::unique_ptr<Watch>> block_watch;  // atomics: kept in place

  // An item leaves stage `from` (running; none: admitted) for the queue of `to`.
  void moved(std::optional<std::size_t> from, std::size_t to) {
    for (auto& w : block_watch) {
      w->add(int64_t{w->counts_queued_at(to)} - int64_t{from && w->counts_running_at(*from)});
    }
  }
  // Stage `s` took an item from its queue.
  void started(std::size_t s) {
    for (auto& w : block_watch) {
      w->add(int64_t{w->counts_running_at(s)} - int64_t{w->counts_queued_at(s)});
    }
  }
  // An item running in stage `s` leaves the graph (finished, failed, rejected, exhausted).
  void left(std::size_t s) {
    for (auto& w : block_watch) w->add(-int64_t{w->counts_running_at(s)});
  }

  void watch_block_edges() {
    const int n = static_cast<int>(spec.stages.size());
    for (const auto& e : spec.edges) {
      if (e.to == kOut || e.back_edge || e.policy != QueuePolicy::Block) continue;
      // Items held upstream of an edge are items inside the graph: an edge at least as large
      // as max_in_flight can never fill, so it needs no watching.
      if (e.capacity >= spec.max_in_flight) continue;
      auto w = std::make_unique<Watch>();
      w->edge = &e;
      w->upstream.assign(n, false);
      std::vector<int> todo{e.to};
      while (!todo.empty()) {
        const int v = todo.back();
        todo.pop_back();
        for (const auto& f : spec.edges) {
          if (f.to == v && !f.back_edge && !w->upstream[f.from]) {
            w->upstream[f.from] = true;
            todo.push_back(f.from);
          }
        }
      }
      block_watch.push_back(std::move(w));
    }
  }

  bool pressure() const {
    for (const auto& w : block_watch) {
      if (w->held.load(std::memory_order_acquire) >= w->edge->capacity) return true;
    }
    return false;
  }

  // Waits until one more item may enter; false when the run was cancelled meanwhile.
  bool admit() {
    while (!control.cancelled()) {
      if (inside.load(std::memory_order_acquire) < spec.max_in_flight && !pressure()) {
        inside.fetch_add(1, std::memory_order_acq_rel);
        return true;
      }
      std::unique_lock lock(gate_mu);
      feeder_waiting.store(true, std::memory_order_release);
      // Wake on the low-water mark; the timeout also polls `block` queues and Ctrl-C.
      gate_cv.wait_for(lock, std::chrono::milliseconds(2), [&] {
        return control.cancelled() || inside.load(std::memory_order_acquire) <= low_water;
      });
      feeder_waiting.store(false, std::memory_order_release);
    }
    return false;
  }

  void feed(Source& source) {
    low_water = spec.max_in_flight / 2;  // wake the feeder when half drained: few wake-ups
    if (auto total = source.total()) result.total = *total;
    uint64_t seq = 0;
    while (!control.cancelled()) {
      std::optional<Task> task;
      try {
        task = source.next();
      } catch (const std::exception& e) {
        set_fatal(fmt::format("reading the input failed: {}", e.what()));
        break;
      }
      if (!task) break;
      if (sink.contains(task->id)) {
        ++result.skipped;
        continue;
      }
      if (!admit()) break;
      std::string refused = std::move(task->refused);
      auto item = std::make_shared<Item>(std::move(*task), seq++);
      item->run_stop_ = control.flag();
      admitted.fetch_add(1, std::memory_order_relaxed);
      if (!refused.empty()) {
        fail(item, "source", "", std::move(refused), "error");
        continue;
      }
      enter(std::nullopt, static_cast<std::size_t>(spec.entry), item, nullptr);
    }
    if (result.total >= result.skipped) result.total -= result.skipped;
  }
};

RunResult Pipeline::run(Source& source, Sink& sink, RunControl& control,
                        const RunOptions& options) {
  for (auto& m : metrics_) m->reset();
  PipelineImpl impl(*this, sink, control, options);
  // The feeder blocks at the admission gate, so it gets a thread of its own; this thread waits
  // in the graph and so executes its tasks too (with oneTBB limited to one thread it is the
  // only one that does). reserve_wait keeps wait_for_all from returning before feeding ends.
  impl.g.reserve_wait();
  std::thread feeder([&] {
    impl.feed(source);
    impl.g.release_wait();
  });
  impl.g.wait_for_all();
  feeder.join();
  try {
    sink.flush();
  } catch (const std::exception& e) {
    impl.set_fatal(fmt::format("flushing the output failed: {}", e.what()));
  }
  if (impl.trace) impl.trace->close();
  RunResult r = impl.result;
  r.admitted = impl.admitted.load();
  r.elapsed_s = static_cast<double>(impl.now_ns()) * 1e-9;
  r.cancelled = control.cancelled();
  return r;
}

std::vector<StageSnapshot> Pipeline::metrics() const {
  std::vector<StageSnapshot> out;
  for (std::size_t i = 0; i < spec_.stages.size(); ++i) {
    const StageMetrics& m = *metrics_[i];
    const Contract& c = spec_.stages[i].kind->contract;
    StageSnapshot s;
    s.name = spec_.stages[i].name;
    s.kind = c.kind;
    s.processed = m.processed();
    s.errors = m.errors();
    s.bypassed = m.bypassed_count();
    s.queued = m.queued();
    s.in_flight = m.in_flight();
    s.max_queued = m.max_queued();
    s.p50_ms = m.percentile_ns(0.50) * 1e-6;
    s.p95_ms = m.percentile_ns(0.95) * 1e-6;
    s.p99_ms = m.percentile_ns(0.99) * 1e-6;
    s.mean_ms = m.mean_ns() * 1e-6;
    for (std::size_t j = 0; j < c.ports.size(); ++j) {
      s.ports.emplace_back(c.ports[j].name, m.port_count(static_cast<uint32_t>(j)));
    }
    out.push_back(std::move(s));
  }
  return out;
}

int64_t Pipeline::in_flight() const {
  int64_t n = 0;
  for (const auto& m : metrics_) n += m->queued() + m->in_flight();
  return n;
}

}  // namespace vsynth::graph
