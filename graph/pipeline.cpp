#include "graph/pipeline.h"

#include <fmt/format.h>
#include <oneapi/tbb/flow_graph.h>

#include <condition_variable>
#include <stdexcept>
#include <thread>

namespace vsynth::graph {

namespace flow = tbb::flow;

namespace {

uint32_t thread_number() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t id = next.fetch_add(1);
  return id;
}

void bump_max(std::atomic<int64_t>& m, int64_t v) {
  int64_t cur = m.load(std::memory_order_relaxed);
  while (v > cur && !m.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
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
      throw std::runtime_error(fmt::format("{}: building resource `{}` ({}) failed: {}", spec_.file,
                                           r.name, r.kind->contract.kind, e.what()));
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
      throw std::runtime_error(fmt::format("{}: building stage `{}` ({}) failed: {}", spec_.file,
                                           s.name, c.kind, e.what()));
    }
    metrics_.push_back(std::make_unique<StageMetrics>(c.ports.size()));
  }
}

Pipeline::~Pipeline() {
  stages_.clear();  // stages may hold resources: they go first
  resources_.clear_in_reverse(resource_order_);
}

// One run's flow graph and bookkeeping.
struct PipelineImpl {
  using FNode = flow::function_node<ItemPtr, flow::continue_msg, flow::queueing>;
  using ANode = flow::async_node<ItemPtr, ItemPtr, flow::queueing>;
  using Clock = std::chrono::steady_clock;

  PipelineImpl(Pipeline& pipeline, Sink& out, RunControl& ctl, const RunOptions& o)
      : p(pipeline), sink(out), control(ctl), opts(o), spec(pipeline.spec_) {
    for (const auto& s : spec.stages) stage_names.push_back(s.name);
    if (!opts.trace_path.empty()) trace = std::make_unique<TraceWriter>(opts.trace_path);
    build();
    watch_block_edges();
  }

  Pipeline& p;
  Sink& sink;
  RunControl& control;
  const RunOptions& opts;
  const ValidatedPipeline& spec;
  std::vector<std::string> stage_names;
  std::unique_ptr<TraceWriter> trace;

  flow::graph g;
  std::vector<std::unique_ptr<FNode>> sync_nodes;
  std::vector<std::unique_ptr<ANode>> async_nodes;
  std::vector<std::unique_ptr<FNode>> routers;
  std::unique_ptr<flow::sequencer_node<ItemPtr>> sequencer;
  std::unique_ptr<FNode> sink_node;
  std::vector<std::shared_ptr<const Completion::Fn>> completions;

  // Admission gate: items inside the graph, bounded by max_in_flight.
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  int64_t inside = 0;

