// Function contracts: verified / refuted / unknown outcomes, counterexample text, cores.
#include <catch2/catch.hpp>

#include <regex>
#include <thread>

#include "solvers/function_contract.h"
#include "solvers/spec_parser.h"

using namespace vsynth::solvers;

namespace {

// Paths are written as Python text over the signature's parameters, as stages/constraint
// would produce them from the AST.
struct Fn {
  FunctionContract contract;
  Expr e(std::string_view text) const { return parse_expression(text, contract.signature.params); }
  ReturnPath ret(std::string_view cond, std::string_view value) const {
    return {e(cond), e(value), ""};
  }
};

Fn clamp(std::vector<std::string> requires_texts = {"lo <= hi"}) {
  return {parse_contract("def clamp(x: int, lo: int, hi: int) -> int:", requires_texts,
                         {"lo <= result <= hi"})};
}

std::vector<ReturnPath> clamp_paths(const Fn& f, std::string_view buggy_high = "hi") {
  return {f.ret("x < lo", "lo"), f.ret("not x < lo and x > hi", buggy_high),
          f.ret("not x < lo and not x > hi", "x")};
}

}  // namespace

TEST_CASE("clamp: correct code verifies, and the proof names the requires it needs", "[contract]") {
  Fn f = clamp({"lo <= hi", "x > -1000000"});
  CheckOutcome o = check_function_contract(f.contract, clamp_paths(f));
  CHECK(o.verdict == Verdict::Verified);
  CHECK(o.reason.empty());
  CHECK(o.used_requires == std::vector<std::string>{"lo <= hi"});
  CHECK(o.caveats.empty());
  CHECK_FALSE(o.counterexample);
}

TEST_CASE("clamp: a buggy path is refuted with a readable counterexample", "[contract]") {
  // Pin the inputs so that the model, and so the text, is fully determined.
  Fn f = clamp({"lo <= hi", "lo == 0 and hi == 3 and x == 5"});
  CheckOutcome o = check_function_contract(f.contract, clamp_paths(f, "x"));
  REQUIRE(o.verdict == Verdict::Refuted);
  REQUIRE(o.counterexample);
  const Counterexample& cx = *o.counterexample;
  CHECK(cx.text == "clamp(x=5, lo=0, hi=3) returned 5; ensures result <= hi");
  CHECK(cx.path == 1);
  CHECK(cx.failed == "result <= hi");
  REQUIRE(cx.returned);
  CHECK(cx.returned->integer == 5);
  CHECK(cx.inputs.find("x")->integer == 5);

  // Unpinned: whatever model Z3 picks, it is a real counterexample for that path.
  Fn g = clamp();
  ContractChecker checker(g.contract);
  CheckOutcome u = checker.check_return(g.e("not x < lo and x > hi"), g.e("x"), "line 4");
  REQUIRE(u.verdict == Verdict::Refuted);
  std::smatch m;
  const std::string text = u.counterexample->text;
  REQUIRE(std::regex_match(
      text, m,
      std::regex(
          R"(clamp\(x=(-?\d+), lo=(-?\d+), hi=(-?\d+)\) returned (-?\d+); ensures result <= hi \(at line 4\))")));
  const long x = std::stol(m[1]), lo = std::stol(m[2]), hi = std::stol(m[3]), r = std::stol(m[4]);
  CHECK(r == x);
  CHECK(x > hi);
  CHECK(lo <= hi);
  CHECK(x >= lo);
}

TEST_CASE("abs and max3: verified, and their classic bugs refuted", "[contract]") {
  Fn abs_f{parse_contract("def my_abs(x: int) -> int", {},
                          {"result >= 0", "result == x or result == -x"})};
  CHECK(
      check_function_contract(abs_f.contract, {abs_f.ret("x >= 0", "x"), abs_f.ret("x < 0", "-x")})
          .verdict == Verdict::Verified);
  CheckOutcome bad =
      check_function_contract(abs_f.contract, {abs_f.ret("x > 0", "x"), abs_f.ret("x <= 0", "x")});
  REQUIRE(bad.verdict == Verdict::Refuted);
  CHECK(bad.counterexample->path == 1);
  CHECK(bad.counterexample->failed == "result >= 0");
  CHECK(std::regex_match(bad.counterexample->text,
                         std::regex(R"(my_abs\(x=-\d+\) returned -\d+; ensures result >= 0)")));

  Fn max3{parse_contract("def max3(a: int, b: int, c: int) -> int", {},
                         {"result >= a and result >= b and result >= c", "result in [a, b, c]"})};
  std::vector<ReturnPath> good{max3.ret("a >= b and a >= c", "a"),
                               max3.ret("not (a >= b and a >= c) and b >= c", "b"),
                               max3.ret("not (a >= b and a >= c) and not b >= c", "c")};
  CheckOutcome ok = check_function_contract(max3.contract, good);
  CHECK(ok.verdict == Verdict::Verified);
  CHECK(ok.used_requires.empty());
  // Classic bug: compares a with b only.
  std::vector<ReturnPath> buggy{max3.ret("a >= b", "a"), max3.ret("not a >= b and b >= c", "b"),
                                max3.ret("not a >= b and not b >= c", "c")};
  CheckOutcome no = check_function_contract(max3.contract, buggy);
  REQUIRE(no.verdict == Verdict::Refuted);
  CHECK(no.counterexample->path == 0);
  CHECK(no.counterexample->failed == "result >= c");
  CHECK(max3.e("max(a, b, c) == a")->op == Op::Eq);  // max() also parses in code paths
  CHECK(check_function_contract(max3.contract, {max3.ret("True", "max(a, b, c)")}).verdict ==
        Verdict::Verified);
}

