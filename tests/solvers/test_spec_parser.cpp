// Spec expressions and Python signature lines -> IR.
#include <catch2/catch.hpp>

#include "solvers/spec_parser.h"

using namespace vsynth::solvers;

namespace {

Signature clamp_sig() {
  return parse_python_signature("def clamp(x: int, lo: int, hi: int) -> int:");
}

Expr ens(std::string_view text, const Signature& sig = clamp_sig()) {
  return parse_spec(text, sig, SpecKind::Ensures);
}

std::string error_of(std::string_view text, const Signature& sig = clamp_sig(),
                     SpecKind kind = SpecKind::Ensures) {
  try {
    parse_spec(text, sig, kind);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("signature lines give names, order and sorts", "[spec][signature]") {
  Signature s = parse_python_signature(
      "def f(self, n: int, flag: bool = False, r: float=0.5, xs: list[int] = [], ys: "
      "typing.List[int], s: str = 'a,b', *args, k=3, **kw) -> float:");
  CHECK(s.function == "f");
  REQUIRE(s.params.size() == 9);
  CHECK(s.params[0].name == "n");
  CHECK(s.params[0].sort == Sort::Int);
  CHECK(s.params[1].sort == Sort::Bool);
  CHECK(s.params[2].sort == Sort::Real);
  CHECK(s.params[3].sort == Sort::IntSeq);
  CHECK(s.params[4].sort == Sort::IntSeq);
  CHECK(s.params[5].sort == Sort::Opaque);
  CHECK(s.params[5].annotation == "str");
  CHECK(s.params[6].name == "args");
  CHECK(s.params[6].sort == Sort::Opaque);
  CHECK(s.params[7].name == "k");
  CHECK(s.params[7].sort == Sort::Int);  // unannotated: int
  CHECK(s.params[8].name == "kw");
  REQUIRE(s.result);
  CHECK(*s.result == Sort::Real);

  Signature none = parse_python_signature("async def g(a, b, /, *, c) -> None");
  CHECK(none.params.size() == 3);
  CHECK_FALSE(none.result.has_value());
  CHECK(*parse_python_signature("h(x)").result == Sort::Int);

  try {
    parse_python_signature("def f(x: int, x: int) -> int:");
    FAIL("no exception");
  } catch (const SpecError& e) {
    CHECK(std::string(e.what()).find("duplicate parameter 'x' at column 15") != std::string::npos);
    CHECK(e.column() == 15);
  }
  CHECK_THROWS_AS(parse_python_signature("def f(x: int"), SpecError);
  CHECK_THROWS_AS(parse_python_signature("def (x)"), SpecError);
  CHECK_THROWS_AS(parse_python_signature("def f(x) -> int: return x"), SpecError);
}

TEST_CASE("operator precedence follows Python", "[spec]") {
  std::vector<Param> p{{"a", Sort::Int, ""},
                       {"b", Sort::Int, ""},
                       {"c", Sort::Int, ""},
                       {"p", Sort::Bool, ""},
                       {"q", Sort::Bool, ""}};
  auto parse = [&](std::string_view t) { return parse_expression(t, p); };
  Expr e = parse("a + b * c");
  CHECK(e->op == Op::Add);
  CHECK(e->args[1]->op == Op::Mul);
  e = parse("-a ** 2");  // -(a ** 2)
  CHECK(e->op == Op::Neg);
  CHECK(e->args[0]->op == Op::Mul);
  e = parse("not a == b");  // not (a == b)
  CHECK(e->op == Op::Not);
  CHECK(e->args[0]->op == Op::Eq);
  e = parse("p or q and not p");
  CHECK(e->op == Op::Or);
  CHECK(e->args[1]->op == Op::And);
  e = parse("a - b - c");
  CHECK(e->op == Op::Sub);
  CHECK(e->args[0]->op == Op::Sub);
  e = parse("a if p else b + c");
  CHECK(e->op == Op::Ite);
  CHECK(e->args[2]->op == Op::Add);
  CHECK(to_python(parse("(a + b) // -c % 3")) == "(a + b) // -c % 3");
  CHECK(parse("-5")->op == Op::IntLit);
  CHECK(parse("-5")->int_value == -5);
  CHECK(parse("1_000 + 0x10 + 0b11")->args[1]->int_value == 3);
  CHECK(parse("1.5e3 > a")->args[0]->op == Op::RealLit);
}

TEST_CASE("comparison chains desugar and print back", "[spec]") {
  Expr e = ens("lo <= result <= hi");
  REQUIRE(e->op == Op::And);
  CHECK(e->chain);
  REQUIRE(e->args.size() == 2);
  CHECK(to_python(e->args[0]) == "lo <= result");
  CHECK(to_python(e->args[1]) == "result <= hi");
  CHECK(to_python(e) == "lo <= result <= hi");
  CHECK(to_python(ens("lo < x != hi > 0")) == "lo < x != hi > 0");
  CHECK(to_python(ens("x not in [1, 2] and x in range(lo, hi)")) ==
        "x not in [1, 2] and x in range(lo, hi)");
}

TEST_CASE("calls, indexing, generators and truthiness", "[spec]") {
  Signature s = parse_python_signature("def f(xs: list[int], n: int) -> list[int]");
  auto e = [&](std::string_view t) { return to_python(parse_spec(t, s, SpecKind::Ensures)); };
  CHECK(e("all(xs[i] <= xs[i + 1] for i in range(len(xs) - 1))") ==
        "all(xs[i] <= xs[i + 1] for i in range(0, len(xs) - 1))");
  CHECK(e("any(x > n for x in xs if x % 2 == 0)") == "any(x % 2 == 0 and x > n for x in xs)");
  CHECK(e("all(i != j for i in range(n) for j in range(i))") ==
        "all(all(i != j for j in range(0, i)) for i in range(0, n))");
  CHECK(e("len(result) == len(xs) and sum(result) == sum(xs)") ==
        "len(result) == len(xs) and sum(result) == sum(xs)");
  CHECK(e("min(xs) <= max(n, 0, abs(n))") == "min(xs) <= max(n, 0, abs(n))");
  CHECK(e("result") == "len(result) > 0");  // truthiness of a list
  CHECK(e("n") == "n != 0");
  CHECK(e("xs[-1] == n") == "xs[-1] == n");
  // A comprehension variable shadows a parameter of the same name inside the generator only.
  CHECK(e("all(n > 0 for n in xs) and n == 0") == "all(n > 0 for n in xs) and n == 0");
}

TEST_CASE("unknown names report column, caret and a did-you-mean", "[spec][errors]") {
  Signature s = parse_python_signature("def clamp(x: int, low: int, high: int) -> int:");
  const std::string msg = error_of("low <= x and hgih >= x", s);
  CHECK(msg ==
        "ensures: unknown name 'hgih' at column 14; did you mean 'high'? (known: x, low, high, "
        "result)\n"
        "  low <= x and hgih >= x\n"
        "               ^");
  try {
    parse_spec("low <= x and hgih >= x", s, SpecKind::Ensures);
  } catch (const SpecError& e) {
    CHECK(e.column() == 14);
    CHECK(e.line() == 1);
  }
  // No plausible candidate: no suggestion, still the known names.
  CHECK(error_of("zzzzz > 0", s)
            .find("unknown name 'zzzzz' at column 1; (known: x, low, high, "
                  "result)") != std::string::npos);
  CHECK(error_of("lne(x) > 0").find("unknown function 'lne' at column 1; did you mean 'len'?") !=
        std::string::npos);
  CHECK(error_of("result > 0", clamp_sig(), SpecKind::Requires)
            .find("'result' is only available in ensures at column 1") != std::string::npos);
  // Multi-line specs report the line.
  CHECK(error_of("lo <= x and\n   hgih >= x").find("at line 2, column 4") != std::string::npos);
}

TEST_CASE("syntax and sort errors point at the offending token", "[spec][errors]") {
  CHECK(error_of("x <").find("unexpected end of the expression at column 4") != std::string::npos);
  // A sort error Python also raises (a list minus an int) points at the operator.
  const Signature s = parse_python_signature("def f(xs: list[int], x: int) -> int:");
  CHECK(error_of("xs - x > 0", s).find("cannot apply '-' to list[int] (xs) and int (x)") !=
        std::string::npos);
  CHECK(error_of("xs - x > 0", s).find("at column 4") != std::string::npos);
  CHECK(error_of("(x + 1").find("unclosed '('") != std::string::npos);
  CHECK(error_of("x = 1").find("'=' is assignment; use '==' to compare at column 3") !=
        std::string::npos);
  CHECK(error_of("len(x) > 0").find("the operand must be a list[int]") != std::string::npos);
  CHECK(error_of("abs(x, lo) > 0").find("abs() takes exactly 1 argument (2 given)") !=
        std::string::npos);
  CHECK(error_of("x(1)").find("'x' is not callable") != std::string::npos);
  CHECK(error_of("x > 0 x").find("unexpected 'x' at column 7") != std::string::npos);
  CHECK(error_of("007 > x").find("leading zeros") != std::string::npos);
  CHECK(error_of("x > 99999999999999999999").find("does not fit in 64 bits") != std::string::npos);
  CHECK(error_of("x $ 1").find("unexpected character '$' at column 3") != std::string::npos);
  CHECK(error_of("lambda: 1").find("lambda is not supported") != std::string::npos);
  CHECK(error_of("").find("empty expression") != std::string::npos);
}

TEST_CASE("valid but unmodelled Python parses to Unsupported", "[spec]") {
  Signature s = parse_python_signature("def f(xs: list[int], name: str) -> int");
  auto unsupported_why = [&](std::string_view t) {
    return find_unsupported(parse_spec(t, s, SpecKind::Ensures)).value_or("<none>");
  };
  CHECK(unsupported_why("sorted(xs) == xs").find("sorted() is not modelled") != std::string::npos);
  CHECK(unsupported_why("xs[1:] == xs").find("slices") != std::string::npos);
  CHECK(unsupported_why("len(name) > 0").find("type 'str'") != std::string::npos);
  CHECK(unsupported_why("result is not None").find("'is'") != std::string::npos);
  CHECK(unsupported_why("result & 1 == 0").find("bitwise") != std::string::npos);
  CHECK(unsupported_why("min(x * x for x in xs) >= 0").find("generator") != std::string::npos);
  // sum() over a generator is modelled (issue 17): sum of squares, of bools, with a guard.
  CHECK(unsupported_why("sum(x * x for x in xs) >= 0") == "<none>");
  CHECK(
      to_python(parse_spec("sum(x > 0 for x in xs if x != 3) <= len(xs)", s, SpecKind::Ensures)) ==
      "sum((1 if x > 0 else 0) if x != 3 else 0 for x in xs) <= len(xs)");
  CHECK(unsupported_why("xs.count(1) == 0").find("attributes") != std::string::npos);
  // The whole spec stays boolean.
  CHECK(parse_spec("sorted(xs) == xs", s, SpecKind::Ensures)->sort == Sort::Bool);
  // Typos inside an unmodelled call are still reported.
  CHECK_THROWS_AS(parse_spec("sorted(xz) == xs", s, SpecKind::Ensures), SpecError);
}

TEST_CASE("pathologically deep input is an error, not a stack overflow", "[spec][errors]") {
  std::string parens = std::string(5000, '(') + "x" + std::string(5000, ')') + " > 0";
  CHECK(error_of(parens).find("nested too deeply") != std::string::npos);
  std::string nots;
  for (int i = 0; i < 20000; ++i) nots += "not ";
  CHECK(error_of(nots + "x").find("nested too deeply") != std::string::npos);
  std::string minus(20000, '-');
  CHECK(error_of(minus + "x > 0").find("nested too deeply") != std::string::npos);
  std::string sum = "x";
  for (int i = 0; i < 2000; ++i) sum += " + x";
  CHECK(error_of(sum + " > 0").find("nested deeper than 512 levels") != std::string::npos);
  // Reasonable nesting is fine.
  CHECK_NOTHROW(ens(std::string(20, '(') + "x" + std::string(20, ')') + " > 0"));
}
