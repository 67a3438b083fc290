// The Python translator against Z3: correct code verifies, buggy code is refuted with the
// input that breaks it, code outside the subset is unknown with the construct and its line
// (never verified), loops unroll to the bound, and partial programs give the return paths
// completed so far.
#include <catch2/catch.hpp>

#include "stages/constraint/translate_python.h"
#include "tests/constraint/util.h"

namespace cs = vsynth::stages::constraint;
using vsynth::constraint_test::input;
using vsynth::constraint_test::prove;
using vsynth::constraint_test::python_spec;
using vsynth::solvers::Verdict;

namespace {

const cs::TaskSpec& clamp_spec() {
  static const cs::TaskSpec s =
      python_spec("def clamp(x: int, lo: int, hi: int) -> int:", {"lo <= hi"},
                  {"lo <= result <= hi", "x < lo or x > hi or result == x"});
  return s;
}

}  // namespace

TEST_CASE("python: a correct clamp is verified") {
  const auto p = prove(R"(def clamp(x: int, lo: int, hi: int) -> int:
    """Limit x to [lo, hi]."""
    if x < lo:
        return lo
    elif x > hi:
        return hi
    else:
        return x
)",
                       clamp_spec());
  CHECK(p.verdict == Verdict::Verified);
  CHECK(p.returns == 3);
  CHECK_FALSE(p.counterexample);
  CHECK(p.used_requires == std::vector<std::string>{"lo <= hi"});
}

TEST_CASE("python: min/max, chained comparisons and renamed parameters verify") {
  CHECK(prove("def clamp(v, low, high):\n    return max(low, min(v, high))\n", clamp_spec())
            .verdict == Verdict::Verified);
  CHECK(prove("def clamp(x, lo, hi):\n    if lo <= x <= hi:\n        return x\n"
              "    return lo if x < lo else hi\n",
              clamp_spec())
            .verdict == Verdict::Verified);
}

TEST_CASE("python: a buggy clamp is refuted with the input that breaks it") {
  const auto p = prove(R"(def clamp(x: int, lo: int, hi: int) -> int:
    if x < lo:
        return lo
    if x > hi:
        return x
    return x
)",
                       clamp_spec());
  REQUIRE(p.verdict == Verdict::Refuted);
  REQUIRE(p.counterexample);
  CHECK(p.failed_line == 5);
  const int64_t x = input(p, "x"), lo = input(p, "lo"), hi = input(p, "hi");
  CHECK(lo <= hi);  // the requires hold
  CHECK(x > hi);    // the buggy path is taken
  REQUIRE(p.counterexample->returned);
  CHECK(p.counterexample->returned->integer == x);
  CHECK(p.counterexample->failed == "result <= hi");  // the conjunct of the chain that fails
  CHECK_THAT(p.counterexample->text, Catch::StartsWith("clamp(x=") &&
                                         Catch::Contains("; ensures result <= hi") &&
                                         Catch::Contains("line 5"));
}

TEST_CASE("python: semantics are Python's (floor division, modulo sign)") {
  const auto spec = python_spec("def last_digit(n: int) -> int:", {},
                                {"0 <= result <= 9", "result == abs(n) % 10"});
  CHECK(prove("def last_digit(n):\n    return abs(n) % 10\n", spec).verdict == Verdict::Verified);
  // n % 10 is in [0, 9] in Python but is not the last digit of a negative n.
  const auto p = prove("def last_digit(n):\n    return n % 10\n", spec);
  REQUIRE(p.verdict == Verdict::Refuted);
  CHECK(input(p, "n") < 0);
  CHECK(p.counterexample->failed == "result == abs(n) % 10");
}

TEST_CASE("python: a division that can raise is refuted, guarded it verifies") {
  const auto spec = python_spec("def ratio(a: int, b: int) -> int:", {}, {"True"});
  const auto p = prove("def ratio(a, b):\n    q = a // b\n    return 0\n", spec);
  REQUIRE(p.verdict == Verdict::Refuted);
  CHECK(input(p, "b") == 0);
  CHECK_THAT(p.counterexample->text, Catch::Contains("ZeroDivisionError"));
  CHECK(prove("def ratio(a, b):\n    if b == 0:\n        return 0\n    return a // b\n", spec)
            .verdict == Verdict::Verified);
}

