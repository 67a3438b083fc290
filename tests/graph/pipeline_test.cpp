// Graph semantics: backpressure, exception isolation, bounded back edges, ordering, async
// stages that never block graph threads, cancellation, rejection, resources.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "graph/pipeline.h"
#include "tests/graph/test_kinds.h"

using namespace vsynth;
using vsynth::test::load_text;

namespace {

graph::RunResult run(graph::Pipeline& p, test::VectorSource& src, test::VectorSink& sink) {
  graph::RunControl control;
  return p.run(src, sink, control);
}

}  // namespace

TEST_CASE("backpressure keeps the number of items inside bounded by max_in_flight") {
  auto reg = test::full_registry();
  graph::Pipeline p(load_text(R"(
stages:
  slow: { use: test.sleep, with: { ms: 2 } }
edges: [ slow -> out ]
max_in_flight: 6
)",
                              reg),
                    reg);
  test::VectorSource src(120);
  test::VectorSink sink;
  std::size_t worst = 0;
  sink.on_write = [&](const graph::Item&) {
    worst = std::max(worst, src.emitted.load() - sink.ids.size() + 1);
  };
  auto r = run(p, src, sink);
  CHECK(r.written == 120);
  // Guaranteed by the gate, not by timing: an item is admitted only while fewer than 6 are
  // inside, and one leaves only after its record is written (the sink is serial). +1: the
  // source has read the next task while it waits at the gate.
  CHECK(worst <= 6 + 1);
  CHECK(p.in_flight() == 0);
}

TEST_CASE("a full `block` edge pauses admission, so its queue never exceeds its capacity") {
  auto reg = test::full_registry();
  graph::Pipeline p(load_text(R"(
max_in_flight: 64
stages:
  fast: { use: test.produce }
  slow: { use: test.sleep, with: { ms: 1 } }
edges:
  - { from: fast, to: slow, capacity: 3, policy: block }
  - slow -> out
)",
                              reg),
                    reg);
  test::VectorSource src(150);
  test::VectorSink sink;
  auto r = run(p, src, sink);
  CHECK(r.written == 150);
  CHECK(r.rejected == 0);
  // Admission stops once 3 items are queued in front of `slow` or are upstream of it, counted
  // exactly as they move (no item in transit is missed), so the bound holds on any machine
  // however the threads are scheduled; without the watch the queue could reach 64.
  CHECK(p.metrics()[1].max_queued <= 3);
}

TEST_CASE("an exception in a stage fails that item only, naming the stage") {
  auto reg = test::full_registry();
  graph::Pipeline p(
      load_text("stages: { boom: { use: test.throw } }\nedges: [ boom -> out ]\n", reg), reg);
  test::VectorSource src(40);
  test::VectorSink sink;
  auto r = run(p, src, sink);
  REQUIRE(r.written == 40);
  CHECK(r.errors == 20);
  CHECK(r.passed == 20);
  CHECK(r.fatal.empty());
  for (const auto& rec : sink.records) {
    const std::string id = rec["id"];
    if ((id.back() - '0') % 2 == 1) {
      CHECK(rec["status"] == "error");
      CHECK(rec["error"].get<std::string>().find("stage `boom` (test.throw) failed: odd item " +
                                                 id) != std::string::npos);
    } else {
      CHECK(rec["status"] == "boom.ok");
    }
  }
}

TEST_CASE("fail_fast turns a stage exception into a stopped run") {
  auto reg = test::full_registry();
  graph::Pipeline p(
      load_text("fail_fast: true\nstages: { boom: { use: test.throw } }\nedges: [ boom -> out ]\n",
                reg),
      reg);
  test::VectorSource src(200);
  test::VectorSink sink;
  auto r = run(p, src, sink);
  CHECK_FALSE(r.fatal.empty());
  CHECK(r.fatal.find("fail_fast") != std::string::npos);
  // The item that failed is written; the others inside are stopped with the run and left
  // unfinished, for --resume (nothing that got in is lost).
  CHECK(r.written >= 1);
  CHECK(r.written + r.unfinished == r.admitted);
  CHECK(r.admitted < 200);
}

