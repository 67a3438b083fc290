// Testing a spec where the proof is unknown (issue 17): inputs generated from the signature and
// kept inside the requires, deterministic for a seed; the candidate run once in the sandbox
// over all of them; the ensures evaluated on each result; the first violation (a False
// ensures, an exception, a value of the wrong type) refutes with a counterexample worded as
// Z3's; none leaves the spec undecided after N inputs; the check through the proof facet.
#include <catch2/catch.hpp>

#include <deque>
#include <mutex>
#include <set>
#include <string>

#include "solvers/function_contract.h"
#include "stages/facets/proof.h"
#include "stages/validation/checks.h"
#include "stages/validation/spec_inputs.h"
#include "stages/validation/spec_test.h"

using namespace vsynth;
using namespace vsynth::stages::validation;
using solvers::parse_contract;

namespace {

const Checker& checker() {
  static const Checker c{CheckerConfig{}};
  return c;
}

// A program over text kept alive for the rest of the test program (programs hold views).
Program program(std::string text) {
  static std::deque<std::string> kept;
  static std::mutex mu;
  std::lock_guard l(mu);
  kept.push_back(std::move(text));
  Program p;
  p.pieces.push_back(kept.back());
  return p;
}

const solvers::FunctionContract& tri_max() {
  static const solvers::FunctionContract c =
      parse_contract("def tri_max(a: int, b: int, c: int) -> int:", {},
                     {"result == a or result == b or result == c"});
  return c;
}

// The candidate: passes tests without ties, answers a string on every tie.
const std::string kTriMaxImpossible =
    "def tri_max(a, b, c):\n"
    "    if a == b or b == c or a == c:\n"
    "        return 'impossible'\n"
    "    return max(a, b, c)\n";

SpecTestResult test(const std::string& code, const solvers::FunctionContract& contract,
                    uint64_t seed = 1, SpecTestSettings settings = {}) {
  return test_spec(checker(), program(code), contract, seed, settings, SandboxLimits{});
}

std::set<std::string> calls(const solvers::FunctionContract& c, const GeneratedInputs& g) {
  std::set<std::string> out;
  for (const TestInput& in : g.inputs) out.insert(call_text(c.signature, in));
  return out;
}

}  // namespace

TEST_CASE("spec inputs: boundaries first, every input inside the requires, fixed by the seed") {
  const solvers::FunctionContract c = parse_contract(
      "def f(a: int, xs: list[int], flag: bool, s: str) -> int:", {"a >= 0", "len(xs) <= 3"},
      {"result >= 0"});
  const GeneratedInputs g = generate_inputs(c, 7);
  REQUIRE_FALSE(g.untestable);
  REQUIRE(g.inputs.size() == 200);
  CHECK(call_text(c.signature, g.inputs[0]) == "f(a=0, xs=[], flag=False, s='')");
  CHECK(call_text(c.signature, g.inputs[1]) == "f(a=1, xs=[], flag=False, s='')");
  CHECK(g.rejected > 0);                         // negative a were generated and dropped
  CHECK(calls(c, g).size() == g.inputs.size());  // distinct
  for (const TestInput& in : g.inputs) CHECK(satisfies_requires(c, in));
  InputOptions more;
  more.count = 1000;
  bool large = false, long_list = false, flag = false, text = false;
  for (const TestInput& in : generate_inputs(c, 7, more).inputs) {
    CHECK((in[0].value.integer >= 0));  // parenthesised: Catch cannot print an __int128
    CHECK(in[1].value.elements.size() <= 3);
    large = large || in[0].value.integer >= 1000000000;
    long_list = long_list || in[1].value.elements.size() == 3;
    flag = flag || in[2].value.boolean;
    text = text || in[3].text.size() >= 3;
  }
  CHECK(large);
  CHECK(long_list);
  CHECK(flag);
  CHECK(text);
  CHECK(calls(c, generate_inputs(c, 7)) == calls(c, g));
  CHECK(calls(c, generate_inputs(c, 8)) != calls(c, g));  // the random part moves with the seed
}

TEST_CASE("spec inputs: an unsatisfiable requires and ungeneratable types are said so") {
  const solvers::FunctionContract never =
      parse_contract("def f(x: int) -> int:", {"x > x"}, {"result == x"});
  InputOptions o;
  o.count = 10;
  o.max_tries = 300;
  const GeneratedInputs g = generate_inputs(never, 3, o);
  CHECK(g.inputs.empty());
  CHECK(g.tries == 300);  // bounded
  CHECK_FALSE(g.untestable);

  const solvers::FunctionContract real =
      parse_contract("def f(x: float) -> int:", {}, {"result >= 0"});
  const GeneratedInputs r = generate_inputs(real, 3);
  REQUIRE(r.untestable);
  CHECK_THAT(*r.untestable, Catch::Contains("`x: float`"));
  CHECK(r.inputs.empty());
}

