// IR builders (sort checks, promotion, unsupported propagation) and the Python printer.
#include <catch2/catch.hpp>

#include "solvers/ir.h"

using namespace vsynth::solvers;
using namespace vsynth::solvers::ir;

namespace {
Expr I(const char* n) {
  return var(n, Sort::Int);
}
Expr B(const char* n) {
  return var(n, Sort::Bool);
}
}  // namespace

TEST_CASE("builders reject sort mismatches with a message naming operator and sorts", "[ir]") {
  try {
    sub(var("xs", Sort::IntSeq), I("x"));
    FAIL("no exception");
  } catch (const SolverError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("cannot apply '-' to list[int] (xs) and int (x)") != std::string::npos);
    CHECK(msg.find("operands must be int or float") != std::string::npos);
  }
  CHECK_THROWS_AS(eq(var("xs", Sort::IntSeq), I("x")), SolverError);
  CHECK_THROWS_AS(not_(I("x")), SolverError);
  CHECK_THROWS_AS(and_({B("b"), I("x")}), SolverError);
  CHECK_THROWS_AS(ite(I("x"), I("x"), I("y")), SolverError);
  CHECK_THROWS_AS(ite(B("b"), I("x"), B("c")), SolverError);
  CHECK_THROWS_AS(len(I("x")), SolverError);
  CHECK_THROWS_AS(index(var("xs", Sort::IntSeq), B("b")), SolverError);
  CHECK_THROWS_AS(trunc_div(var("r", Sort::Real), I("x")), SolverError);
  CHECK_THROWS_AS(var("not an identifier", Sort::Int), SolverError);
  CHECK_THROWS_AS(real_lit("1/3"), SolverError);
  CHECK_THROWS_AS(all(I("x"), I("y"), B("b")), SolverError);  // domain must be a sequence
  CHECK_THROWS_AS(min({I("x")}), SolverError);
}

TEST_CASE("int operands are promoted to float and the promotion is invisible in print", "[ir]") {
  Expr e = add(I("x"), real_lit("0.5"));
  CHECK(e->sort == Sort::Real);
  CHECK(e->args[0]->op == Op::ToReal);
  CHECK(to_python(e) == "x + 0.5");
  CHECK(div(I("a"), I("b"))->sort == Sort::Real);
  CHECK(floor_div(I("a"), I("b"))->sort == Sort::Int);
  CHECK(to_python(to_real(I("x"))) == "float(x)");
}

TEST_CASE("valid Python the IR cannot model becomes Unsupported, not an error", "[ir]") {
  Expr xs = var("xs", Sort::IntSeq);
  Expr cat = add(xs, xs);
  CHECK(cat->op == Op::Unsupported);
  CHECK(cat->sort == Sort::IntSeq);
  Expr lex = lt(xs, xs);
  CHECK(lex->op == Op::Unsupported);
  CHECK(lex->sort == Sort::Bool);
  CHECK(pow(I("x"), I("n"))->op == Op::Unsupported);
  // An Opaque operand (a str parameter) poisons its parent, keeping the parent's sort.
  Expr s = unsupported(Sort::Opaque, "s", "parameter 's' has type 'str'");
  Expr cmp = eq(s, I("x"));
  CHECK(cmp->op == Op::Unsupported);
  CHECK(cmp->sort == Sort::Bool);
  CHECK(find_unsupported(and_({gt(I("x"), int_lit(0)), cmp})).value().find("str") !=
        std::string::npos);
  CHECK_FALSE(find_unsupported(gt(I("x"), int_lit(0))).has_value());
}