TEST_CASE("back edges are bounded by max_attempts and carry feedback") {
  auto reg = test::full_registry();
  SECTION("never passes: exhausted after max_attempts") {
    graph::Pipeline p(load_text(R"(
stages:
  work: { use: test.produce }
  check: { use: test.check, with: { pass_on: 0 } }
edges:
  - work -> check
  - check.pass -> out
  - { from: check.retry, to: work, back_edge: true, max_attempts: 4 }
)",
                                reg),
                      reg);
    test::VectorSource src(10);
    test::VectorSink sink;
    auto r = run(p, src, sink);
    REQUIRE(r.written == 10);
    CHECK(r.exhausted == 10);
    for (const auto& rec : sink.records) {
      CHECK(rec["status"] == "exhausted");
      CHECK(rec["attempts"] == 4);
      CHECK(rec["feedback"].size() == 4);
      CHECK(rec["feedback"][3]["message"] == "attempt 4 failed");
      // Every earlier attempt's facets that the last one replaced, with where it left.
      REQUIRE(rec["history"].size() == 3);
      CHECK(rec["history"][2]["attempt"] == 3);
      CHECK(rec["history"][2]["status"] == "check.retry");
      CHECK(rec["history"][2]["facets"]["a"] == "marked at attempt 3");
      CHECK(rec["facets"]["a"] == "marked at attempt 4");
    }
    CHECK(p.metrics()[0].processed == 40);
  }
  SECTION("passes on the third attempt") {
    graph::Pipeline p(load_text(R"(
stages:
  work: { use: test.produce }
  check: { use: test.check, with: { pass_on: 3 } }
edges:
  - work -> check
  - check.pass -> out
  - { from: check.retry, to: work, back_edge: true, max_attempts: 8 }
)",
                                reg),
                      reg);
    test::VectorSource src(10);
    test::VectorSink sink;
    auto r = run(p, src, sink);
    CHECK(r.passed == 10);
    for (const auto& rec : sink.records) {
      CHECK(rec["status"] == "checked");
      CHECK(rec["attempts"] == 3);
      CHECK(rec["feedback"].size() == 2);
      REQUIRE(rec["history"].size() == 2);
      for (int a = 0; a < 2; ++a) {
        CHECK(rec["history"][a]["attempt"] == a + 1);
        CHECK(rec["history"][a]["facets"]["a"] == "marked at attempt " + std::to_string(a + 1));
        CHECK_FALSE(rec["history"][a]["facets"].contains("seen"));  // same as the final one
      }
      CHECK(rec["facets"]["seen"] == "seen");
    }
  }
}

TEST_CASE("ordered: true writes results in input order even when stages reorder them") {
  auto reg = test::full_registry();
  graph::Pipeline p(load_text(R"(
ordered: true
stages: { jitter: { use: test.async_jitter } }
edges: [ jitter -> out ]
)",
                              reg),
                    reg);
  test::VectorSource src(60);
  test::VectorSink sink;
  auto r = run(p, src, sink);
  REQUIRE(r.written == 60);
  for (std::size_t i = 0; i < sink.ids.size(); ++i) CHECK(sink.ids[i] == "t" + std::to_string(i));
}

TEST_CASE("async stages never block graph threads") {
  // The stage holds every item until 64 have been submitted. With graph threads blocked inside
  // submit() (2 cores here), fewer could ever arrive and the items would fail after 5 s.
  auto reg = test::full_registry();
  graph::Pipeline p(load_text(R"(
max_in_flight: 64
stages:
  hold: { use: test.async_hold, with: { release_after: 64 } }
  after: { use: test.produce }
edges: [ hold -> after -> out ]
)",
                              reg),
                    reg);
  test::VectorSource src(64);
  test::VectorSink sink;
  auto r = run(p, src, sink);
  CHECK(r.written == 64);
  CHECK(r.passed == 64);
  CHECK(r.errors == 0);
}

