// Per-item stage bypass: the closure over facets, and items that skip stages while the
// run's other items go through them (sync and async stages).
#include <catch2/catch.hpp>

#include "graph/bypass.h"
#include "graph/pipeline.h"
#include "tests/graph/test_kinds.h"

using namespace vsynth;
using vsynth::test::load_text;

namespace {

const char* kChain =
    "stages:\n"
    "  produce: { use: test.produce }\n"
    "  consume: { use: test.consume }\n"
    "  jitter:  { use: test.async_jitter }\n"
    "  tail:    { use: test.sleep, with: { ms: 0 } }\n"
    "edges: [ produce -> consume -> jitter -> tail -> out ]\n";

// Even-numbered tasks skip `skip`; the others run every stage.
class HalfBypassSource : public graph::Source {
 public:
  HalfBypassSource(std::size_t n, std::vector<std::string> skip) : n_(n), skip_(std::move(skip)) {}
  std::optional<graph::Task> next() override {
    if (i_ >= n_) return std::nullopt;
    graph::Task t{"t" + std::to_string(i_), {{"n", i_}}};
    if (i_ % 2 == 0) t.bypass = skip_;
    ++i_;
    return t;
  }

 private:
  std::size_t n_, i_ = 0;
  std::vector<std::string> skip_;
};

}  // namespace

TEST_CASE("bypass_closure adds the stages that need a skipped stage's facets") {
  auto reg = test::full_registry();
  const auto vp = load_text(kChain, reg);
  const auto plan = graph::bypass_closure(vp, {"produce"});
  REQUIRE(plan.error.empty());
  CHECK(plan.stages == std::vector<std::string>{"produce", "consume"});

  const auto none = graph::bypass_closure(vp, {"jitter"});
  REQUIRE(none.error.empty());
  CHECK(none.stages == std::vector<std::string>{"jitter"});

  const auto bad = graph::bypass_closure(vp, {"nope"});
  CHECK(bad.stages.empty());
  CHECK(bad.error.find("no stage `nope`") != std::string::npos);
}

TEST_CASE("bypass_closure: a stage that requires and provides a facet is not its own provider") {
  // context.dedup requires and provides `context_units`: with its providers skipped it must be
  // skipped too, or it fails the item for want of the facet (issue 37).
  auto reg = test::full_registry();
  const auto vp = load_text(
      "stages:\n"
      "  produce: { use: test.produce }\n"
      "  rewrite: { use: test.rewrite }\n"
      "  tail:    { use: test.sleep, with: { ms: 0 } }\n"
      "edges: [ produce -> rewrite -> tail -> out ]\n",
      reg);
  const auto plan = graph::bypass_closure(vp, {"produce"});
  REQUIRE(plan.error.empty());
  CHECK(plan.stages == std::vector<std::string>{"produce", "rewrite"});
  // With its provider running it stays.
  CHECK(graph::bypass_closure(vp, {"tail"}).stages == std::vector<std::string>{"tail"});
}

TEST_CASE(
    "bypass_closure on the shipped pipelines: skipping the file readers skips all that needs "
    "them") {
  auto reg = test::full_registry();
  for (const char* name : {"complete", "context", "anchor", "retrieve"}) {
    INFO(name);
    const auto vp =
        graph::load_pipeline(std::string(VSYNTH_SOURCE_DIR) + "/pipelines/" + name + ".yaml", reg);
    std::vector<std::string> readers;
    for (const auto& s : vp.stages) {
      if (s.kind->contract.reads_task_file) readers.push_back(s.name);
    }
    REQUIRE_FALSE(readers.empty());
    const auto plan = graph::bypass_closure(vp, readers);
    REQUIRE(plan.error.empty());
    // Every stage left to run has each facet it requires from another running stage.
    for (std::size_t i = 0; i < vp.stages.size(); ++i) {
      const auto& s = vp.stages[i];
      if (std::find(plan.stages.begin(), plan.stages.end(), s.name) != plan.stages.end()) continue;
      for (const auto& f : s.kind->contract.requires_facets) {
        bool provided = false;
        for (std::size_t j = 0; j < vp.stages.size(); ++j) {
          const auto& o = vp.stages[j];
          if (j != i &&
              std::find(plan.stages.begin(), plan.stages.end(), o.name) == plan.stages.end() &&
              std::find(o.kind->contract.provides_facets.begin(),
                        o.kind->contract.provides_facets.end(),
                        f) != o.kind->contract.provides_facets.end()) {
            provided = true;
          }
        }
        INFO(s.name << " needs " << f);
        CHECK(provided);
      }
    }
    if (std::string(name) == "complete") {
      CHECK(std::find(plan.stages.begin(), plan.stages.end(), "dedup") != plan.stages.end());
      CHECK(std::find(plan.stages.begin(), plan.stages.end(), "generate") == plan.stages.end());
    }
  }
}

TEST_CASE("bypass_closure refuses a stage whose default port is a failure port") {
  auto reg = test::full_registry();
  const auto vp = load_text(
      "stages:\n  f: { use: test.fail_default }\n  t: { use: test.sleep, with: { ms: 0 } }\n"
      "edges: [ f -> out, f.ok -> t -> out ]\n",
      reg);
  const auto plan = graph::bypass_closure(vp, {"f"});
  CHECK(plan.stages.empty());
  CHECK(plan.error.find("stage `f` (test.fail_default) cannot be skipped") != std::string::npos);
  CHECK(graph::bypass_closure(vp, {"t"}).error.empty());
}

TEST_CASE("items that bypass stages pass them untouched while the others run them") {
  auto reg = test::full_registry();
  graph::Pipeline p(load_text(kChain, reg), reg);
  const auto plan = graph::bypass_closure(load_text(kChain, reg), {"produce", "jitter"});
  REQUIRE(plan.error.empty());
  REQUIRE(plan.stages == std::vector<std::string>{"produce", "consume", "jitter"});
  HalfBypassSource src(40, plan.stages);
  test::VectorSink sink;
  graph::RunControl control;
  const auto r = p.run(src, sink, control);
  REQUIRE(r.written == 40);
  CHECK(r.passed == 40);
  for (const auto& rec : sink.records) {
    INFO(rec.dump());
    CHECK(rec["status"] == "tail.ok");
    const int n = std::stoi(rec["id"].get<std::string>().substr(1));
    if (n % 2 == 0) {
      CHECK(rec["skipped_stages"] == nlohmann::json(plan.stages));
      CHECK_FALSE(rec["facets"].contains("a"));  // produce never ran for it
    } else {
      CHECK_FALSE(rec.contains("skipped_stages"));
      CHECK(rec["facets"].contains("a"));
    }
  }
  // Metrics: the skipped items are counted apart, not as processed with a zero latency.
  for (const auto& s : p.metrics()) {
    INFO(s.name);
    if (s.name == "tail") {
      CHECK(s.processed == 40);
      CHECK(s.bypassed == 0);
    } else {
      CHECK(s.processed == 20);
      CHECK(s.bypassed == 20);
    }
    CHECK(s.in_flight == 0);
    CHECK(s.queued == 0);
  }
}
