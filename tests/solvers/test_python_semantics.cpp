// One semantics for specs: the IR evaluated by Z3 and by solvers/evaluate must give what real
// python3 gives for the same expression text, on a grid of values (bool arithmetic, comparison
// chains, floor division and modulo signs, abs/min/max/len/sum, all/any over ranges).
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "solvers/evaluate.h"
#include "solvers/spec_parser.h"
#include "solvers/z3_backend.h"

using namespace vsynth::solvers;

namespace {

const std::vector<std::string> kExpressions = {
    "(a >= b) + (b >= a) + (a == 0)",
    "(a >= 0) + (b >= 0) + (a >= b) >= 2",
    "True + True * a",
    "(a > b) < 1",
    "(a > 0) * b - (b < 0)",
    "(a >= 0) == (b >= 0)",
    "a // b",
    "a % b",
    "-a // b + a % -b",
    "a - (a // b) * b == a % b",
    "abs(a - b) + abs(-a)",
    "min(a, b) + max(a, b, 3) - (a < b < 3)",
    "sum([a, b, a]) % 3",
    "len([a, b]) + (a != b)",
    "all(a % k != 0 for k in range(2, min(abs(b), 9) + 2))",
    "any(k * k == a for k in range(0, 12))",
    "sum(k * a for k in range(0, min(abs(b), 6)))",
    "sum(1 for k in range(-3, 4) if k * k < a)",
    "sum(k > b for k in range(0, 5)) + sum(a // k for k in range(-2, 3) if k != 0)",
    "sum(j for k in range(0, 3) for j in range(k, 4) if j % 2 == a % 2)",
    "a if a > b else b // 2",
};

std::vector<std::pair<int64_t, int64_t>> grid() {
  std::vector<std::pair<int64_t, int64_t>> g;
  for (int64_t a = -7; a <= 7; ++a)
    for (int64_t b = -7; b <= 7; ++b) g.emplace_back(a, b);
  const int64_t big[] = {INT64_MIN, INT64_MAX, -(int64_t(1) << 31), (int64_t(1) << 31) - 1,
                         1000003};
  for (int64_t x : big)
    for (int64_t y : {int64_t(-3), int64_t(1), int64_t(7), x}) {
      g.emplace_back(x, y);
      g.emplace_back(y, x);
    }
  return g;
}

// What python3 prints for each (expression, a, b): repr of the value, or "raise:<Exception>".
std::vector<std::string> python_answers(const std::vector<std::pair<int64_t, int64_t>>& g) {
  char path[] = "/tmp/vsynth_semantics_XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  {
    std::ofstream f(path);
    f << "exprs = [\n";
    for (const auto& e : kExpressions) f << "  compile(" << '"' << e << '"' << ", 'e', 'eval'),\n";
    f << "]\ngrid = [\n";
    for (auto [a, b] : g) f << "  (" << a << ", " << b << "),\n";
    f << "]\nfor e in exprs:\n  for a, b in grid:\n    try:\n      print(repr(eval(e)))\n"
         "    except Exception as x:\n      print('raise:' + type(x).__name__)\n";
  }
  FILE* p = ::popen(("python3 -I -S -B " + std::string(path)).c_str(), "r");
  REQUIRE(p != nullptr);
  std::vector<std::string> out;
  char line[256];
  while (std::fgets(line, sizeof line, p)) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    out.push_back(s);
  }
  CHECK(::pclose(p) == 0);
  ::unlink(path);
  return out;
}

std::string exception_name(const std::string& error) {
  return "raise:" + error.substr(0, error.find(':'));
}

}  // namespace

