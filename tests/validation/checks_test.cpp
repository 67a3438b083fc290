// The validators: syntax errors found with their position, compiler messages, test failures
// reported with the failing assertion, passing candidates passing, timeouts attributed to the
// test that ran, both task schemas (ours and HumanEval's) on the example task files.
#include <catch2/catch.hpp>

#include <deque>
#include <fstream>
#include <mutex>
#include <string>

#include "stages/facets/proof.h"
#include "stages/validation/checks.h"
#include "stages/validation/error.h"
#include "stages/validation/score.h"
#include "stages/validation/task_tests.h"
#include "tests/validation/util.h"

using namespace vsynth;
using namespace vsynth::stages::validation;

namespace {

const Checker& checker() {
  static const Checker c{CheckerConfig{}};
  return c;
}

// A program over text kept alive for the rest of the test program (programs hold views).
Program program(std::string text, std::string prefix = "") {
  static std::deque<std::string> kept;
  static std::mutex mu;
  std::lock_guard l(mu);
  Program p;
  if (!prefix.empty()) {
    kept.push_back(std::move(prefix));
    p.pieces.push_back(kept.back());
  }
  kept.push_back(std::move(text));
  p.pieces.push_back(kept.back());
  return p;
}

graph::Task task(nlohmann::json data) {
  graph::Task t;
  t.id = data.value("id", data.value("task_id", std::string("t")));
  t.data = std::move(data);
  return t;
}

// The line of an example task file whose id (or task_id) is `id`.
graph::Task example_task(const std::string& file, const std::string& id) {
  std::ifstream in(std::string(VSYNTH_SOURCE_DIR) + "/examples/tasks/" + file);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.value("id", j.value("task_id", std::string())) == id) return task(std::move(j));
  }
  FAIL("no task " << id << " in " << file);
  return {};
}

CheckVerdict run_tests(const graph::Task& t, const Program& p, bool oracle = false,
                       SandboxLimits limits = checker().limits()) {
  const TaskTests tt = read_task_tests(t);
  return checker().tests(p, tt, oracle ? tt.hidden : tt.visible, oracle, limits);
}

}  // namespace

TEST_CASE("syntax: errors are found with their line, column and line text") {
  SECTION("python: an unclosed call") {
    const CheckVerdict v =
        checker().syntax(program("def f(x):\n    return g(x\n\ndef h():\n    pass\n"), "python");
    CHECK(v.status == Status::Fail);
    CHECK(v.kind == "syntax_error");
    CHECK(v.message.find("candidate.py:2:") == 0);
    CHECK(v.message.find("return g(x") != std::string::npos);
  }
  SECTION("c: a missing semicolon is a MISSING node") {
    const CheckVerdict v = checker().syntax(program("int f(int x) {\n  return x + 1\n}\n"), "c");
    CHECK(v.status == Status::Fail);
    CHECK(v.message.find("candidate.c:2:") == 0);
    CHECK(v.message.find("missing `;`") != std::string::npos);
  }
  SECTION("positions count across the pieces of a program (prompt + completion)") {
    const CheckVerdict v = checker().syntax(
        program("    return [x for x in xs if\n", "def f(xs):\n    \"\"\"Doc.\"\"\"\n"), "python");
    CHECK(v.status == Status::Fail);
    CHECK(v.message.find("candidate.py:3:") == 0);
  }
  SECTION("clean programs pass") {
    CHECK(checker().syntax(program("def f(x):\n    return x + 1\n"), "python").status ==
          Status::Pass);
    CHECK(checker().syntax(program("int f(int x) { return x + 1; }\n"), "c").status ==
          Status::Pass);
    CHECK(checker().syntax(program("fn f() -> i32 { 1 }\n"), "rust").status == Status::Pass);
  }
}