TEST_CASE("printer uses Python precedence with minimal parentheses", "[ir][print]") {
  Expr a = I("a"), b = I("b"), c = I("c");
  CHECK(to_python(mul(add(a, b), c)) == "(a + b) * c");
  CHECK(to_python(add(a, mul(b, c))) == "a + b * c");
  CHECK(to_python(sub(sub(a, b), c)) == "a - b - c");
  CHECK(to_python(sub(a, sub(b, c))) == "a - (b - c)");
  CHECK(to_python(neg(add(a, b))) == "-(a + b)");
  CHECK(to_python(floor_div(neg(a), int_lit(2))) == "-a // 2");
  CHECK(to_python(mod(a, int_lit(-2))) == "a % -2");
  CHECK(to_python(not_(and_({B("p"), B("q")}))) == "not (p and q)");
  CHECK(to_python(or_({B("p"), and_({B("q"), B("r")})})) == "p or q and r");
  CHECK(to_python(and_({or_({B("p"), B("q")}), B("r")})) == "(p or q) and r");
  CHECK(to_python(ite(gt(a, b), a, b)) == "a if a > b else b");
  CHECK(to_python(add(ite(gt(a, b), a, b), c)) == "(a if a > b else b) + c");
  CHECK(to_python(implies(B("p"), B("q"))) == "not p or q");
  CHECK(to_python(eq(lt(a, b), B("p"))) == "(a < b) == p");
  Expr xs = var("xs", Sort::IntSeq);
  CHECK(to_python(not_(in(a, xs))) == "a not in xs");
  CHECK(to_python(index(xs, sub(len(xs), int_lit(1)))) == "xs[len(xs) - 1]");
  CHECK(to_python(all(var("i", Sort::Int), range(int_lit(0), len(xs)),
                      ge(index(xs, I("i")), int_lit(0)))) ==
        "all(xs[i] >= 0 for i in range(0, len(xs)))");
  CHECK(to_python(trunc_div(a, b)) == "cdiv(a, b)");
  CHECK(to_python(list_lit({int_lit(1), int_lit(-2)})) == "[1, -2]");
}

TEST_CASE("comparison chains desugar to and, print back as chains, split into conjuncts", "[ir]") {
  Expr lo = I("lo"), r = I("result"), hi = I("hi");
  Expr ch = compare_chain({lo, r, hi}, {Op::Le, Op::Le});
  CHECK(ch->op == Op::And);
  CHECK(ch->chain);
  CHECK(to_python(ch) == "lo <= result <= hi");
  auto parts = conjuncts(and_({ch, gt(hi, int_lit(0))}));
  REQUIRE(parts.size() == 3);
  CHECK(to_python(parts[0]) == "lo <= result");
  CHECK(to_python(parts[1]) == "result <= hi");
  CHECK(to_python(parts[2]) == "hi > 0");
  CHECK_THROWS_AS(compare_chain({lo, r}, {Op::Add}), SolverError);
}

TEST_CASE("free_vars skips comprehension-bound names, int_bounds follows len bounds", "[ir]") {
  Expr xs = var("xs", Sort::IntSeq);
  Expr i = I("i");
  Expr e =
      and_({gt(I("n"), int_lit(0)), all(i, range(int_lit(0), I("n")), lt(index(xs, i), I("m")))});
  auto fv = free_vars(e);
  REQUIRE(fv.size() == 3);
  CHECK(fv[0].first == "n");
  CHECK(fv[1].first == "xs");
  CHECK(fv[1].second == Sort::IntSeq);
  CHECK(fv[2].first == "m");

  SeqMaxLen eight = [](const Expr&) { return std::optional<int64_t>(8); };
  auto b = int_bounds(sub(len(xs), int_lit(1)), eight);
  REQUIRE(b);
  CHECK(b->first == -1);
  CHECK(b->second == 7);
  CHECK_FALSE(int_bounds(I("n"), eight));
}

TEST_CASE("truthiness and Python's value-returning and/or", "[ir]") {
  CHECK(to_python(truthy(I("x"))) == "x != 0");
  CHECK(to_python(truthy(var("xs", Sort::IntSeq))) == "len(xs) > 0");
  Expr e = py_or(I("x"), int_lit(7));  // `x or 7` is an int
  CHECK(e->sort == Sort::Int);
  CHECK(to_python(e) == "x if x != 0 else 7");
  CHECK(py_and(B("p"), B("q"))->op == Op::And);
}

TEST_CASE("pow with a small literal exponent unrolls into multiplication", "[ir]") {
  CHECK(to_python(pow(I("x"), int_lit(3))) == "x * x * x");
  CHECK(to_python(pow(I("x"), int_lit(0))) == "1");
  CHECK(pow(var("r", Sort::Real), int_lit(2))->sort == Sort::Real);
}

TEST_CASE("trees taller than kMaxExprDepth are refused", "[ir]") {
  Expr e = I("x");
  for (uint32_t i = 1; i < kMaxExprDepth; ++i) e = add(e, int_lit(1));
  CHECK(e->depth == kMaxExprDepth);
  CHECK_THROWS_AS(add(e, int_lit(1)), SolverError);
}
