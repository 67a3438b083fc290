// The C translator: C semantics (truncating division, overflow as an error, unsigned
// wrap-around), the contract of a C declaration, loops, and unknown outside the subset.
#include <catch2/catch.hpp>

#include "stages/constraint/error.h"
#include "stages/constraint/translate_c.h"
#include "tests/constraint/util.h"

namespace cs = vsynth::stages::constraint;
using vsynth::constraint_test::input;
using vsynth::constraint_test::prove;
using vsynth::solvers::Verdict;

namespace {

cs::TaskSpec c_spec(const std::string& signature, std::vector<std::string> requires_,
                    std::vector<std::string> ensures) {
  nlohmann::json j = {{"language", "c"},
                      {"signature", signature},
                      {"spec", {{"requires", requires_}, {"ensures", ensures}}}};
  auto s = cs::task_spec(vsynth::graph::Task{"c-test", j}, "");
  REQUIRE(s);
  return *s;
}

}  // namespace

TEST_CASE("c: the contract of a declaration: sorts, names and type ranges") {
  const cs::CSignature s = cs::parse_c_signature("int clamp(int x, int lo, unsigned hi)");
  CHECK(s.signature.function == "clamp");
  REQUIRE(s.signature.params.size() == 3);
  CHECK(s.signature.params[2].name == "hi");
  CHECK(s.signature.params[2].sort == vsynth::solvers::Sort::Int);
  REQUIRE(s.ranges.size() == 3);
  CHECK(vsynth::solvers::to_python(s.ranges[0]) == "-2147483648 <= x <= 2147483647");
  CHECK(vsynth::solvers::to_python(s.ranges[2]) == "0 <= hi <= 4294967295");
  const cs::CSignature p = cs::parse_c_signature("int array_max(const int *xs, size_t n);");
  CHECK(p.signature.params[0].sort == vsynth::solvers::Sort::Opaque);
  CHECK(cs::parse_c_signature("bool f(void)").signature.params.empty());
  CHECK_THROWS_AS(cs::parse_c_signature("int x = 3"), cs::ConstraintError);
}

TEST_CASE("c: a correct clamp verifies, a buggy one is refuted") {
  const auto spec = c_spec("int clamp(int x, int lo, int hi)", {"lo <= hi"},
                           {"lo <= result <= hi", "x < lo or x > hi or result == x"});
  CHECK(prove("int clamp(int x, int lo, int hi) {\n  if (x < lo) return lo;\n"
              "  if (x > hi) return hi;\n  return x;\n}\n",
              spec)
            .verdict == Verdict::Verified);
  CHECK(prove("int clamp(int x, int lo, int hi) {\n  return x < lo ? lo : x > hi ? hi : x;\n}\n",
              spec)
            .verdict == Verdict::Verified);
  const auto p = prove(
      "int clamp(int x, int lo, int hi) {\n  if (x < lo) return lo;\n  if (x > hi) return x;\n"
      "  return x;\n}\n",
      spec);
  REQUIRE(p.verdict == Verdict::Refuted);
  CHECK(p.failed_line == 3);
  CHECK(input(p, "x") > input(p, "hi"));
}

TEST_CASE("c: signed overflow is a bug, a saturating add verifies") {
  const auto spec = c_spec("int sat_add(int a, int b)", {},
                           {"-2147483648 <= result <= 2147483647",
                            "result == a + b or (result == 2147483647 and a + b > 2147483647) or "
                            "(result == -2147483648 and a + b < -2147483648)"});
  const auto p = prove("int sat_add(int a, int b) {\n  return a + b;\n}\n", spec);
  REQUIRE(p.verdict == Verdict::Refuted);
  const int64_t sum = input(p, "a") + input(p, "b");
  CHECK((sum > 2147483647 || sum < -2147483648LL));
  CHECK_THAT(p.message, Catch::Contains("line 2"));
  CHECK(prove("int sat_add(int a, int b) {\n  long s = (long)a + b;\n"
              "  if (s > INT_MAX) return INT_MAX;\n  if (s < INT_MIN) return INT_MIN;\n"
              "  return (int)s;\n}\n",
              spec)
            .verdict == Verdict::Verified);
}