TEST_CASE("spec testing: tri_max answering 'impossible' on a tie is refuted by a tie") {
  const SpecTestResult r = test(kTriMaxImpossible, tri_max());
  REQUIRE(r.refuted);
  REQUIRE(r.counterexample);
  const solvers::Counterexample& cx = *r.counterexample;
  REQUIRE(cx.inputs.values.size() == 3);
  const int64_t a = *cx.inputs.values[0].second.integer, b = *cx.inputs.values[1].second.integer,
                c = *cx.inputs.values[2].second.integer;
  CHECK((a == b || b == c || a == c));
  CHECK(cx.text ==
        "tri_max(a=0, b=0, c=0) returned 'impossible', a str where the signature "
        "says int");
  CHECK(cx.failed == "isinstance(result, int)");
  CHECK(r.inputs == 200);  // the candidate ran on every input; the first one broke it
  CHECK_THAT(r.message, Catch::StartsWith("testing input 1 of 200 breaks the spec"));

  // An int, but not one of the three, on ties: the ensures itself fails.
  const SpecTestResult e =
      test("def tri_max(a, b, c):\n    if a == b:\n        return a + 1\n    return max(a, b, c)\n",
           tri_max());
  REQUIRE(e.refuted);
  CHECK(e.counterexample->failed == "result == a or result == b or result == c");
  CHECK(e.counterexample->text ==
        "tri_max(a=0, b=0, c=0) returned 1; ensures result == a or result == b or result == c");
  CHECK(e.counterexample->returned->python() == "1");
}

TEST_CASE("spec testing: a correct candidate leaves the spec undecided after N inputs") {
  const SpecTestResult r =
      test("def tri_max(a, b, c):\n    return sorted([a, b, c])[-1]\n", tri_max());
  CHECK_FALSE(r.refuted);
  CHECK_FALSE(r.counterexample);
  CHECK(r.inputs == 200);
  CHECK(r.message == "no violation in 200 tested inputs");

  SpecTestSettings few;
  few.max_inputs = 12;
  CHECK(test("def tri_max(a, b, c):\n    return max(a, b, c)\n", tri_max(), 1, few).inputs == 12);
}

TEST_CASE("spec testing: requires that nothing satisfies could not be satisfied") {
  const solvers::FunctionContract c =
      parse_contract("def f(x: int, y: int) -> int:", {"x > y", "y > x"}, {"result == x"});
  const SpecTestResult r = test("def f(x, y):\n    return y\n", c);
  CHECK_FALSE(r.refuted);
  CHECK(r.inputs == 0);
  CHECK_THAT(r.message, Catch::StartsWith("could not satisfy requires"));
}

TEST_CASE("spec testing: the same seed finds the same counterexample") {
  // Breaks only on large inputs, which only the random part generates.
  const solvers::FunctionContract c = parse_contract("def f(x: int) -> int:", {}, {"result == x"});
  const std::string code = "def f(x):\n    return x if abs(x) < 1000 else -x\n";
  const SpecTestResult one = test(code, c, 99), two = test(code, c, 99);
  REQUIRE(one.refuted);
  REQUIRE(two.refuted);
  CHECK(one.counterexample->text == two.counterexample->text);
  CHECK(one.message == two.message);
  CHECK(spec_test_seed(graph::Task{"t", {}}, 0) == spec_test_seed(graph::Task{"t", {}}, 0));
  CHECK(spec_test_seed(graph::Task{"t", {}}, 0) != spec_test_seed(graph::Task{"t", {}}, 1));
  CHECK(spec_test_seed(graph::Task{"t", {}}, 0) != spec_test_seed(graph::Task{"u", {}}, 0));
  const nlohmann::json seeded = {{"decode", {{"seed", 5}}}};  // the task's own seed counts
  CHECK(spec_test_seed(graph::Task{"t", seeded}, 0) != spec_test_seed(graph::Task{"t", {}}, 0));
}

TEST_CASE("spec testing: a wrong return type and an exception are violations") {
  const solvers::FunctionContract inc =
      parse_contract("def inc(x: int) -> int:", {}, {"result == x + 1"});
  const SpecTestResult s = test("def inc(x):\n    return str(x + 1)\n", inc);
  REQUIRE(s.refuted);
  CHECK(s.counterexample->text == "inc(x=0) returned '1', a str where the signature says int");

  const solvers::FunctionContract even =
      parse_contract("def even(x: int) -> bool:", {}, {"result == (x % 2 == 0)"});
  const SpecTestResult b = test("def even(x):\n    return 1 - x % 2\n", even);
  REQUIRE(b.refuted);
  CHECK_THAT(b.counterexample->text, Catch::Contains("an int where the signature says bool"));
  CHECK_FALSE(test("def even(x):\n    return x % 2 == 0\n", even).refuted);

  const solvers::FunctionContract div =
      parse_contract("def share(total: int, n: int) -> int:", {"n >= 0"}, {"result <= total"});
  const SpecTestResult d = test("def share(total, n):\n    return total // n\n", div);
  REQUIRE(d.refuted);
  CHECK_THAT(d.counterexample->text,
             Catch::StartsWith("share(total=0, n=0) raised ZeroDivisionError") &&
                 Catch::Contains("candidate.py:2"));
  CHECK(d.counterexample->error.starts_with("ZeroDivisionError"));
}