TEST_CASE("compile: py_compile and cc messages say where and what") {
  const SandboxLimits lim = checker().limits();
  SECTION("python syntax error") {
    const CheckVerdict v = checker().compile(program("def f(:\n    pass\n"), "python", lim);
    CHECK(v.status == Status::Fail);
    CHECK(v.kind == "compile_error");
    CHECK(v.message.find("candidate.py:1: SyntaxError") == 0);
  }
  SECTION("python: what the grammar accepts but the compiler refuses") {
    const std::string code = "x = 1\nreturn x\n";
    CHECK(checker().syntax(program(code), "python").status == Status::Pass);
    const CheckVerdict v = checker().compile(program(code), "python", lim);
    CHECK(v.status == Status::Fail);
    CHECK(v.message.find("'return' outside function") != std::string::npos);
  }
  SECTION("c: a type error and an undeclared function") {
    CheckVerdict v = checker().compile(program("int f(void) { return \"s\" * 2; }\n"), "c", lim);
    CHECK(v.status == Status::Fail);
    CHECK(v.message.find("candidate.c:1:") == 0);
    CHECK(v.message.find("error:") != std::string::npos);
    v = checker().compile(program("int f(int x) { return g(x); }\n"), "c", lim);
    CHECK(v.status == Status::Fail);
    CHECK(v.message.find("implicit declaration") != std::string::npos);
  }
  SECTION("passing programs pass; C gets the standard headers as the tasks promise") {
    CHECK(checker().compile(program("def f(x):\n    return x\n"), "python", lim).status ==
          Status::Pass);
    CHECK(
        checker().compile(program("bool f(size_t n) { return n < INT_MAX; }\n"), "c", lim).status ==
        Status::Pass);
  }
  SECTION("other languages are skipped") {
    CHECK(checker().compile(program("package main\n"), "go", lim).status == Status::Skipped);
  }
}

TEST_CASE("tests: python statements (our schema) report the failing assertion with values") {
  const graph::Task t = task({{"id", "py-add"},
                              {"language", "python"},
                              {"entry_point", "add"},
                              {"tests", {"assert add(1, 2) == 3", "assert add(2, 3) == 5"}},
                              {"hidden_tests", {"assert add(-1, 1) == 0"}}});
  SECTION("a passing candidate passes") {
    const CheckVerdict v = run_tests(t, program("def add(a, b):\n    return a + b\n"));
    CHECK(v.status == Status::Pass);
    CHECK(v.tests == 2);
    CHECK_FALSE(v.oracle);
  }
  SECTION("a wrong candidate fails on the first failing assertion, with the value") {
    const CheckVerdict v = run_tests(t, program("def add(a, b):\n    return a * b\n"));
    CHECK(v.status == Status::Fail);
    CHECK(v.kind == "assertion");
    CHECK(v.message.find("assert add(1, 2) == 3") != std::string::npos);
    CHECK(v.message.find("add(1, 2) = 2") != std::string::npos);
  }
  SECTION("an exception names the candidate's line") {
    const CheckVerdict v = run_tests(t, program("def add(a, b):\n    return a / 0\n"));
    CHECK(v.status == Status::Fail);
    CHECK(v.kind == "exception");
    CHECK(v.message.find("ZeroDivisionError") != std::string::npos);
    CHECK(v.message.find("candidate.py:2") != std::string::npos);
  }
  SECTION("a failing check's record carries the end of what the program printed") {
    const CheckVerdict v = run_tests(
        t, program("import sys\nprint('from stdout')\nprint('from stderr', file=sys.stderr)\n"
                   "def add(a, b):\n    return a * b\n"));
    REQUIRE(v.status == Status::Fail);
    const nlohmann::json j = v.to_json();
    CHECK(j.value("stdout", "").find("from stdout") != std::string::npos);
    CHECK(j.value("stderr", "").find("from stderr") != std::string::npos);
  }
  SECTION("a passing check's record leaves the output out") {
    const CheckVerdict v =
        run_tests(t, program("print('chatty')\ndef add(a, b):\n    return a + b\n"));
    REQUIRE(v.status == Status::Pass);
    CHECK_FALSE(v.to_json().contains("stdout"));
  }
  SECTION("exit() while loading is a failure, not a pass") {
    const CheckVerdict v = run_tests(t, program("import sys\nsys.exit(0)\n"));
    CHECK(v.status == Status::Fail);
    CHECK(v.kind == "exit");
  }
  SECTION("os._exit before the report is a crash") {
    const CheckVerdict v = run_tests(t, program("import os\nos._exit(0)\n"));
    CHECK(v.status == Status::Fail);
    CHECK(v.kind == "crash");
  }
  SECTION("a timeout names the test that was running") {
    SandboxLimits lim = checker().limits();
    lim.wall_ms = 2000;
    const CheckVerdict v =
        run_tests(t, program("def add(a, b):\n    while a == 2:\n        pass\n    return a + b\n"),
                  false, lim);
    CHECK(v.status == Status::Fail);
    CHECK(v.kind == "timeout");
    CHECK(v.message.find("assert add(2, 3) == 5") != std::string::npos);
    REQUIRE(v.run);
    CHECK(v.run->timed_out);
  }
  SECTION("hidden tests run only when asked (oracle / scoring)") {
    const CheckVerdict v =
        run_tests(t, program("def add(a, b):\n    return a + b if a > 0 else 9\n"),
                  /*oracle=*/true);
    CHECK(v.status == Status::Fail);
    CHECK(v.oracle);
    CHECK(v.message.find("add(-1, 1) = 9") != std::string::npos);
  }
  SECTION("a broken test is an error of the task, not of the candidate") {
    const graph::Task bad = task({{"id", "bad"}, {"tests", {"assert add(1,"}}});
    const CheckVerdict v = run_tests(bad, program("def add(a, b):\n    return a + b\n"));
    CHECK(v.status == Status::Error);
    CHECK(v.kind == "test_error");
  }
  CHECK(test::children_of_self().empty());
}