TEST_CASE("Z3, the IR evaluator and python3 agree on a grid of values", "[semantics][z3]") {
  const auto g = grid();
  const std::vector<std::string> py = python_answers(g);
  REQUIRE(py.size() == kExpressions.size() * g.size());
  const std::vector<Param> names = {{"a", Sort::Int, "int"}, {"b", Sort::Int, "int"}};
  size_t k = 0;
  for (const auto& text : kExpressions) {
    const Expr e = parse_expression(text, names);
    for (auto [a, b] : g) {
      const std::string& want = py[k++];
      INFO(text << " with a=" << a << ", b=" << b << " (python3: " << want << ")");
      const Evaluated got = evaluate(e, {{"a", Concrete::of_int(a)}, {"b", Concrete::of_int(b)}});
      REQUIRE(got.kind != Evaluated::Kind::NotEvaluable);
      CHECK((got.kind == Evaluated::Kind::Raised ? exception_name(got.error)
                                                 : got.value.python()) == want);

      Solver s;
      s.add(ir::eq(ir::var("a", Sort::Int), ir::int_lit(a)));
      s.add(ir::eq(ir::var("b", Sort::Int), ir::int_lit(b)));
      REQUIRE(s.check(10000).status == Status::Sat);
      const Evaluation z = s.eval(e);
      CHECK((z.raised ? exception_name(z.error) : z.value.python()) == want);
    }
  }
}

TEST_CASE("bool arithmetic and bool/int comparisons follow Python", "[semantics]") {
  const Signature sig = parse_python_signature("def tri_max(a: int, b: int, c: int) -> int:");
  // Python defines these; they used to be refused ("cannot apply '+' to bool").
  const Expr e =
      parse_spec("(result >= a) + (result >= b) + (result >= c) >= 2", sig, SpecKind::Ensures);
  CHECK(to_python(e) == "(result >= a) + (result >= b) + (result >= c) >= 2");
  auto env = [](int64_t a, int64_t b, int64_t c, int64_t r) {
    return Env{{"a", Concrete::of_int(a)},
               {"b", Concrete::of_int(b)},
               {"c", Concrete::of_int(c)},
               {"result", Concrete::of_int(r)}};
  };
  CHECK(evaluate(e, env(1, 2, 3, 2)).value.boolean);
  CHECK_FALSE(evaluate(e, env(1, 2, 3, 1)).value.boolean);
  CHECK(to_python(parse_spec("(a > b) == 1", sig, SpecKind::Requires)) == "(a > b) == 1");
  CHECK(to_python(parse_spec("abs(a > b) + max(a < b, c) > 0", sig, SpecKind::Requires)) ==
        "abs(a > b) + max(a < b, c) > 0");
}

TEST_CASE("the evaluator raises as Python does and never guesses", "[semantics]") {
  const std::vector<Param> names = {{"xs", Sort::IntSeq, "list[int]"}, {"a", Sort::Int, "int"}};
  const Env env{{"xs", Concrete::of_list({})}, {"a", Concrete::of_int(0)}};
  auto run = [&](const char* text) { return evaluate(parse_expression(text, names), env); };
  CHECK(run("max(xs)").error == "ValueError: max() arg is an empty sequence");
  CHECK(run("xs[0]").error == "IndexError: list index out of range");
  CHECK(run("1 // a").kind == Evaluated::Kind::Raised);
  // Short-circuits guard a raise.
  CHECK(run("len(xs) == 0 or xs[0] > 1").value.boolean);
  CHECK(run("a != 0 and 1 // a > 0").kind == Evaluated::Kind::Value);
  // Floats, unsupported constructs and ints beyond 128 bits are not evaluated.
  CHECK(run("a / 2 > 0").kind == Evaluated::Kind::NotEvaluable);
  CHECK(run("sorted(xs) == xs").kind == Evaluated::Kind::NotEvaluable);
  CHECK(evaluate(parse_expression("a * a * a > 0", names),
                 {{"a", Concrete::of_int(INT64_MAX)}, {"xs", Concrete::of_list({})}})
            .kind == Evaluated::Kind::NotEvaluable);
  CHECK(int128_to_string(*parse_int128("-170141183460469231731687303715884105728")) ==
        "-170141183460469231731687303715884105728");
  CHECK_FALSE(parse_int128("170141183460469231731687303715884105728").has_value());
  CHECK_FALSE(parse_int128("12a").has_value());
}