TEST_CASE("exceptions in the returned value or in the ensures are counterexamples", "[contract]") {
  Fn div{parse_contract("def div(a: int, b: int) -> int", {"a == 7"}, {"True"})};
  CheckOutcome o = check_function_contract(div.contract, {div.ret("True", "a // b")});
  REQUIRE(o.verdict == Verdict::Refuted);
  CHECK(o.counterexample->text ==
        "div(a=7, b=0) raised ZeroDivisionError: integer division or modulo by zero in `a // b`");
  CHECK_FALSE(o.counterexample->returned);
  // Guarded division is fine.
  CHECK(check_function_contract(div.contract, {div.ret("b != 0", "a // b"), div.ret("b == 0", "0")})
            .verdict == Verdict::Verified);

  Fn first{
      parse_contract("def first(xs: list[int]) -> int", {"len(xs) == 0"}, {"result == xs[0]"})};
  CheckOutcome f = check_function_contract(first.contract, {first.ret("True", "0")});
  REQUIRE(f.verdict == Verdict::Refuted);
  CHECK(f.counterexample->text ==
        "first(xs=[]) returned 0; ensures result == xs[0] raised IndexError: list index out of "
        "range in `xs[0]`");
}

TEST_CASE("assertions are checked under their path condition", "[contract]") {
  Fn f{parse_contract("def f(x: int, y: int) -> int", {"y == 0"}, {})};
  ContractChecker checker(f.contract);
  CHECK(checker.check_assert(f.e("x > 0"), f.e("x >= 0")).verdict == Verdict::Verified);
  CheckOutcome o = checker.check_assert(f.e("x < 0"), f.e("x >= 0"), "line 3");
  REQUIRE(o.verdict == Verdict::Refuted);
  CHECK(std::regex_match(o.counterexample->text,
                         std::regex(R"(f\(x=-\d+, y=0\): assert x >= 0 failed \(at line 3\))")));
  CheckOutcome r = checker.check_assert(f.e("x == 1"), f.e("x // y == 0"));
  REQUIRE(r.verdict == Verdict::Refuted);
  CHECK(r.counterexample->text ==
        "f(x=1, y=0): assert x // y == 0 raised ZeroDivisionError: integer division or modulo "
        "by zero in `x // y`");
}

TEST_CASE("checks are incremental: each one leaves the session as it found it", "[contract]") {
  Fn f = clamp();
  ContractChecker checker(f.contract);
  for (int round = 0; round < 20; ++round) {
    CHECK(checker.check_return(f.e("x > hi"), f.e("x")).verdict == Verdict::Refuted);
    CHECK(checker.check_return(f.e("x > hi"), f.e("hi")).verdict == Verdict::Verified);
    CHECK(checker.solver().depth() == 0);
  }
  // The requires stay in force at depth 0 (no path condition: every input).
  CHECK(checker.check_return(nullptr, f.e("lo")).verdict == Verdict::Verified);
}

TEST_CASE("nonlinear arithmetic with a 1 ms timeout is unknown, never a verdict", "[contract]") {
  Fn f{parse_contract("def fermat(x: int, y: int, z: int) -> int", {"x > 0", "y > 0", "z > 0"},
                      {"x * x * x + y * y * y != z * z * z"})};
  ContractOptions o;
  o.timeout_ms = 1;
  CheckOutcome u = check_function_contract(f.contract, {f.ret("True", "0")}, o);
  CHECK(u.verdict == Verdict::Unknown);
  CHECK_FALSE(u.reason.empty());
  CHECK_FALSE(u.counterexample);
}