  RunResult result;  // written by the (serial) sink node, and the feeder before/after
  std::atomic<uint64_t> admitted{0};
  std::mutex fatal_mu;
  Clock::time_point t0 = Clock::now();

  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  }

  void set_fatal(std::string why) {
    {
      std::lock_guard lock(fatal_mu);
      if (result.fatal.empty()) result.fatal = std::move(why);
    }
    control.cancel();
    gate_cv.notify_all();
  }

  void build() {
    const std::size_t n = spec.stages.size();
    sync_nodes.resize(n);
    async_nodes.resize(n);
    routers.resize(n);
    completions.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& s = spec.stages[i];
      const std::size_t conc = s.concurrency.limit == 0 ? static_cast<std::size_t>(flow::unlimited)
                                                        : s.concurrency.limit;
      if (s.kind->contract.execution == Execution::Sync) {
        auto* stage = static_cast<SyncStage*>(p.stages_[i].get());
        sync_nodes[i] = std::make_unique<FNode>(g, conc, [this, i, stage](const ItemPtr& item) {
          run_sync(i, *stage, item);
          return flow::continue_msg();
        });
      } else {
        auto* stage = static_cast<AsyncStage*>(p.stages_[i].get());
        async_nodes[i] = std::make_unique<ANode>(
            g, conc, [this, i, stage](const ItemPtr& item, ANode::gateway_type& gw) {
              start_async(i, *stage, item, gw);
            });
        routers[i] = std::make_unique<FNode>(g, flow::unlimited, [this, i](const ItemPtr& item) {
          route(i, item, item->pending_port_);
          return flow::continue_msg();
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
      write(item);
      return flow::continue_msg();
    });
    if (spec.ordered) {
      sequencer = std::make_unique<flow::sequencer_node<ItemPtr>>(
          g, [](const ItemPtr& item) -> std::size_t { return item->seq(); });
      flow::make_edge(*sequencer, *sink_node);
    }
  }

  // --- per item ---

  void enter(std::size_t stage, const ItemPtr& item, const ResolvedEdge* edge) {
    StageMetrics& m = *p.metrics_[stage];
    if (edge && edge->policy == QueuePolicy::Reject &&
        m.queued.load(std::memory_order_relaxed) >= edge->capacity) {
      fail(item, stage_names[stage], "",
           fmt::format("rejected: the queue in front of stage `{}` is full ({} items, policy "
                       "reject)",
                       stage_names[stage], edge->capacity),
           "rejected");
      return;
    }
    bump_max(m.max_queued, m.queued.fetch_add(1, std::memory_order_relaxed) + 1);
    if (sync_nodes[stage]) {
      sync_nodes[stage]->try_put(item);
    } else {
      async_nodes[stage]->try_put(item);
    }
  }

  void begin(std::size_t stage) {
    StageMetrics& m = *p.metrics_[stage];
    m.queued.fetch_sub(1, std::memory_order_relaxed);
    m.in_flight.fetch_add(1, std::memory_order_relaxed);
  }

  void end(std::size_t stage, Item& item, int64_t start) {
    const int64_t stop = now_ns();
    StageMetrics& m = *p.metrics_[stage];
    m.latency.record(stop - start);
    m.processed.fetch_add(1, std::memory_order_relaxed);
    m.in_flight.fetch_sub(1, std::memory_order_relaxed);
    if (trace) {
      item.trace_.push_back(
          {static_cast<uint32_t>(stage), start, stop, thread_number(), item.attempt_});
    }
  }

  void stage_error(std::size_t stage, const ItemPtr& item, const std::string& what) {
    p.metrics_[stage]->errors.fetch_add(1, std::memory_order_relaxed);
    const auto msg = fmt::format("stage `{}` ({}) failed: {}", stage_names[stage],
                                 spec.stages[stage].kind->contract.kind, what);
    if (spec.fail_fast) set_fatal(fmt::format("item `{}`: {} (fail_fast is on)", item->id(), msg));
    fail(item, stage_names[stage], "", msg, "error");
  }

  void run_sync(std::size_t stage, SyncStage& s, const ItemPtr& item) {
    begin(stage);
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
    if (!error.empty()) {
      stage_error(stage, item, error);
      return;
    }
    route(stage, item, port);
  }

  void start_async(std::size_t stage, AsyncStage& s, const ItemPtr& item, ANode::gateway_type& gw) {
    begin(stage);
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
    const std::size_t n_ports = spec.stages[stage].port_edges.size();
    if (error.empty() && !port) error = "completed without a port";
    if (error.empty() && *port >= n_ports) {
      error = fmt::format("completed with port {} but declares only {} ports", *port, n_ports);
    }
    if (!error.empty()) {
      stage_error(stage, item, error);
    } else {
      item->pending_port_ = *port;
      gw.try_put(item);
    }
    gw.release_wait();
  }

  void route(std::size_t stage, const ItemPtr& item, Port port) {
    StageMetrics& m = *p.metrics_[stage];
    m.per_port[port].fetch_add(1, std::memory_order_relaxed);
    const ResolvedEdge& e = spec.edges[spec.stages[stage].port_edges[port]];
    const PortSpec& ps = spec.stages[stage].kind->contract.ports[port];
    if (e.to == kOut) {
      finish(item, stage_names[stage], ps.name, !ps.failure);
      return;
    }
    if (e.back_edge) {
      if (item->attempt_ >= e.max_attempts || control.cancelled()) {
        fail(item, stage_names[stage], ps.name,
             control.cancelled()
                 ? std::string("cancelled before the next attempt")
                 : fmt::format("exhausted: {} attempts used (max_attempts of {}.{} -> {})",
                               item->attempt_, stage_names[stage], ps.name, stage_names[e.to]),
             "exhausted");
        return;
      }
      ++item->attempt_;
    }
    enter(static_cast<std::size_t>(e.to), item, &e);
  }

  void finish(const ItemPtr& item, const std::string& stage, const std::string& port, bool passed) {
    Outcome& o = item->outcome_;
    o.passed = passed;
    o.stage = stage;
    o.port = port;
    if (o.status.empty()) o.status = stage + "." + port;
    deliver(item);
  }

  void fail(const ItemPtr& item, const std::string& stage, const std::string& port,
            std::string error, const char* status) {
    Outcome& o = item->outcome_;
    o.passed = false;
    o.stage = stage;
    o.port = port;
    o.error = std::move(error);
    o.status = status;
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
    if (o.status == "exhausted") ++result.exhausted;
    if (opts.on_progress) {
      RunProgress pr = result;
      pr.admitted = admitted.load(std::memory_order_relaxed);
      pr.elapsed_s = static_cast<double>(now_ns()) * 1e-9;
      opts.on_progress(pr);
    }
    {
      std::lock_guard lock(gate_mu);
      --inside;
    }
    gate_cv.notify_one();
  }

  // For each `block` edge: the stages whose items can still reach it (its source and
  // everything upstream of it). The edge counts as full when those items plus its queue reach
  // its capacity, so admitting one more item can never push the queue past it (give or take
  // an item moving between stages at that instant).
  std::vector<std::pair<const ResolvedEdge*, std::vector<int>>> block_watch;

  void watch_block_edges() {
    const int n = static_cast<int>(spec.stages.size());
    for (const auto& e : spec.edges) {
      if (e.to == kOut || e.back_edge || e.policy != QueuePolicy::Block) continue;
      std::vector<bool> up(n, false);
      std::vector<int> todo{e.from};
      up[e.from] = true;
      while (!todo.empty()) {
        const int v = todo.back();
        todo.pop_back();
        for (const auto& f : spec.edges) {
          if (f.to == v && !f.back_edge && !up[f.from]) {
            up[f.from] = true;
            todo.push_back(f.from);
          }
        }
      }
      std::vector<int> stages;
      for (int i = 0; i < n; ++i) {
        if (up[i]) stages.push_back(i);
      }
      block_watch.emplace_back(&e, std::move(stages));
    }
  }

  bool pressure() const {
    for (const auto& [e, upstream] : block_watch) {
      int64_t held = p.metrics_[e->to]->queued.load(std::memory_order_relaxed);
      for (int u : upstream) {
        held += p.metrics_[u]->queued.load(std::memory_order_relaxed) +
                p.metrics_[u]->in_flight.load(std::memory_order_relaxed);
      }
      if (held >= e->capacity) return true;
    }
    return false;
  }

  void feed(Source& source) {
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
      {
        std::unique_lock lock(gate_mu);
        // Poll while blocked so a full `block` queue and Ctrl-C are both noticed promptly.
        while (!control.cancelled() && (inside >= spec.max_in_flight || pressure())) {
          gate_cv.wait_for(lock, std::chrono::milliseconds(2));
        }
        if (control.cancelled()) break;
        ++inside;
      }
      auto item = std::make_shared<Item>(std::move(*task), seq++);
      admitted.fetch_add(1, std::memory_order_relaxed);
      enter(static_cast<std::size_t>(spec.entry), item, nullptr);
    }
    if (result.total >= result.skipped) result.total -= result.skipped;
  }
};