TEST_CASE("spec testing: a call that hangs costs its time limit, the others still count") {
  const solvers::FunctionContract c = parse_contract("def f(x: int) -> int:", {}, {"result == x"});
  SpecTestSettings s;
  s.budget_ms = 400;  // 10 ms per call
  const SpecTestResult r =
      test("def f(x):\n    while x == 2:\n        pass\n    return x\n", c, 1, s);
  CHECK_FALSE(r.refuted);
  CHECK(r.inputs == 199);  // every input but x = 2
  CHECK_THAT(r.message, Catch::EndsWith("; 1 more could not be evaluated (a call ran past its "
                                        "time limit)"));

  // One that swallows the time limit runs into the sandbox's wall: the calls before it count.
  const SpecTestResult w = test(
      "def f(x):\n    while x == 2:\n        try:\n            while True:\n                pass\n"
      "        except BaseException:\n            pass\n    return x\n",
      c, 1, s);
  CHECK_FALSE(w.refuted);
  CHECK(w.inputs == 3);  // 0, 1, -1
  CHECK_THAT(w.message, Catch::Contains("while calling input 4"));
}

TEST_CASE("spec testing: running out of memory or recursion on a large input is no violation") {
  const solvers::FunctionContract c =
      parse_contract("def f(x: int) -> int:", {}, {"result == abs(x)"});
  const SpecTestResult m = test("def f(x):\n    return len([0] * abs(x))\n", c);
  CHECK_FALSE(m.refuted);
  CHECK(m.inputs > 150);
  CHECK_THAT(m.message, Catch::Contains("on a large input"));
  const SpecTestResult r =
      test("def f(x):\n    return 0 if x == 0 else 1 + f(x - 1 if x > 0 else x + 1)\n", c);
  CHECK_FALSE(r.refuted);
  CHECK_THAT(r.message, Catch::Contains("RecursionError on a large input"));
}

TEST_CASE("spec testing: a violation on a str argument is reported, not believed") {
  // The requires cannot say which strings are valid, so "" may be outside the task.
  const solvers::FunctionContract c =
      parse_contract("def first(s: str) -> int:", {}, {"result >= 0"});
  const SpecTestResult r = test("def first(s):\n    return ord(s[0])\n", c);
  CHECK_FALSE(r.refuted);
  CHECK_THAT(r.message, Catch::StartsWith("no violation believed in 200 tested inputs (first(s='') "
                                          "breaks the spec, but the requires cannot restrict str "
                                          "arguments)"));
}

TEST_CASE("spec check: an unknown proof is tested and a refutation feeds back its input") {
  graph::Item item(graph::Task{"tri", {{"id", "tri"}}}, 0);
  auto& proof = item.emplace<stages::facets::ProofFacet>();
  proof.has_spec = true;
  proof.contract = std::make_shared<const solvers::FunctionContract>(tri_max());
  stages::facets::CandidateProof undecided;
  undecided.message = "line 3: strings are not modelled";
  proof.candidates = {undecided, undecided};
  Program bad = program(kTriMaxImpossible);
  Program good = program("def tri_max(a, b, c):\n    return sorted([a, b, c])[-1]\n");
  good.index = 1;

  const CheckVerdict v = check_spec(item, bad, "python", checker(), {}, SandboxLimits{});
  CHECK(v.status == Status::Fail);
  CHECK(v.kind == "refuted");
  CHECK(v.decided == "refuted by testing (200 inputs)");
  CHECK(v.message ==
        "the spec is refuted: testing input 1 of 200 breaks the spec: it returned a str where "
        "the signature says int\ncounterexample: \"tri_max(a=0, b=0, c=0) returned 'impossible', "
        "a str where the signature says int\"");
  const nlohmann::json j = stages::facets::to_json(proof.candidates[0], 0);
  CHECK(j["verdict"] == "refuted");
  CHECK(j["decided"] == "refuted by testing (200 inputs)");
  CHECK(j["testing"]["proof_message"] == "line 3: strings are not modelled");
  CHECK(j["inputs"]["a"] == "0");

  const CheckVerdict g = check_spec(item, good, "python", checker(), {}, SandboxLimits{});
  CHECK(g.status == Status::Skipped);
  CHECK(g.decided == "undecided after 200 inputs");
  CHECK_THAT(g.message, Catch::EndsWith("; testing: no violation in 200 tested inputs"));
  CHECK(proof.candidates[1].verdict == solvers::Verdict::Unknown);

  // Off, or for another language: the proof alone decides, as before.
  proof.candidates = {undecided};
  SpecTestSettings off;
  off.enabled = false;
  CHECK(check_spec(item, bad, "python", checker(), off, SandboxLimits{}).decided ==
        "undecided (not tested)");
  CHECK(check_spec(item, bad, "c", checker(), {}, SandboxLimits{}).status == Status::Skipped);
  CHECK_FALSE(proof.candidates[0].testing);
}