TEST_CASE("tests: HumanEval tasks use the docstring examples, `test` is hidden") {
  const graph::Task t = example_task("humaneval-style.jsonl", "vsynth-he/0");
  const std::string prompt = t.data["prompt"];
  const std::string solution = t.data["canonical_solution"];
  const TaskTests tt = read_task_tests(t);
  CHECK(tt.visible.kind == TestsKind::Doctest);
  CHECK(tt.hidden.kind == TestsKind::Script);
  CHECK(tt.hidden.origin == "test");

  const CheckVerdict good = run_tests(t, program(solution, prompt));
  CHECK(good.status == Status::Pass);
  CHECK(good.tests == 2);  // the two >>> examples
  CHECK(score_hidden(t, {prompt, solution}, checker()).status == Status::Pass);

  // Counts every value as a new run: wrong on [1, 1, 2, 2, 2, 1].
  const CheckVerdict bad = run_tests(t, program("    return len(xs)\n", prompt));
  CHECK(bad.status == Status::Fail);
  CHECK(bad.message.find("count_runs([1, 1, 2, 2, 2, 1])") != std::string::npos);
  CHECK(bad.message.find("expected: 3") != std::string::npos);
  CHECK(bad.message.find("got: 6") != std::string::npos);
  const CheckVerdict hidden = score_hidden(t, {prompt, "    return len(xs)\n"}, checker());
  CHECK(hidden.status == Status::Fail);
  CHECK(hidden.oracle);
  // check() stops at its first failing assert, with the candidate's value.
  CHECK(hidden.message.find("assert candidate([1, 1, 2, 2, 2, 1]) == 3") != std::string::npos);
  CHECK(hidden.message.find("candidate([1, 1, 2, 2, 2, 1]) = 6") != std::string::npos);
}

TEST_CASE("tests: every example task's reference passes its visible and hidden tests") {
  std::ifstream in(std::string(VSYNTH_SOURCE_DIR) + "/examples/tasks/synthesize.jsonl");
  std::string line;
  int python = 0, c = 0;
  // A sample of both languages keeps the test short: every fourth task.
  for (int i = 0; std::getline(in, line); ++i) {
    if (i % 4 != 0) continue;
    const graph::Task t = task(nlohmann::json::parse(line));
    const std::string reference = t.data["reference"];
    INFO(t.id);
    const CheckVerdict v = run_tests(t, program(reference));
    CHECK(v.status == Status::Pass);
    INFO(v.message);
    CHECK(score_hidden(t, {reference}, checker()).status == Status::Pass);
    (t.data["language"] == "c" ? c : python) += 1;
  }
  CHECK(python > 0);
  CHECK(c > 0);
}