RunResult Pipeline::run(Source& source, Sink& sink, RunControl& control,
                        const RunOptions& options) {
  for (auto& m : metrics_) {
    m->processed = 0;
    m->errors = 0;
    m->max_queued = 0;
    for (auto& c : m->per_port) c = 0;
    m->latency.reset();
  }
  PipelineImpl impl(*this, sink, control, options);
  impl.feed(source);
  impl.g.wait_for_all();
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
    s.processed = m.processed.load();
    s.errors = m.errors.load();
    s.queued = m.queued.load();
    s.in_flight = m.in_flight.load();
    s.max_queued = m.max_queued.load();
    s.p50_ms = m.latency.percentile(0.50) * 1e-6;
    s.p95_ms = m.latency.percentile(0.95) * 1e-6;
    s.p99_ms = m.latency.percentile(0.99) * 1e-6;
    s.mean_ms = m.latency.mean_ns() * 1e-6;
    for (std::size_t j = 0; j < c.ports.size(); ++j)
      s.ports.emplace_back(c.ports[j].name, m.per_port[j].load());
    out.push_back(std::move(s));
  }
  return out;
}

int64_t Pipeline::in_flight() const {
  int64_t n = 0;
  for (const auto& m : metrics_) n += m->queued.load() + m->in_flight.load();
  return n;
}

}  // namespace vsynth::graph
