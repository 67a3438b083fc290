// validate.async in real pipelines: ports, statuses and feedback over a bounded back edge
// (with generate.llm's `candidates` facet made by a test stage), oracle mode, a private pool,
// exactly one result per item under load, contract errors reported before anything runs, and
// after constrain.z3 an unknown proof's spec tested (spec_test on and off).
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "graph/pipeline.h"
#include "stages/facets/candidates.h"
#include "tests/graph/test_kinds.h"
#include "tests/validation/util.h"

using namespace vsynth;
using nlohmann::json;

namespace {

// Tasks from JSON objects.
class JsonSource : public graph::Source {
 public:
  explicit JsonSource(std::vector<json> tasks) : tasks_(std::move(tasks)) {}
  std::optional<graph::Task> next() override {
    if (next_ >= tasks_.size()) return std::nullopt;
    const json& j = tasks_[next_++];
    return graph::Task{j.value("id", j.value("task_id", std::string())), j};
  }

 private:
  std::vector<json> tasks_;
  std::size_t next_ = 0;
};

// test.candidates: stands in for generate.llm. On attempt a it offers the task's
// `attempts[a - 1]` (the last one when a is past the end) as candidate 0, in the arena.
class Candidates : public graph::SyncStage {
 public:
  graph::Port process(graph::Item& item) override {
    const json& attempts = item.task().data.at("attempts");
    const std::size_t i =
        std::min<std::size_t>(static_cast<std::size_t>(item.attempt() - 1), attempts.size() - 1);
    auto& facet = item.emplace<stages::facets::CandidatesFacet>();
    stages::facets::Candidate c;
    c.code = item.arena().store(attempts[i].get<std::string>());
    c.text = c.code;
    c.completion = c.code;
    facet.candidates.push_back(c);
    facet.attempt = item.attempt();
    return 0;
  }
};

graph::Registry registry() {
  graph::Registry r = test::full_registry();
  graph::Contract c;
  c.kind = "test.candidates";
  c.summary = "offers the task's attempts[attempt - 1] as the candidate";
  c.ports = {{"ok", "done", false}};
  c.provides_facets = {"candidates"};
  r.add_stage(c, [](const graph::StageContext&) { return std::make_unique<Candidates>(); });
  return r;
}

std::map<std::string, json> run(const std::string& yaml, std::vector<json> tasks) {
  const graph::Registry reg = registry();
  graph::Pipeline p(test::load_text(yaml, reg), reg);
  JsonSource src(std::move(tasks));
  test::VectorSink sink;
  graph::RunControl control;
  const graph::RunResult r = p.run(src, sink, control);
  CHECK(r.fatal.empty());
  std::map<std::string, json> by_id;
  for (const auto& rec : sink.records) {
    CHECK(by_id.count(rec["id"]) == 0);  // exactly one result per item
    by_id[rec["id"]] = rec;
  }
  return by_id;
}

// The loop with `timeout_ms` as each check's wall-clock limit.
std::string loop(int timeout_ms) {
  return R"(
resources:
  box: { use: sandbox.bwrap, with: { workers: 2, wall_ms: 10000 } }
stages:
  gen: { use: test.candidates }
  validate: { use: validate.async, with: { sandbox: box, checks: [syntax, compile, tests], timeout_ms: )" +
         std::to_string(timeout_ms) + R"( } }
edges:
  - gen -> validate
  - { from: validate.fail, to: gen, back_edge: true, max_attempts: 3 }
  - validate.pass -> out
  - validate.error -> out
)";
}
// Wall-clock limits: generous where a candidate must finish (a correct program passes even on a
// loaded machine: tests run in parallel, the sanitizer build is slower), short where the test
// expects a timeout (its cost is this limit per attempt).
constexpr int kFinishMs = 60000;
constexpr int kHangMs = 1500;

const std::string kWrong = "def add(a, b):\n    return a - b\n";
const std::string kRight = "def add(a, b):\n    return a + b\n";

json add_task(std::string id, std::vector<std::string> attempts) {
  return {{"id", std::move(id)},
          {"language", "python"},
          {"entry_point", "add"},
          {"tests", {"assert add(1, 2) == 3", "assert add(0, 0) == 0"}},
          {"attempts", std::move(attempts)}};
}

}  // namespace