TEST_CASE("an async stage that drops an item's completion fails that item, once") {
  auto reg = test::full_registry();
  graph::Pipeline p(
      load_text("stages: { drop: { use: test.async_drop } }\nedges: [ drop -> out ]\n", reg), reg);
  test::VectorSource src(5);
  test::VectorSink sink;
  auto r = run(p, src, sink);
  REQUIRE(r.written == 5);
  CHECK(r.errors == 5);
  CHECK(sink.records[0]["error"].get<std::string>().find("dropped the item") != std::string::npos);
}

TEST_CASE(
    "cancellation leaves in-flight items unfinished, keeps counts right, and the pipeline runs "
    "again") {
  auto reg = test::full_registry();
  graph::Pipeline p(load_text(R"(
max_in_flight: 4
stages: { slow: { use: test.sleep, with: { ms: 3 } } }
edges: [ slow -> out ]
)",
                              reg),
                    reg);
  graph::RunControl control;
  test::VectorSource src(500);
  test::VectorSink sink;
  sink.on_write = [&](const graph::Item&) {
    if (sink.ids.size() == 10) control.cancel();
  };
  auto r = p.run(src, sink, control);
  CHECK(r.cancelled);
  // Nothing admitted was lost: each was written or left unfinished for --resume.
  CHECK(r.written + r.unfinished == r.admitted);
  CHECK(r.written >= 10);
  CHECK(r.written < 500);
  CHECK(p.in_flight() == 0);
  std::set<std::string> unique(sink.ids.begin(), sink.ids.end());
  CHECK(unique.size() == sink.ids.size());

  // Same pipeline, a second run: it is reusable and the gate starts from zero.
  graph::RunControl fresh;
  test::VectorSource src2(30);
  test::VectorSink sink2;
  auto r2 = p.run(src2, sink2, fresh);
  CHECK_FALSE(r2.cancelled);
  CHECK(r2.written == 30);
  CHECK(p.metrics()[0].processed == 30);
}

TEST_CASE(
    "an item cancelled at a back edge is left unfinished, not written, so --resume reruns it") {
  // Every item loops (test.check never passes) with attempts to spare, so when the run is
  // cancelled every admitted item is on the loop: each must come back as unfinished, none be
  // written as failed (a written record would make --resume skip a task that never finished).
  auto reg = test::full_registry();
  for (const bool ordered : {false, true}) {
    CAPTURE(ordered);
    graph::Pipeline p(load_text(std::string(R"(
max_in_flight: 4
stages:
  work: { use: test.sleep, with: { ms: 1 } }
  check: { use: test.check, with: { pass_on: 0 } }
edges:
  - work -> check
  - check.pass -> out
  - { from: check.retry, to: work, back_edge: true, max_attempts: 1000 }
ordered: )") + (ordered ? "true" : "false") +
                                    "\n",
                                reg),
                      reg);
    graph::RunControl control;
    test::VectorSource src(50);
    test::VectorSink sink;
    std::thread canceller([&] {
      while (p.metrics()[1].processed < 20)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      control.cancel();
    });
    auto r = p.run(src, sink, control);
    canceller.join();
    CHECK(r.cancelled);
    CHECK(r.admitted > 0);
    CHECK(sink.records.empty());
    CHECK(r.written == 0);
    CHECK(r.unfinished == r.admitted);
    CHECK(p.in_flight() == 0);
  }
}