TEST_CASE("python: tuple assignment, augmented assignment, booleans") {
  const auto spec = python_spec("def is_even(n: int) -> bool:", {}, {"result == (n % 2 == 0)"});
  CHECK(prove("def is_even(n):\n    r = n % 2\n    r += 0\n    return not r\n", spec).verdict ==
        Verdict::Verified);
  CHECK(prove("def is_even(n):\n    return n % 2 == 1\n", spec).verdict == Verdict::Refuted);
  const auto swap = python_spec("def f(a: int, b: int) -> int:", {}, {"result == b - a"});
  CHECK(prove("def f(a, b):\n    a, b = b, a\n    return a - b\n", swap).verdict ==
        Verdict::Verified);
}

TEST_CASE("python: constructs outside the subset give unknown naming the construct and line") {
  const auto spec =
      python_spec("def gcd(a: int, b: int) -> int:", {"a >= 0 and b >= 0"}, {"result >= 0"});
  const auto p =
      prove("def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n", spec);
  CHECK(p.verdict == Verdict::Unknown);
  CHECK_THAT(p.message, Catch::Contains("while loop") && Catch::Contains("line 2"));

  // Nested functions, attribute assignment: unknown, never verified.
  CHECK(prove("def gcd(a, b):\n    def g(x):\n        return x\n    return g(a)\n", spec).verdict ==
        Verdict::Unknown);
  const auto attr = prove("def gcd(a, b):\n    a.x = 1\n    return b\n", spec);
  CHECK(attr.verdict == Verdict::Unknown);
  CHECK_THAT(attr.message, Catch::Contains("assigning to `a.x`") && Catch::Contains("line 2"));
  // A string value: the proof cannot use it, so a path through it is not verified.
  const auto s = prove("def gcd(a, b):\n    s = str(a)\n    return len(s)\n", spec);
  CHECK(s.verdict == Verdict::Unknown);
  // ...but a refutation that does not depend on it is still reported.
  const auto r = prove("def gcd(a, b):\n    s = str(a)\n    return -1\n", spec);
  CHECK(r.verdict == Verdict::Refuted);
  // Falling off the end returns None.
  CHECK(prove("def gcd(a, b):\n    if a > 0:\n        return a\n", spec).verdict ==
        Verdict::Unknown);
  // Missing function.
  const auto m = prove("def other(a, b):\n    return 1\n", spec);
  CHECK(m.verdict == Verdict::Unknown);
  CHECK_THAT(m.message, Catch::Contains("no function `gcd`"));
  // Syntax errors.
  CHECK(prove("def gcd(a, b):\n    return (a +\n", spec).verdict == Verdict::Unknown);
}

TEST_CASE("python: for-range loops unroll to the bound, beyond it the proof is unknown") {
  const std::string code = R"(def sum_range(lo: int, hi: int) -> int:
    total = 0
    for i in range(lo, hi + 1):
        total += i
    return total
)";
  const std::vector<std::string> ensures{"result == (lo + hi) * (hi - lo + 1) // 2"};
  // Bounded trip count: exact.
  const auto bounded =
      python_spec("def sum_range(lo: int, hi: int) -> int:", {"lo <= hi", "hi - lo < 8"}, ensures);
  CHECK(prove(code, bounded).verdict == Verdict::Verified);
  // Unbounded: the loop may run past the bound: unknown, with the reason.
  const auto unbounded =
      python_spec("def sum_range(lo: int, hi: int) -> int:", {"lo <= hi"}, ensures);
  const auto p = prove(code, unbounded);
  CHECK(p.verdict == Verdict::Unknown);
  CHECK_THAT(p.message, Catch::Contains("unroll bound") && Catch::Contains("line 3"));
  // A larger bound covers more inputs.
  cs::TranslateOptions big;
  big.unroll_bound = 12;
  const auto span = python_spec("def span(lo: int, hi: int) -> int:", {"lo <= hi", "hi - lo < 12"},
                                {"result == hi - lo"});
  const std::string count =
      "def span(lo, hi):\n    c = 0\n    for i in range(lo, hi):\n        c += 1\n    return c\n";
  CHECK(prove(count, span, big).verdict == Verdict::Verified);
  CHECK(prove(count, span).verdict == Verdict::Unknown);
  // An off-by-one inside the bound is refuted even when the bound is not enough to verify.
  std::string off = code;
  off.replace(off.find("hi + 1"), 6, "hi");
  const auto r = prove(off, unbounded);
  REQUIRE(r.verdict == Verdict::Refuted);
  CHECK(r.failed_line == 5);
}