TEST_CASE("c: division truncates toward zero and must not divide by zero") {
  const auto spec = c_spec("int last(int n)", {}, {"-9 <= result <= 9"});
  CHECK(prove("int last(int n) {\n  return n % 10;\n}\n", spec).verdict == Verdict::Verified);
  const auto py_like = c_spec("int last(int n)", {}, {"0 <= result <= 9"});
  const auto p = prove("int last(int n) {\n  return n % 10;\n}\n", py_like);
  REQUIRE(p.verdict == Verdict::Refuted);  // C's % keeps the dividend's sign
  CHECK(input(p, "n") < 0);
  const auto div = c_spec("int q(int a, int b)", {}, {"True"});
  const auto d = prove("int q(int a, int b) {\n  int r = a / b;\n  return 0;\n}\n", div);
  REQUIRE(d.verdict == Verdict::Refuted);
  CHECK(input(d, "b") == 0);
}

TEST_CASE("c: unsigned arithmetic wraps") {
  const auto spec = c_spec("unsigned dec(unsigned x)", {}, {"result == x - 1 or x == 0"});
  CHECK(prove("unsigned dec(unsigned x) {\n  return x - 1;\n}\n", spec).verdict ==
        Verdict::Verified);
  const auto wrap = c_spec("unsigned dec(unsigned x)", {}, {"result < x"});
  const auto p = prove("unsigned dec(unsigned x) {\n  return x - 1;\n}\n", wrap);
  REQUIRE(p.verdict == Verdict::Refuted);
  CHECK(input(p, "x") == 0);
  CHECK(p.counterexample->returned->integer == 4294967295LL);
}

TEST_CASE("c: for loops unroll, while loops are unknown") {
  const auto spec = c_spec("int tri(int n)", {"0 <= n <= 6"}, {"result == n * (n + 1) // 2"});
  CHECK(prove("int tri(int n) {\n  int s = 0;\n  for (int i = 1; i <= n; i++) {\n    s += i;\n"
              "  }\n  return s;\n}\n",
              spec)
            .verdict == Verdict::Verified);
  CHECK(prove("int tri(int n) {\n  int s = 0;\n  for (int i = 1; i < n; i++) s += i;\n"
              "  return s;\n}\n",
              spec)
            .verdict == Verdict::Refuted);
  const auto w = prove(
      "int tri(int n) {\n  int s = 0;\n  while (n > 0) { s += n; n--; }\n  return s;\n}\n", spec);
  CHECK(w.verdict == Verdict::Unknown);
  CHECK_THAT(w.message, Catch::Contains("while") && Catch::Contains("line 3"));
  const auto unbounded = c_spec("int tri(int n)", {"n >= 0"}, {"result >= 0"});
  const auto u = prove(
      "int tri(int n) {\n  int s = 0;\n  for (int i = 1; i <= n; i++) s += i;\n  return s;\n}\n",
      unbounded);
  CHECK(u.verdict == Verdict::Unknown);
  // Pointers are outside the subset.
  const auto ptr = c_spec("int first(const int *xs, int n)", {"n >= 1"}, {"True"});
  CHECK(prove("int first(const int *xs, int n) {\n  return xs[0];\n}\n", ptr).verdict ==
        Verdict::Unknown);
}

TEST_CASE("c: bool results and logical operators") {
  const auto spec = c_spec("bool is_even(int n)", {}, {"result == (n % 2 == 0)"});
  CHECK(prove("bool is_even(int n) {\n  return n % 2 == 0;\n}\n", spec).verdict ==
        Verdict::Verified);
  CHECK(prove("bool is_even(int n) {\n  return !(n & 1);\n}\n", spec).verdict == Verdict::Unknown);
  CHECK(prove("bool is_even(int n) {\n  return n % 2 == 1;\n}\n", spec).verdict ==
        Verdict::Refuted);
  // Short-circuit: the division is guarded by b != 0.
  const auto g = c_spec("bool big(int a, int b)", {"a >= 0"}, {"True"});
  CHECK(prove("bool big(int a, int b) {\n  return b != 0 && a / b > 1;\n}\n", g).verdict ==
        Verdict::Verified);
}