TEST_CASE("unsupported constructs give unknown, unless the proof does not need them",
          "[contract]") {
  Fn f{parse_contract("def f(xs: list[int]) -> int", {}, {"sorted(xs) == xs"})};
  CheckOutcome u = check_function_contract(f.contract, {f.ret("True", "0")});
  CHECK(u.verdict == Verdict::Unknown);
  CHECK(u.reason.find("sorted() is not modelled") != std::string::npos);

  Fn g{parse_contract("def g(xs: list[int]) -> int", {"sorted(xs) == xs"}, {"result >= 0"})};
  CheckOutcome v = check_function_contract(g.contract, {g.ret("True", "0")});
  CHECK(v.verdict == Verdict::Verified);
  // A refutation that depends on an unmodelled requires is not trusted.
  CheckOutcome w = check_function_contract(g.contract, {g.ret("True", "-1")});
  CHECK(w.verdict == Verdict::Unknown);
}

TEST_CASE("lists: bounded proofs with a caveat, and refutations with list inputs", "[contract]") {
  Fn total{parse_contract("def total(xs: list[int]) -> int", {"all(x >= 0 for x in xs)"},
                          {"result >= 0"})};
  CheckOutcome o = check_function_contract(total.contract, {total.ret("True", "sum(xs)")});
  CHECK(o.verdict == Verdict::Verified);
  CHECK(o.caveats == std::vector<std::string>{"lists are modelled up to length 8"});

  Fn loose{parse_contract("def total(xs: list[int]) -> int", {"len(xs) <= 2"}, {"result >= 0"})};
  CheckOutcome r = check_function_contract(loose.contract, {loose.ret("True", "sum(xs)")});
  REQUIRE(r.verdict == Verdict::Refuted);
  CHECK(std::regex_match(
      r.counterexample->text,
      std::regex(R"(total\(xs=\[(-?\d+(, )?)+\]\) returned -\d+; ensures result >= 0)")));

  Fn last{parse_contract("def last(xs: list[int]) -> int", {"len(xs) > 0"},
                         {"result == xs[len(xs) - 1]", "result in xs"})};
  CHECK(check_function_contract(last.contract, {last.ret("True", "xs[-1]")}).verdict ==
        Verdict::Verified);
}

TEST_CASE("floats verify over exact reals, with a caveat", "[contract]") {
  Fn half{parse_contract("def half(x: float) -> float", {}, {"result * 2 == x"})};
  CheckOutcome o = check_function_contract(half.contract, {half.ret("True", "x / 2")});
  CHECK(o.verdict == Verdict::Verified);
  REQUIRE(o.caveats.size() == 1);
  CHECK(o.caveats[0].find("exact real arithmetic") != std::string::npos);
}

TEST_CASE("unsatisfiable requires verify vacuously and say so", "[contract]") {
  Fn f = clamp({"lo > hi", "lo < hi"});
  CheckOutcome o = check_function_contract(f.contract, {f.ret("True", "x")});
  CHECK(o.verdict == Verdict::Verified);
  CHECK(std::find(o.caveats.begin(), o.caveats.end(),
                  "requires are unsatisfiable: every path verifies vacuously") != o.caveats.end());
}

TEST_CASE("return values must match the result sort", "[contract]") {
  Fn f = clamp();
  ContractChecker checker(f.contract);
  CHECK_THROWS_AS(checker.check_return(f.e("True"), f.e("x > 0")), SolverError);
  CHECK_THROWS_AS(checker.check_return(f.e("True"), nullptr), SolverError);
  CHECK_THROWS_AS(checker.check_return(f.e("x"), f.e("x")), SolverError);  // int path condition
}

TEST_CASE("the forward-check configuration (cores off) gives the same verdicts", "[contract]") {
  Fn f = clamp();
  ContractOptions fast;
  fast.cores = false;
  ContractChecker checker(f.contract, fast);
  CheckOutcome ok = checker.check_paths(clamp_paths(f));
  CHECK(ok.verdict == Verdict::Verified);
  CHECK(ok.used_requires.empty());
  CHECK(checker.check_paths(clamp_paths(f, "x")).verdict == Verdict::Refuted);
  // Without the requires the correct code is refuted too (lo > hi makes lo <= result <= hi
  // impossible): the requires really are in force.
  Fn no_req = clamp({});
  CHECK(check_function_contract(no_req.contract, clamp_paths(no_req), fast).verdict ==
        Verdict::Refuted);
}

TEST_CASE("independent sessions run concurrently", "[contract][threads]") {
  std::vector<std::thread> threads;
  std::vector<int> verified(4, 0), refuted(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &verified, &refuted] {
      Fn f = clamp();
      ContractChecker checker(f.contract);
      for (int i = 0; i < 25; ++i) {
        if (checker.check_paths(clamp_paths(f)).verdict == Verdict::Verified) ++verified[t];
        if (checker.check_paths(clamp_paths(f, "x")).verdict == Verdict::Refuted) ++refuted[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(verified == std::vector<int>(4, 25));
  CHECK(refuted == std::vector<int>(4, 25));
}