TEST_CASE("tests: C expression tests report the failing assertion") {
  const graph::Task t = example_task("synthesize.jsonl", "c-clamp");
  SECTION("a wrong candidate") {
    const CheckVerdict v =
        run_tests(t, program("int clamp(int x, int lo, int hi) { return x; }\n"));
    CHECK(v.status == Status::Fail);
    CHECK(v.kind == "assertion");
    CHECK(v.message == "assertion failed: clamp(5, 0, 3) == 3 (test 1:1)");
  }
  SECTION("a candidate that does not define the function") {
    const CheckVerdict v = run_tests(t, program("int clamp2(int x) { return x; }\n"));
    CHECK(v.status == Status::Fail);
    CHECK(v.kind == "test_compile");
    CHECK(v.message.find("clamp") != std::string::npos);
  }
  SECTION("a candidate with its own main and NDEBUG is still tested") {
    const CheckVerdict v = run_tests(t, program("#define NDEBUG\n#include <assert.h>\n"
                                                "int clamp(int x, int lo, int hi) { return lo; }\n"
                                                "int main(void) { return 0; }\n"));
    CHECK(v.status == Status::Fail);
    CHECK(v.kind == "assertion");
  }
  SECTION("a crash is reported with the test that ran") {
    const CheckVerdict v =
        run_tests(t, program("int clamp(int x, int lo, int hi) { return *(volatile int *)0; }\n"));
    CHECK(v.status == Status::Fail);
    CHECK(v.message.find("SIGSEGV") != std::string::npos);
    CHECK(v.message.find("clamp(5, 0, 3) == 3") != std::string::npos);
  }
  SECTION("statements and scripts") {
    const graph::Task s =
        task({{"id", "c-s"},
              {"language", "c"},
              {"tests", {"int r = twice(4);\nassert(r == 8);"}},
              {"hidden_tests", "int main(void) { assert(twice(0) == 0); return 0; }\n"}});
    const Program p = program("int twice(int x) { return 2 * x; }\n");
    CHECK(run_tests(s, p).status == Status::Pass);
    CHECK(run_tests(s, p, /*oracle=*/true).status == Status::Pass);
    const CheckVerdict bad =
        run_tests(s, program("int twice(int x) { return 2 * x + 1; }\n"), true);
    CHECK(bad.status == Status::Fail);
    CHECK(bad.message.find("twice(0) == 0") != std::string::npos);
  }
}

TEST_CASE("tasks: both schemas are read, a malformed field is named") {
  SECTION("ours") {
    const TaskTests t = read_task_tests(task({{"id", "a"},
                                              {"language", "C"},
                                              {"tests", {"f(1) == 2"}},
                                              {"hidden_tests", {"f(2) == 3"}}}));
    CHECK(t.language == "c");
    CHECK(t.visible.kind == TestsKind::Statements);
    CHECK(t.visible.statements.size() == 1);
    CHECK(t.hidden.origin == "hidden_tests");
  }
  SECTION("language from the path, else python") {
    CHECK(read_task_tests(task({{"id", "a"}, {"path", "x/y.rs"}})).language == "rust");
    CHECK(read_task_tests(task({{"id", "a"}})).language == "python");
  }
  SECTION("MBPP's test_list is hidden") {
    const TaskTests t =
        read_task_tests(task({{"task_id", "Mbpp/3"}, {"test_list", {"assert f(1) == 1"}}}));
    CHECK(t.visible.empty());
    CHECK(t.hidden.kind == TestsKind::Statements);
  }
  SECTION("errors") {
    CHECK_THROWS_WITH(
        read_task_tests(task({{"id", "a"}, {"tests", 3}})),
        Catch::Contains("task `a`") && Catch::Contains("`tests`") && Catch::Contains("number"));
    CHECK_THROWS_WITH(read_task_tests(task({{"id", "a"}, {"tests", {"ok", 1}}})),
                      Catch::Contains("`tests[1]`"));
    CHECK_THROWS_WITH(read_task_tests(task({{"id", "a"}, {"language", "cobol"}})),
                      Catch::Contains("unknown language `cobol`") && Catch::Contains("python"));
  }
  SECTION("doctest examples") {
    CHECK(has_doctest_examples("def f():\n    \"\"\"\n    >>> f()\n    1\n    \"\"\"\n"));
    CHECK_FALSE(has_doctest_examples("def f():\n    \"\"\"x >>> y\"\"\"\n"));
  }
}