TEST_CASE("python: loops over lists, break and continue") {
  const auto spec = python_spec("def list_min(xs: list[int]) -> int:", {"len(xs) >= 1"},
                                {"all(result <= x for x in xs)", "any(result == x for x in xs)"});
  CHECK(prove("def list_min(xs):\n    best = xs[0]\n    for x in xs:\n        if x < best:\n"
              "            best = x\n    return best\n",
              spec)
            .verdict == Verdict::Verified);
  CHECK(prove("def list_min(xs):\n    best = xs[0]\n    for x in xs:\n        if x > best:\n"
              "            best = x\n    return best\n",
              spec)
            .verdict == Verdict::Refuted);
  const auto first_neg = python_spec("def f(xs: list[int]) -> int:", {},
                                     {"result == -1 or xs[result] < 0", "result >= -1"});
  CHECK(prove("def f(xs):\n    r = -1\n    for i in range(len(xs)):\n        if xs[i] >= 0:\n"
              "            continue\n        r = i\n        break\n    return r\n",
              first_neg)
            .verdict == Verdict::Verified);
  CHECK(prove("def f(xs):\n    r = -1\n    for i in range(len(xs)):\n        if xs[i] >= 0:\n"
              "            continue\n        r = i + 1\n        break\n    return r\n",
              first_neg)
            .verdict == Verdict::Refuted);
}

TEST_CASE("python: asserts and reachable raises are obligations") {
  const auto spec = python_spec("def f(n: int) -> int:", {"n >= 0"}, {"result >= 0"});
  CHECK(prove("def f(n):\n    assert n >= 0\n    return n\n", spec).verdict == Verdict::Verified);
  const auto p = prove("def f(n):\n    assert n > 0\n    return n\n", spec);
  REQUIRE(p.verdict == Verdict::Refuted);
  CHECK(input(p, "n") == 0);
  CHECK(p.failed_line == 2);
  CHECK(prove("def f(n):\n    if n < 0:\n        raise ValueError('n')\n    return n\n", spec)
            .verdict == Verdict::Verified);
  CHECK(prove("def f(n):\n    if n < 5:\n        raise ValueError('n')\n    return n\n", spec)
            .verdict == Verdict::Refuted);
}

TEST_CASE("python: a partial program gives the return paths completed so far") {
  const auto& sig = clamp_spec().contract.signature;
  cs::TranslateOptions partial;
  partial.partial = true;
  const std::string prefix =
      "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n"
      "        return x\n";
  const cs::Translation t = cs::translate_python(prefix, sig, partial);
  REQUIRE(t.function_found);
  CHECK_FALSE(t.unknown);
  REQUIRE(t.obligations.size() == 2);  // no "falls off the end" in a prefix
  CHECK(t.obligations[0].line == 3);
  CHECK(t.obligations[1].line == 5);
  CHECK(t.obligations[1].stmt_start == prefix.find("return x"));
  // The same prefix as a whole function falls off the end.
  CHECK(cs::translate_python(prefix, sig).obligations.size() == 3);

  // Checking the prefix finds the bad return before the function is finished.
  vsynth::solvers::ContractChecker checker(clamp_spec().contract,
                                           vsynth::constraint_test::generous_limits());
  CHECK(cs::check_obligation(checker, t.obligations[0]).verdict == Verdict::Verified);
  CHECK(cs::check_obligation(checker, t.obligations[1]).verdict == Verdict::Refuted);

  // A loop that may still grow is not translated (nor anything after it).
  const std::string open =
      "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    for i in range(3):\n"
      "        if i > x:\n            return i\n";
  cs::TranslateOptions o = partial;
  o.open_end = static_cast<uint32_t>(open.size() - 2);  // last non-space character
  const cs::Translation t2 = cs::translate_python(open, sig, o);
  CHECK_FALSE(t2.unknown);
  CHECK(t2.obligations.size() == 1);
  // Closed by a dedented statement, the loop is translated (3 iterations, 3 returns).
  const std::string closed = open + "    return x\n";
  o.open_end = static_cast<uint32_t>(closed.size() - 2);
  CHECK(cs::translate_python(closed, sig, o).obligations.size() == 5);
}
