#include "tests/graph/test_kinds.h"

#include <chrono>
#include <set>
#include <stdexcept>

#include "stages/register_all.h"

namespace vsynth::test {

namespace {

using namespace graph;

struct MarkFacet : Facet {
  static constexpr std::string_view kName = "a";
  int attempt = 0;
  nlohmann::json to_json() const override { return "marked at attempt " + std::to_string(attempt); }
};

// The same on every attempt (the results' history leaves unchanged facets out).
struct SeenFacet : Facet {
  static constexpr std::string_view kName = "seen";
  nlohmann::json to_json() const override { return "seen"; }
};

// test.produce: adds facet `a` (naming the attempt).
class Produce : public SyncStage {
 public:
  Port process(Item& item) override {
    item.emplace<MarkFacet>().attempt = item.attempt();
    return 0;
  }
};

// test.consume: requires facet `a` (reads it).
class Consume : public SyncStage {
 public:
  Port process(Item& item) override {
    item.get<MarkFacet>();
    return 0;
  }
};

// test.sleep: sleeps `ms` per item (a slow stage for backpressure tests).
class Sleep : public SyncStage {
 public:
  explicit Sleep(const StageContext& c) : ms_(c.params.integer("ms")) {}
  Port process(Item&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    return 0;
  }

 private:
  int64_t ms_;
};

// test.spin: works on each item until it is asked to stop (Item::stop_requested), then throws
// graph::Cancelled, as a stage deep in long work does; after `max_ms` it gives up and fails the
// item (a test whose stop never came).
class Spin : public SyncStage {
 public:
  explicit Spin(const StageContext& c) : max_ms_(c.params.integer("max_ms")) {}
  Port process(Item& item) override {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(max_ms_);
    while (std::chrono::steady_clock::now() < until) {
      if (item.stop_requested()) throw Cancelled("test.spin: stopped");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    throw std::runtime_error("test.spin: never asked to stop");
  }

 private:
  int64_t max_ms_;
};

// The gate test.gate waits at: closed until a test opens it.
struct GateState {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
};
GateState& gate_state() {
  static GateState g;
  return g;
}

// test.gate: holds each item until the gate opens, so a test decides when items move on, not
// the machine's speed. After 60 s it fails the item instead (a test that never opens it).
class Gate : public SyncStage {
 public:
  Port process(Item&) override {
    GateState& g = gate_state();
    std::unique_lock l(g.mu);
    if (!g.cv.wait_for(l, std::chrono::seconds(60), [&] { return g.open; })) {
      throw std::runtime_error("the test never opened the gate");
    }
    return 0;
  }
};

// test.fail_default: sends every item out through its first port.
class FirstPort : public SyncStage {
 public:
  Port process(Item&) override { return 0; }
};

// test.throw: throws for ids ending in an odd digit.
class Throw : public SyncStage {
 public:
  Port process(Item& item) override {
    const char last = item.id().back();
    if ((last - '0') % 2 == 1) throw std::runtime_error("odd item " + item.id());
    return 0;
  }
};

// test.check: `pass` once the item's attempt reaches `pass_on` (0: never), else `retry` with
// feedback naming the attempt.
class Check : public SyncStage {
 public:
  explicit Check(const StageContext& c)
      : pass_on_(c.params.integer("pass_on")),
        pass_(c.port("pass")),
        retry_(c.port("retry")),
        name_(c.name) {}
  Port process(Item& item) override {
    item.emplace<SeenFacet>();
    if (pass_on_ > 0 && item.attempt() >= pass_on_) {
      item.set_status("checked");
      return pass_;
    }
    item.add_feedback(name_, "retry", "attempt " + std::to_string(item.attempt()) + " failed");
    return retry_;
  }