TEST_CASE("validate.async: failures go back with feedback until a candidate passes") {
  json c_task = {
      {"id", "c-twice"},
      {"language", "c"},
      {"tests", {"twice(3) == 6"}},
      {"attempts",
       {"int twice(int x) { return x + 2; }\n", "int twice(int x) { return 2 * x; }\n"}}};
  json broken = add_task("broken-test", {kRight});
  broken["tests"] = {"assert add(1,"};
  const std::string syntax_error = "def add(a, b)\n    return a + b\n";
  const std::string times = "def add(a, b):\n    return a * b\n";
  auto results =
      run(loop(kFinishMs),
          {add_task("fixed", {kWrong, kRight}), add_task("never", {kWrong}),
           add_task("best-of", {kWrong, syntax_error, times}),
           add_task("syntax", {"def add(a, b)\n    return a + b\n", kRight}), broken, c_task});
  REQUIRE(results.size() == 6);
  // A candidate that never returns: a short limit, so its three attempts time out quickly.
  auto hang_results =
      run(loop(kHangMs), {add_task("hang", {"def add(a, b):\n    while True:\n        pass\n"})});
  REQUIRE(hang_results.size() == 1);

  const json& fixed = results["fixed"];
  CHECK(fixed["passed"] == true);
  CHECK(fixed["status"] == "tests_passed");
  CHECK(fixed["facets"]["verdicts"]["outcome"] == "tests_passed");
  CHECK(fixed["attempts"] == 2);
  // The first attempt's candidate and verdict stay in the record.
  REQUIRE(fixed["history"].size() == 1);
  CHECK(fixed["history"][0]["status"] == "failed");
  CHECK(fixed["history"][0]["facets"]["verdicts"]["outcome"] == "tests_failed");
  REQUIRE(fixed["feedback"].size() == 1);
  CHECK(fixed["feedback"][0]["from"] == "validate.fail");
  const std::string msg = fixed["feedback"][0]["message"];
  CHECK(msg.find("tests failed: assertion failed: assert add(1, 2) == 3") == 0);
  CHECK(msg.find("add(1, 2) = -1") != std::string::npos);
  const json& verdicts = fixed["facets"]["verdicts"];
  CHECK(verdicts["passed"] == true);
  CHECK(verdicts["tests_visibility"] == "visible");
  CHECK(verdicts["candidates"][0]["checks"].size() == 3);
  CHECK(verdicts["candidates"][0]["checks"][2]["tests"] == 2);

  // The best candidate over all attempts: the passing one, else the one that got furthest
  // through the checks, the earlier attempt on a tie (attempt 3 also compiles; attempt 2 does
  // not even parse) -- what to use when the loop ran out of attempts.
  CHECK(fixed["facets"]["best_candidate"]["attempt"] == 2);
  CHECK(fixed["facets"]["best_candidate"]["passed"] == true);
  CHECK(fixed["facets"]["best_candidate"]["code"] == kRight);
  const json& best_of = results["best-of"];
  CHECK(best_of["status"] == "failed");
  CHECK(best_of["attempts"] == 3);
  const json& bc = best_of["facets"]["best_candidate"];
  CHECK(bc["attempt"] == 1);
  CHECK(bc["passed"] == false);
  CHECK(bc["outcome"] == "tests_failed");
  CHECK(bc["checks_passed"] == 2);
  CHECK(bc["code"] == kWrong);

  const json& never = results["never"];
  CHECK(never["passed"] == false);
  CHECK(never["status"] == "failed");  // the last attempt's verdict, not just "exhausted"
  CHECK(never["facets"]["verdicts"]["outcome"] == "tests_failed");
  CHECK(never["error"].get<std::string>().find("exhausted: 3 attempts") == 0);
  CHECK(never["attempts"] == 3);

  const json& syntax = results["syntax"];
  CHECK(syntax["passed"] == true);
  CHECK(syntax["attempts"] == 2);
  CHECK(syntax["feedback"][0]["message"].get<std::string>().find("syntax error: candidate.py:1:") ==
        0);

  const json& hang = hang_results["hang"];
  CHECK(hang["passed"] == false);
  CHECK(hang["attempts"] == 3);
  CHECK(hang["facets"]["verdicts"]["outcome"] == "tests_timeout");
  CHECK(hang["feedback"][0]["message"].get<std::string>().find("tests timed out") == 0);

  const json& b = results["broken-test"];
  CHECK(b["passed"] == false);
  CHECK(b["status"] == "unknown");
  CHECK(b["facets"]["verdicts"]["outcome"] == "validation_error");
  CHECK(b["exit"] == "validate.error");

  const json& c = results["c-twice"];
  CHECK(c["passed"] == true);
  CHECK(c["attempts"] == 2);
  CHECK(c["feedback"][0]["message"].get<std::string>().find("twice(3) == 6") != std::string::npos);

  CHECK(test::children_of_self().empty());
}