TEST_CASE("a cancelled run reaches the stages' own work: items inside stop, none is an error") {
  // test.spin works until Item::stop_requested(); without the run's flag reaching the items
  // the run would last test.spin's 30 s.
  auto reg = test::full_registry();
  for (const bool ordered : {false, true}) {
    CAPTURE(ordered);
    graph::Pipeline p(load_text(std::string(R"(
max_in_flight: 3
stages:
  spin: { use: test.spin, with: { max_ms: 30000 } }
edges: [ spin -> out ]
ordered: )") + (ordered ? "true" : "false") +
                                    "\n",
                                reg),
                      reg);
    graph::RunControl control;
    test::VectorSource src(10);
    test::VectorSink sink;
    std::thread canceller([&] {
      while (p.in_flight() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      control.cancel();
    });
    const auto t0 = std::chrono::steady_clock::now();
    auto r = p.run(src, sink, control);
    canceller.join();
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    CHECK(r.cancelled);
    CHECK(r.admitted == 3);
    CHECK(r.unfinished == 3);
    CHECK(r.written == 0);
    CHECK(r.errors == 0);
    CHECK(sink.records.empty());
    CHECK(p.metrics()[0].errors == 0);
  }
}

TEST_CASE("an observer's cancel reaches the stage's work: the item is written as cancelled") {
  auto reg = test::full_registry();
  graph::Pipeline p(load_text(R"(
stages: { spin: { use: test.spin, with: { max_ms: 30000 } } }
edges: [ spin -> out ]
)",
                              reg),
                    reg);
  // One task, with someone waiting on it.
  class Waited : public graph::Source {
   public:
    explicit Waited(std::shared_ptr<graph::Observer> o) : observer_(std::move(o)) {}
    std::optional<graph::Task> next() override {
      if (given_) return std::nullopt;
      given_ = true;
      graph::Task t{"waited", nlohmann::json::object()};
      t.observer = observer_;
      return t;
    }

   private:
    std::shared_ptr<graph::Observer> observer_;
    bool given_ = false;
  };
  auto observer = std::make_shared<graph::Observer>();
  Waited src(observer);
  test::VectorSink sink;
  std::thread canceller([&] {
    while (p.in_flight() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    observer->cancel();
  });
  graph::RunControl control;
  auto r = p.run(src, sink, control);
  canceller.join();
  CHECK_FALSE(r.cancelled);
  REQUIRE(sink.records.size() == 1);
  CHECK(sink.records[0]["status"] == "cancelled");
  CHECK(r.errors == 0);
}

TEST_CASE("a full `reject` edge turns overflow into rejected results, none dropped") {
  auto reg = test::full_registry();
  graph::Pipeline p(load_text(R"(
max_in_flight: 64
stages:
  fast: { use: test.produce }
  slow: { use: test.gate }
edges:
  - { from: fast, to: slow, capacity: 2, policy: reject }
  - slow -> out
)",
                              reg),
                    reg);
  // `slow` holds its items until 57 have been rejected: while it does, at most 1 item runs in
  // it and 2 wait in its queue, so at least 57 of the 60 must be turned away — a count the
  // mechanism guarantees, whatever the scheduling.
  test::set_gate(false);
  test::VectorSource src(60);
  test::VectorSink sink;
  std::size_t rejected_seen = 0;
  sink.on_write = [&](const graph::Item& item) {
    if (item.outcome().status == "rejected" && ++rejected_seen == 57) test::set_gate(true);
  };
  auto r = run(p, src, sink);
  test::set_gate(false);
  CHECK(r.written == 60);
  CHECK(r.rejected >= 57);
  CHECK(r.rejected + r.passed == 60);
  const auto rejected = std::count_if(sink.records.begin(), sink.records.end(),
                                      [](const auto& rec) { return rec["status"] == "rejected"; });
  CHECK(static_cast<uint64_t>(rejected) == r.rejected);
}

TEST_CASE("resume: tasks the sink already holds are skipped, not admitted") {
  auto reg = test::full_registry();
  graph::Pipeline p(load_text("stages: { w: { use: test.produce } }\nedges: [ w -> out ]\n", reg),
                    reg);
  test::VectorSource src(10);
  test::VectorSink sink;
  sink.preloaded = {"t1", "t4", "t7"};
  auto r = run(p, src, sink);
  CHECK(r.skipped == 3);
  CHECK(r.written == 7);
  CHECK(r.total == 7);
  CHECK(std::find(sink.ids.begin(), sink.ids.end(), "t4") == sink.ids.end());
}

TEST_CASE("resources are built once, before stages, and a failing one names itself") {
  auto reg = test::full_registry();
  const std::string yaml = R"(
resources:
  coder: { use: test.model, with: { path: PATH } }
  z3: { use: test.hook }
stages:
  gen: { use: test.use_model, with: { model: coder, hooks: [z3] } }
edges: [ gen -> out ]
)";
  auto ok = yaml;
  ok.replace(ok.find("PATH"), 4, "m.gguf");
  graph::Pipeline p(load_text(ok, reg), reg);
  test::VectorSource src(3);
  test::VectorSink sink;
  CHECK(run(p, src, sink).written == 3);

  auto bad = yaml;
  bad.replace(bad.find("PATH"), 4, "fail");
  try {
    graph::Pipeline q(load_text(bad, reg), reg);
    FAIL("expected the resource build to fail");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(
              "building resource `coder` (test.model) failed: cannot load `fail`") !=
          std::string::npos);
  }
}