 private:
  int64_t pass_on_;
  Port pass_, retry_;
  std::string name_;
};

// test.async_hold: async; holds every item on its own thread until `release_after` items have
// been submitted (or 5 s passed), then completes them all. If graph threads blocked inside
// submit(), fewer than `release_after` could ever arrive and items would time out as errors.
class AsyncHold : public AsyncStage {
 public:
  explicit AsyncHold(const StageContext& c)
      : release_after_(static_cast<std::size_t>(c.params.integer("release_after"))) {
    worker_ = std::thread([this] { loop(); });
  }
  ~AsyncHold() override {
    {
      std::lock_guard l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  void submit(ItemPtr item, Completion done) override {
    std::lock_guard l(mu_);
    held_.push_back(std::move(done));
    ++submitted_;
    (void)item;
    cv_.notify_all();
  }

 private:
  void loop() {
    std::unique_lock l(mu_);
    while (!stop_) {
      const bool timed_out = !cv_.wait_for(l, std::chrono::seconds(5), [&] {
        return stop_ || (submitted_ >= release_after_ && !held_.empty()) || released_;
      });
      if (stop_) break;
      if (timed_out && !held_.empty()) {
        for (auto& d : held_) d.fail("held for 5 s: the graph never delivered enough items");
        held_.clear();
        continue;
      }
      if (submitted_ >= release_after_) released_ = true;
      std::deque<Completion> batch;
      batch.swap(held_);
      l.unlock();
      for (auto& d : batch) d(0);
      l.lock();
    }
  }
  std::size_t release_after_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Completion> held_;
  std::size_t submitted_ = 0;
  bool released_ = false, stop_ = false;
  std::thread worker_;
};

// test.async_drop: async; drops the Completion without calling it.
class AsyncDrop : public AsyncStage {
 public:
  void submit(ItemPtr, Completion) override {}
};

// test.async_jitter: async; completes each item after a pseudo-random delay on a detached-free
// worker pool of its own (reorders items).
class AsyncJitter : public AsyncStage {
 public:
  AsyncJitter() {
    for (int i = 0; i < 4; ++i) workers_.emplace_back([this] { loop(); });
  }
  ~AsyncJitter() override {
    {
      std::lock_guard l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  void submit(ItemPtr item, Completion done) override {
    std::lock_guard l(mu_);
    const auto h = std::hash<std::string>{}(item->id());
    q_.push_back({std::move(done), static_cast<int>(h % 3)});
    cv_.notify_one();
  }

 private:
  void loop() {
    std::unique_lock l(mu_);
    while (true) {
      cv_.wait(l, [&] { return stop_ || !q_.empty(); });
      if (q_.empty()) return;
      auto job = std::move(q_.front());
      q_.pop_front();
      l.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(job.second));
      job.first(0);
      l.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Completion, int>> q_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

struct TestModel : Resource {
  std::string path;
};
struct TestHook : Resource {};

// test.use_model: names a model resource and a list of hooks; checks it can reach them.
class UseModel : public SyncStage {
 public:
  explicit UseModel(const StageContext& c) {
    c.resources.get<TestModel>(c.params.string("model"));
    for (const auto& h : c.params.strings("hooks")) c.resources.get<TestHook>(h);
  }
  Port process(Item&) override { return 0; }
};

Contract base(std::string kind, std::vector<PortSpec> ports = {{"ok", "done", false}}) {
  Contract c;
  c.kind = std::move(kind);
  c.summary = "test kind";
  c.ports = std::move(ports);
  return c;
}

}  // namespace

void register_test_kinds(Registry& r) {
  {
    Contract c = base("test.produce");
    c.provides_facets = {"a"};
    r.add_stage(c, [](const StageContext&) { return std::make_unique<Produce>(); });
  }
  {
    Contract c = base("test.consume");
    c.requires_facets = {"a"};
    r.add_stage(c, [](const StageContext&) { return std::make_unique<Consume>(); });
  }
  {
    // Rewrites `a` in place (requires and provides it, like context.dedup's context_units).
    Contract c = base("test.rewrite");
    c.requires_facets = {"a"};
    c.provides_facets = {"a"};
    r.add_stage(c, [](const StageContext&) { return std::make_unique<Consume>(); });
  }
  {
    Contract c = base("test.sleep");
    c.params = {P::integer("ms", 1, 0, 10000, "milliseconds per item")};
    r.add_stage(c, [](const StageContext& ctx) { return std::make_unique<Sleep>(ctx); });
  }
  {
    Contract c = base("test.spin");
    c.concurrency = Concurrency::unlimited();
    c.params = {P::integer("max_ms", 30000, 1, 600000, "milliseconds before giving up")};
    r.add_stage(c, [](const StageContext& ctx) { return std::make_unique<Spin>(ctx); });
  }
  {
    Contract c = base("test.gate");
    r.add_stage(c, [](const StageContext&) { return std::make_unique<Gate>(); });
  }
  {
    Contract c = base("test.throw");
    c.concurrency = Concurrency::unlimited();
    r.add_stage(c, [](const StageContext&) { return std::make_unique<Throw>(); });
  }
  {
    Contract c = base("test.check", {{"pass", "passed", false}, {"retry", "try again", true}});
    c.concurrency = Concurrency::unlimited();
    c.params = {P::integer("pass_on", 0, 0, 1000, "attempt that passes (0: never)")};
    r.add_stage(c, [](const StageContext& ctx) { return std::make_unique<Check>(ctx); });
  }
  {
    Contract c = base("test.async_hold");
    c.execution = Execution::Async;
    c.concurrency = Concurrency::unlimited();
    c.params = {P::integer("release_after", 8, 1, 100000, "items to hold before releasing")};
    r.add_stage(c, [](const StageContext& ctx) { return std::make_unique<AsyncHold>(ctx); });
  }
  {
    // Its default port is a failure port (items that leave by it count as failed).
    Contract c = base("test.fail_default", {{"fail", "always", true}, {"ok", "never", false}});
    r.add_stage(c, [](const StageContext&) { return std::make_unique<FirstPort>(); });
  }
  {
    Contract c = base("test.async_drop");
    c.execution = Execution::Async;
    r.add_stage(c, [](const StageContext&) { return std::make_unique<AsyncDrop>(); });
  }
  {
    Contract c = base("test.async_jitter");
    c.execution = Execution::Async;
    c.concurrency = Concurrency::unlimited();
    r.add_stage(c, [](const StageContext&) { return std::make_unique<AsyncJitter>(); });
  }
  {
    Contract c = base("test.use_model");
    c.params = {P::resource("model", "model", "the model"),
                P::resources("hooks", "hook", "decoding hooks"),
                P::choice("mode", "fast", {"fast", "careful"}, "a mode"),
                P::number("temperature", 0.8, 0.0, 2.0, "sampling temperature"),
                P::strings("checks", std::vector<std::string>{"syntax"}, "checks to run",
                           {"syntax", "compile", "tests"})};
    r.add_stage(c, [](const StageContext& ctx) { return std::make_unique<UseModel>(ctx); });
  }
  r.add_resource(
      {"test.model", "model", "a pretend model", {P::string("path", std::nullopt, "model file")}},
      [](const ResourceContext& ctx) {
        auto m = std::make_shared<TestModel>();
        m->path = ctx.params.string("path");
        if (m->path == "fail") throw std::runtime_error("cannot load `fail`");
        return m;
      });
  r.add_resource({"test.hook", "hook", "a pretend decoding hook", {}},
                 [](const ResourceContext&) { return std::make_shared<TestHook>(); });
}

Registry full_registry() {
  Registry r;
  stages::register_all(r);
  register_test_kinds(r);
  return r;
}

VectorSource::VectorSource(std::size_t n, std::string prefix) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::string id = prefix + std::to_string(i);
    tasks_.push_back({id, {{"id", id}, {"n", i}}});
  }
}

std::optional<Task> VectorSource::next() {
  const std::size_t i = emitted.load();
  if (i >= tasks_.size()) return std::nullopt;
  emitted.fetch_add(1);
  return tasks_[i];
}

JsonTaskSource::JsonTaskSource(std::vector<nlohmann::json> tasks, const std::string& id_field) {
  for (auto& t : tasks) tasks_.push_back({t[id_field].get<std::string>(), t});
}

std::optional<Task> JsonTaskSource::next() {
  if (next_ >= tasks_.size()) return std::nullopt;
  return tasks_[next_++];
}

void VectorSink::write(const Item& item) {
  records.push_back(item.to_record());
  ids.push_back(item.id());
  if (on_write) on_write(item);
}

bool VectorSink::contains(std::string_view id) const {
  if (preloaded.count(id)) return true;
  return false;
}

void set_gate(bool open) {
  GateState& g = gate_state();
  {
    std::lock_guard l(g.mu);
    g.open = open;
  }
  g.cv.notify_all();
}

ValidatedPipeline load_text(const std::string& yaml, const Registry& registry) {
  Diagnostics diags("test.yaml");
  PipelineSpec spec = load_spec_string(yaml, "test.yaml", diags);
  if (!diags.empty()) throw SpecError(std::move(diags));
  auto vp = validate(spec, registry, diags);
  if (!vp) throw SpecError(std::move(diags));
  return std::move(*vp);
}

}  // namespace vsynth::test