TEST_CASE("validate.async: oracle mode runs hidden tests and says so, a private pool works") {
  const char* yaml = R"(
stages:
  validate: { use: validate.async, with: { tests_visibility: oracle, checks: [compile, tests] } }
edges: [ validate.pass -> out, validate.fail -> out, validate.error -> out ]
)";
  json task = add_task("oracle", {});
  task.erase("attempts");
  task["hidden_tests"] = {"assert add(-1, 1) == 0"};
  task["candidate"] = kRight;
  json wrong = task;
  wrong["id"] = "oracle-wrong";
  wrong["candidate"] = "def add(a, b):\n    return a + b + 1\n";
  json visible_only = add_task("no-hidden", {});
  visible_only.erase("attempts");
  visible_only["candidate"] = kRight;
  json none = add_task("no-candidate", {});
  none.erase("attempts");
  auto results = run(yaml, {task, wrong, visible_only, none});
  CHECK(results["oracle"]["status"] == "tests_passed");
  CHECK(results["oracle"]["facets"]["verdicts"]["outcome"] == "oracle_tests_passed");
  CHECK(results["oracle"]["facets"]["verdicts"]["tests_visibility"] == "oracle");
  CHECK(results["oracle"]["facets"]["verdicts"]["candidates"][0]["checks"][1]["oracle"] == true);
  CHECK(results["oracle-wrong"]["status"] == "failed");
  CHECK(results["oracle-wrong"]["facets"]["verdicts"]["outcome"] == "oracle_tests_failed");
  CHECK(results["oracle-wrong"]["passed"] == false);
  // Nothing hidden: the tests check is skipped; the item passes on compile alone, which
  // establishes nothing about correctness: unknown.
  CHECK(results["no-hidden"]["status"] == "unknown");
  CHECK(results["no-hidden"]["facets"]["verdicts"]["outcome"] == "compiled");
  CHECK(results["no-candidate"]["status"] == "error");
  CHECK(results["no-candidate"]["error"].get<std::string>().find("no candidate") !=
        std::string::npos);
}

TEST_CASE("validate.async: many items on a small pool, each gets exactly one result") {
  // Candidates that end on their own (right, wrong, crashing) run under a generous limit; the
  // ones that sleep past it run under a short one, on the same small pool.
  std::vector<json> ending, sleeping;
  for (int i = 0; i < 24; ++i) {
    json t = add_task("t" + std::to_string(i), {});
    t.erase("attempts");
    switch (i % 4) {
      case 0:
        t["candidate"] = kRight;
        break;
      case 1:
        t["candidate"] = kWrong;
        break;
      case 2:
        t["candidate"] = "def add(a, b):\n    import time\n    time.sleep(60)\n";
        break;
      case 3:
        t["candidate"] = "import os\nos._exit(1)\n";
        break;
    }
    (i % 4 == 2 ? sleeping : ending).push_back(t);
  }
  const auto yaml = [](int timeout_ms) {
    return R"(
resources:
  box: { use: sandbox.bwrap, with: { workers: 3 } }
stages:
  validate: { use: validate.async, with: { sandbox: box, checks: [tests], timeout_ms: )" +
           std::to_string(timeout_ms) + R"( } }
edges: [ validate.pass -> out, validate.fail -> out, validate.error -> out ]
max_in_flight: 16
)";
  };
  auto results = run(yaml(kFinishMs), ending);
  REQUIRE(results.size() == 18);
  results.merge(run(yaml(kHangMs), sleeping));
  REQUIRE(results.size() == 24);
  for (int i = 0; i < 24; ++i) {
    const json& r = results["t" + std::to_string(i)];
    INFO(r.dump());
    CHECK(r["passed"] == (i % 4 == 0));
    if (i % 4 != 0) CHECK(r["status"] == "failed");
    if (i % 4 == 2) CHECK(r["facets"]["verdicts"]["outcome"] == "tests_timeout");
    if (i % 4 == 1 || i % 4 == 3) CHECK(r["facets"]["verdicts"]["outcome"] == "tests_failed");
  }
  CHECK(test::children_of_self().empty());
  if (test::is_root()) CHECK(test::processes_of_uids(test::sandbox_uid_base(), 64).empty());
}