TEST_CASE("a stage constructor's error has one prefix: the graph's, naming where") {
  // The graph says where (file:line:col, stage, kind); the stage says only what. Real stages
  // whose constructors refuse a setting that validation cannot see.
  auto reg = test::full_registry();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{ use: context.prune, with: { tokenizer: model } }",
       "building stage `s` (context.prune) failed: `tokenizer: model` needs `model`"},
      {"{ use: context.prune, with: { tokenizer: gguf } }",
       "building stage `s` (context.prune) failed: `tokenizer: gguf` needs `gguf_path`"},
  };
  for (const auto& [stage, want] : cases) {
    INFO(stage);
    auto vp = load_text(
        "stages:\n  a: { use: ast.anchor }\n  s: " + stage + "\nedges: [ a -> s -> out ]\n", reg);
    try {
      graph::Pipeline p(std::move(vp), reg);
      FAIL("expected the stage build to fail");
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK_THAT(what, Catch::StartsWith("test.yaml:3:3: " + want));
      std::size_t prefixes = 0;
      for (auto at = what.find("stage `"); at != std::string::npos;
           at = what.find("stage `", at + 1)) {
        ++prefixes;
      }
      CHECK(prefixes == 1);
    }
  }
}

TEST_CASE("a JSON-pointer parameter reaches the stage parsed, escapes decoded") {
  // `~1` is a `/` inside a key: the pointer names the key "lang/uage" under "meta".
  auto reg = test::full_registry();
  graph::Pipeline p(load_text(R"(
stages:
  route: { use: core.select, with: { field: /meta/lang~1uage, values: [python] } }
edges: [ route.match -> out, route.other -> out ]
)",
                              reg),
                    reg);
  CHECK(p.spec().stages[0].params.pointer("field").to_string() == "/meta/lang~1uage");
  test::JsonTaskSource src({{{"task_id", "a"}, {"meta", {{"lang/uage", "python"}}}},
                            {{"task_id", "b"}, {"meta", {{"lang/uage", "c"}}}},
                            {{"task_id", "c"}, {"meta", {{"language", "python"}}}}});
  test::VectorSink sink;
  graph::RunControl control;
  REQUIRE(p.run(src, sink, control).written == 3);
  std::map<std::string, std::string> status;
  for (const auto& rec : sink.records) status[rec["id"]] = rec["status"];
  CHECK(status["a"] == "route.match");
  CHECK(status["b"] == "route.other");
  CHECK(status["c"] == "route.other");
}

TEST_CASE("trace: one span per item per stage, in Chrome trace format") {
  auto reg = test::full_registry();
  graph::Pipeline p(load_text("stages: { a: { use: test.produce }, b: { use: test.consume } "
                              "}\nedges: [ a -> b -> out ]\n",
                              reg),
                    reg);
  const std::string path = std::string(VSYNTH_BINARY_DIR) + "/trace_test.json";
  graph::RunControl control;
  graph::RunOptions opts;
  opts.trace_path = path;
  test::VectorSource src(7);
  test::VectorSink sink;
  p.run(src, sink, control, opts);
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in);
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 15);
  // First the process_name metadata event naming the pipeline (vsynth report reads it).
  CHECK(j[0]["ph"] == "M");
  CHECK(j[0]["name"] == "process_name");
  CHECK(j[0]["args"].contains("pipeline"));
  std::set<std::string> names;
  for (std::size_t i = 1; i < j.size(); ++i) {
    const auto& e = j[i];
    names.insert(e["name"].get<std::string>());
    CHECK(e["ph"] == "X");
    CHECK(e["dur"].get<double>() >= 0);
  }
  CHECK(names == std::set<std::string>{"a", "b"});
}