namespace {
// A facet that only calls itself `proof`: not constrain.z3's (stages/facets/proof.h).
struct ForeignProof : graph::Facet {
  static constexpr std::string_view kName = "proof";
  nlohmann::json to_json() const override { return {{"verdict", "verified"}}; }
};

vsynth::stages::facets::CandidateProof proof_of(vsynth::solvers::Verdict verdict,
                                                std::string counterexample = "") {
  vsynth::stages::facets::CandidateProof p;
  p.verdict = verdict;
  p.message = "the message";
  if (!counterexample.empty()) {
    p.counterexample.emplace();
    p.counterexample->text = std::move(counterexample);
  }
  return p;
}
}  // namespace

TEST_CASE("spec: the proof facet decides, without it the check is skipped") {
  using vsynth::solvers::Verdict;
  graph::Item item(task({{"id", "s"}}), 0);
  CHECK(Checker::spec(item).status == Status::Skipped);
  // Read as the typed facet, never through its JSON: a stranger's `proof` decides nothing.
  item.emplace<ForeignProof>();
  CHECK(Checker::spec(item).status == Status::Skipped);

  auto& proof = item.emplace<vsynth::stages::facets::ProofFacet>();
  proof.has_spec = true;
  proof.candidates = {proof_of(Verdict::Verified)};
  CHECK(Checker::spec(item).status == Status::Pass);
  CHECK(Checker::spec(item, 0).status == Status::Pass);

  proof.candidates = {proof_of(Verdict::Refuted, "f(x=-1) returned 0; ensures result > 0")};
  const CheckVerdict v = Checker::spec(item, 0);
  CHECK(v.status == Status::Fail);
  CHECK(v.kind == "refuted");
  CHECK(v.message ==
        "the spec is refuted: the message\n"
        "counterexample: \"f(x=-1) returned 0; ensures result > 0\"");
  CHECK(Checker::spec(item).status == Status::Fail);  // the item's summary: one candidate

  proof.candidates = {proof_of(Verdict::Unknown)};
  CHECK(Checker::spec(item, 0).status == Status::Skipped);
  proof.has_spec = false;  // no spec: nothing was proved
  proof.candidates.clear();
  CHECK(Checker::spec(item).status == Status::Skipped);
}

TEST_CASE("tail_output keeps the end of long output and says how much it cut") {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string t = tail_output(text, 3, 1000);
  CHECK(t.rfind("(", 0) == 0);
  CHECK(t.find("earlier bytes) ...\nline 97\nline 98\nline 99") != std::string::npos);
  CHECK(t.substr(t.size() - 7) == "line 99");
  CHECK(tail_output("short\n") == "short");
  CHECK(tail_output(std::string(5000, 'x'), 20, 100).size() < 130);
  // Never starts inside a UTF-8 sequence.
  const std::string u = tail_output("\xC3\xA9\xC3\xA9\xC3\xA9", 20, 3);
  CHECK(u.substr(u.size() - 2) == "\xC3\xA9");
  CHECK(u[u.size() - 3] == '\n');
}

TEST_CASE("trim_message keeps the head of long output and says how much it cut") {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string t = trim_message(text, 3, 1000);
  CHECK(t.find("line 0\nline 1\nline 2\n... (") == 0);
  CHECK(trim_message(std::string(5000, 'x'), 20, 100).size() < 130);
  // Never cuts a UTF-8 sequence in half.
  const std::string u = trim_message("\xC3\xA9\xC3\xA9\xC3\xA9", 20, 3);
  CHECK(u.rfind("\xC3\xA9", 0) == 0);
  CHECK(u[2] == '\n');
}