TEST_CASE("validate.async: configuration errors are reported before anything runs") {
  const graph::Registry reg = registry();
  const auto error_of = [&](const std::string& yaml) -> std::string {
    try {
      test::load_text(yaml, reg);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(error_of("stages: { v: { use: validate.async, with: { checks: [syntax, lint] } } }\n"
                      "edges: [ v.pass -> out, v.fail -> out, v.error -> out ]\n"),
             Catch::Contains("lint") && Catch::Contains("compile"));
  CHECK_THAT(error_of("stages: { v: { use: validate.async, with: { sandbox: nope } } }\n"
                      "edges: [ v.pass -> out, v.fail -> out, v.error -> out ]\n"),
             Catch::Contains("nope"));
  CHECK_THAT(error_of("stages: { v: { use: validate.async, with: { tests_visibility: hidden } } }\n"
                      "edges: [ v.pass -> out, v.fail -> out, v.error -> out ]\n"),
             Catch::Contains("oracle"));
  CHECK_THAT(error_of("resources: { box: { use: sandbox.bwrap, with: { memory_mb: 1 } } }\n"
                      "stages: { v: { use: validate.async, with: { sandbox: box } } }\n"
                      "edges: [ v.pass -> out, v.fail -> out, v.error -> out ]\n"),
             Catch::Contains("memory_mb"));
  CHECK_THAT(error_of("stages: { v: { use: validate.async } }\nedges: [ v.pass -> out ]\n"),
             Catch::Contains("fail"));
}

TEST_CASE("validate.async: an unknown proof's spec is tested, a tie goes back as feedback") {
  // The issue's tri_max: "impossible" on ties passes tests without ties and Z3 cannot decide
  // the string return. With spec_test (the default) a tie refutes it and the retry gets the
  // counterexample; with spec_test: false it passes as tests_passed, as before.
  const std::string impossible =
      "def tri_max(a, b, c):\n    if a == b or b == c or a == c:\n        return 'impossible'\n"
      "    return max(a, b, c)\n";
  const std::string sorted = "def tri_max(a, b, c):\n    return sorted([a, b, c])[-1]\n";
  const json task = {{"id", "tri"},
                     {"language", "python"},
                     {"entry_point", "tri_max"},
                     {"signature", "def tri_max(a: int, b: int, c: int) -> int:"},
                     {"spec", {{"ensures", {"result == a or result == b or result == c"}}}},
                     {"tests", {"assert tri_max(1, 2, 3) == 3", "assert tri_max(5, 1, 2) == 5"}},
                     {"attempts", {impossible, sorted}}};
  auto pipeline = [](const std::string& spec_test) {
    return R"(
resources:
  box: { use: sandbox.bwrap, with: { workers: 2, wall_ms: 10000 } }
stages:
  gen: { use: test.candidates }
  prove: { use: constrain.z3, with: { timeout_ms: 20000 } }
  validate: { use: validate.async, with: { sandbox: box, checks: [syntax, compile, spec, tests],
                                           spec_test: )" +
           spec_test + R"(, spec_test_inputs: 50 } }
edges:
  - gen -> prove -> validate
  - { from: validate.fail, to: gen, back_edge: true, max_attempts: 3 }
  - validate.pass -> out
  - validate.error -> out
)";
  };
  const json tested = run(pipeline("true"), {task})["tri"];
  INFO(tested.dump(2));
  CHECK(tested["status"] == "tests_passed");
  CHECK(tested["attempts"] == 2);
  REQUIRE(tested["history"].size() == 1);
  const json& first = tested["history"][0]["facets"];
  CHECK(first["verdicts"]["outcome"] == "spec_refuted");
  CHECK(first["proof"]["decided"] == "refuted by testing (50 inputs)");
  REQUIRE(tested["feedback"].size() == 1);
  CHECK_THAT(tested["feedback"][0]["message"].get<std::string>(),
             Catch::Contains("counterexample: \"tri_max(a=0, b=0, c=0) returned 'impossible'"));
  CHECK(tested["facets"]["proof"]["decided"] == "undecided after 50 inputs");

  const json untested = run(pipeline("false"), {task})["tri"];
  CHECK(untested["status"] == "tests_passed");
  CHECK(untested["attempts"] == 1);
  CHECK(untested["facets"]["proof"]["decided"] == "undecided (not tested)");
}
