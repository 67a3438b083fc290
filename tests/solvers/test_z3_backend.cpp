// The Z3 session: Python semantics proven by Z3, push/pop, models, cores, timeouts.
#include <catch2/catch.hpp>

#include "solvers/spec_parser.h"
#include "solvers/z3_backend.h"

using namespace vsynth::solvers;
using namespace vsynth::solvers::ir;

namespace {

Expr I(const char* n) {
  return var(n, Sort::Int);
}
Expr L(int64_t v) {
  return int_lit(v);
}

// "`e` holds for every assignment satisfying `facts`", decided by Z3.
Status prove(const std::vector<Expr>& facts, const Expr& e, const SolverOptions& o = {}) {
  Solver s(o);
  for (const auto& f : facts) s.add(f);
  s.add_not(e);
  return s.check(10000).status;
}

Expr parse(std::string_view text, std::vector<Param> names) {
  return parse_expression(text, names);
}

}  // namespace

TEST_CASE("Python floor division and modulo, proven by Z3 on symbolic operands", "[z3]") {
  Expr a = I("a"), b = I("b");
  struct Case {
    int64_t a, b, q, r;
  };
  for (Case c : {Case{-7, 2, -4, 1}, Case{7, -2, -4, -1}, Case{-7, -2, 3, -1}, Case{7, 2, 3, 1},
                 Case{-6, 3, -2, 0}, Case{6, -3, -2, 0}}) {
    INFO(c.a << " // " << c.b);
    std::vector<Expr> facts{eq(a, L(c.a)), eq(b, L(c.b))};
    CHECK(prove(facts, eq(floor_div(a, b), L(c.q))) == Status::Unsat);
    CHECK(prove(facts, eq(mod(a, b), L(c.r))) == Status::Unsat);
  }
  // The defining identities, for all a and all b != 0.
  CHECK(prove({ne(b, L(0))}, eq(a, add(mul(b, floor_div(a, b)), mod(a, b)))) == Status::Unsat);
  CHECK(prove({gt(b, L(0))}, and_({le(L(0), mod(a, b)), lt(mod(a, b), b)})) == Status::Unsat);
  CHECK(prove({lt(b, L(0))}, and_({lt(b, mod(a, b)), le(mod(a, b), L(0))})) == Status::Unsat);
  // And a wrong claim is not provable: Euclidean modulo would make this hold.
  CHECK(prove({lt(b, L(0))}, ge(mod(a, b), L(0))) == Status::Sat);
  // Literal operands go through the same encoding.
  CHECK(prove({}, eq(floor_div(L(-7), L(2)), L(-4))) == Status::Unsat);
  CHECK(prove({}, eq(mod(L(-7), L(2)), L(1))) == Status::Unsat);
}

TEST_CASE("C truncating division and float floor division", "[z3]") {
  Expr a = I("a"), b = I("b");
  std::vector<Expr> facts{eq(a, L(-7)), eq(b, L(2))};
  CHECK(prove(facts, eq(trunc_div(a, b), L(-3))) == Status::Unsat);
  CHECK(prove(facts, eq(trunc_mod(a, b), L(-1))) == Status::Unsat);
  Expr x = var("x", Sort::Real);
  CHECK(prove({eq(x, real_lit("-3.5"))}, eq(floor_div(x, real_lit("2.0")), real_lit("-2.0"))) ==
        Status::Unsat);
  CHECK(prove({eq(x, real_lit("-3.5"))}, eq(mod(x, real_lit("2.0")), real_lit("0.5"))) ==
        Status::Unsat);
  CHECK(prove({eq(x, real_lit("-3.5"))}, eq(to_int(x), L(-3))) == Status::Unsat);  // truncation
  CHECK(prove({}, eq(div(L(7), L(2)), real_lit("3.5"))) == Status::Unsat);
}

TEST_CASE("short-circuit evaluation decides what may raise", "[z3]") {
  Expr x = I("x"), y = I("y");
  // `y == 0 or x // y > 0` never raises; the reversed order raises when y == 0.
  CHECK(prove({eq(y, L(0))}, or_({eq(y, L(0)), gt(floor_div(x, y), L(0))})) == Status::Unsat);
  CHECK(prove({eq(y, L(0))}, or_({gt(floor_div(x, y), L(0)), eq(y, L(0))})) == Status::Sat);
  // `x // y if y != 0 else 0` is total.
  CHECK(prove({eq(y, L(0))}, eq(ite(ne(y, L(0)), floor_div(x, y), L(0)), L(0))) == Status::Unsat);
  CHECK(prove({eq(y, L(0))}, implies(ne(y, L(0)), eq(mod(x, y), L(0)))) == Status::Unsat);
}

TEST_CASE("eval reports the exception Python would raise", "[z3]") {
  Solver s;
  Expr x = I("x"), y = I("y");
  s.add(eq(x, L(1)));
  s.add(eq(y, L(0)));
  REQUIRE(s.check(1000).status == Status::Sat);
  Evaluation ev = s.eval(floor_div(x, y));
  CHECK(ev.raised);
  CHECK(ev.error == "ZeroDivisionError: integer division or modulo by zero in `x // y`");
  Evaluation ok = s.eval(add(x, L(41)));
  CHECK_FALSE(ok.raised);
  CHECK(ok.value.integer == 42);
}

TEST_CASE("sequences: Python indexing, len, sum, min, all/any, membership", "[z3][seq]") {
  std::vector<Param> p{{"xs", Sort::IntSeq, ""}, {"n", Sort::Int, ""}, {"i", Sort::Int, ""}};
  Expr xs_is_123 = parse("xs == [1, 2, 3]", p);
  auto holds = [&](std::string_view claim) {
    return prove({xs_is_123}, parse(claim, p)) == Status::Unsat;
  };
  CHECK(holds("xs[-1] == 3 and xs[0] == 1 and xs[-3] == 1"));
  CHECK(holds("len(xs) == 3 and sum(xs) == 6 and min(xs) == 1 and max(xs) == 3"));
  CHECK(holds("all(x > 0 for x in xs) and any(x == 2 for x in xs) and not any(x > 3 for x in xs)"));
  CHECK(holds("2 in xs and 5 not in xs"));
  CHECK(holds("all(xs[k] < xs[k + 1] for k in range(len(xs) - 1))"));
  CHECK_FALSE(holds("xs[3] == 0 or True"));  // xs[3] raises before `or` is reached
  CHECK(holds("True or xs[3] == 0"));
  // Index out of range and min() of an empty list raise.
  Solver s;
  s.add(parse("len(xs) == 0", p));
  REQUIRE(s.check(1000).status == Status::Sat);
  CHECK(s.eval(parse("min(xs)", p)).error.find("ValueError: min() arg is an empty sequence") == 0);
  CHECK(s.eval(parse("xs[0]", p)).error.find("IndexError: list index out of range") == 0);
  // Lengths are bounded by max_seq_len (proofs hold up to that bound).
  CHECK(prove({}, parse("len(xs) <= 8", p)) == Status::Unsat);
  CHECK(prove({}, parse("len(xs) <= 3", p), SolverOptions{3, ""}) == Status::Unsat);
  // all/any over an unbounded range become quantifiers.
  CHECK(prove({parse("n > 10", p)}, parse("any(k == 5 for k in range(n))", p)) == Status::Unsat);
  CHECK(prove({}, parse("all(k * 0 == 0 for k in range(n))", p)) == Status::Unsat);
  CHECK(prove({}, parse("i in range(n) or i < 0 or i >= n", p)) == Status::Unsat);
  // Their bodies raise exactly when Python's would: at the first element that raises before
  // one decides the call (all: a False body; any: a True one).
  const Expr n_gt_3 = parse("n > 3", p);
  CHECK(prove({n_gt_3}, parse("all(n % k >= 0 for k in range(1, n + 1))", p)) == Status::Unsat);
  CHECK(prove({n_gt_3}, parse("not all(n // (2 - k) > n for k in range(0, n))", p)) ==
        Status::Unsat);  // k = 0 decides False; k = 2 would raise but is never reached
  // k = 0 decides True: never a refutation (Z3 may answer unknown on the alternation).
  CHECK(prove({n_gt_3}, parse("any(n // (2 - k) > 0 for k in range(0, n))", p)) != Status::Sat);
  CHECK(prove({n_gt_3}, parse("all(n // (2 - k) >= 0 for k in range(0, n)) or True", p)) ==
        Status::Sat);  // k = 0, 1 go on, k = 2 raises ZeroDivisionError before `or`
}

TEST_CASE("push/pop restores facts, declarations and tracked assertions", "[z3]") {
  Solver s;
  Expr x = I("x");
  s.add(gt(x, L(5)));
  CHECK(s.check(1000).status == Status::Sat);
  s.push();
  CHECK(s.depth() == 1);
  s.add(lt(x, L(3)));
  s.add_tracked("y is big", gt(I("y"), L(100)));
  CHECK(s.check(1000).status == Status::Unsat);
  s.pop();
  CHECK(s.depth() == 0);
  REQUIRE(s.check(1000).status == Status::Sat);
  Model m = s.model();
  REQUIRE(m.values.size() == 1);  // y was declared inside the popped scope
  CHECK(m.values[0].first == "x");
  CHECK(*m.values[0].second.integer > 5);
  CHECK_THROWS_AS(s.pop(), SolverError);
  for (int k = 0; k < 100; ++k) {  // many rounds leave the session as it was
    s.push();
    s.add(eq(x, L(k)));
    CHECK(s.check(1000).status == (k > 5 ? Status::Sat : Status::Unsat));
    s.pop();
  }
}

TEST_CASE("model values print as Python literals", "[z3]") {
  Solver s;
  s.declare("b", Sort::Bool);
  s.declare("r", Sort::Real);
  s.declare("xs", Sort::IntSeq);
  s.add(parse("b and r * 3 == 1 and xs == [4, -5]",
              {{"b", Sort::Bool, ""}, {"r", Sort::Real, ""}, {"xs", Sort::IntSeq, ""}}));
  REQUIRE(s.check(1000).status == Status::Sat);
  Model m = s.model();
  CHECK(m.find("b")->python() == "True");
  CHECK(m.find("r")->python() == "0.3333333333333333");
  CHECK_FALSE(m.find("r")->exact);
  CHECK(m.find("xs")->python() == "[4, -5]");
  s.add(parse("r == 2.5", {{"r", Sort::Real, ""}}));
  CHECK(s.check(1000).status == Status::Unsat);
  CHECK_THROWS_AS(s.model(), SolverError);
}

TEST_CASE("unsat cores name the tracked assertions that matter", "[z3][core]") {
  Solver s;
  Expr x = I("x"), y = I("y");
  s.add_tracked("x positive", gt(x, L(0)));
  s.add_tracked("y positive", gt(y, L(0)));
  s.add_tracked("x small", lt(x, L(10)));
  s.push();
  s.add(gt(x, L(20)));
  REQUIRE(s.check(1000).status == Status::Unsat);
  auto core = s.unsat_core(true);
  REQUIRE(core.size() == 1);
  CHECK(core[0] == "x small");
  s.pop();
  s.push();
  s.add(lt(add(x, y), L(2)));
  REQUIRE(s.check(1000).status == Status::Unsat);
  core = s.unsat_core(true);
  std::sort(core.begin(), core.end());
  CHECK(core == std::vector<std::string>{"x positive", "y positive"});
  s.pop();
  CHECK(s.check(1000).status == Status::Sat);
  CHECK_THROWS_AS(s.unsat_core(), SolverError);
}

TEST_CASE("unsupported constructs never produce a trusted model", "[z3]") {
  Expr x = I("x");
  Expr opaque = unsupported(Sort::Bool, "sorted(xs) == xs", "sorted() is not modelled");
  Solver s;
  s.add(opaque);
  CheckResult r = s.check(1000);
  CHECK(r.status == Status::Unknown);
  CHECK(r.reason.find("model may be spurious") != std::string::npos);
  CHECK(r.reason.find("sorted()") != std::string::npos);
  // ...but unsat stays sound: the abstraction only adds behaviours.
  s.add(gt(x, L(0)));
  s.add(lt(x, L(0)));
  CHECK(s.check(1000).status == Status::Unsat);
  CHECK_FALSE(s.abstractions().empty());
}

TEST_CASE("a hard nonlinear query with a 1 ms timeout answers unknown, then the session works",
          "[z3][timeout]") {
  // x^3 + y^3 = z^3 has no positive solution (Fermat, n = 3) and Z3 cannot prove it: whatever
  // stops the search (our 1 ms deadline, or Z3 giving up), the answer can only be unknown.
  Solver s;
  std::vector<Param> p{{"x", Sort::Int, ""}, {"y", Sort::Int, ""}, {"z", Sort::Int, ""}};
  s.add(parse("x > 0 and y > 0 and z > 0", p));
  s.push();
  s.add(parse("x * x * x + y * y * y == z * z * z", p));
  CheckResult r = s.check(1);
  CHECK(r.status == Status::Unknown);
  CHECK_FALSE(r.reason.empty());
  s.pop();
  // The interrupt leaves nothing behind: the next checks run normally.
  s.push();
  s.add(parse("x == 2 and y == 3", p));
  CHECK(s.check(1000).status == Status::Sat);
  s.pop();
  CHECK(s.check(0).status == Status::Sat);
}

TEST_CASE("a fixed logic (QF_AUFLIRA) gives the same answers", "[z3]") {
  SolverOptions o{8, "QF_AUFLIRA"};
  Expr a = I("a"), b = I("b");
  CHECK(prove({ne(b, L(0))}, eq(a, add(mul(b, floor_div(a, b)), mod(a, b))), o) == Status::Unsat);
  CHECK(prove({lt(b, L(0))}, ge(mod(a, b), L(0)), o) == Status::Sat);
}

TEST_CASE("facts must be bool and variables keep one sort", "[z3]") {
  Solver s;
  CHECK_THROWS_AS(s.add(I("x")), SolverError);
  s.add(gt(I("x"), L(0)));
  CHECK_THROWS_AS(s.add(var("x", Sort::Bool)), SolverError);
  CHECK_THROWS_AS(s.declare("x", Sort::Real), SolverError);
  CHECK_NOTHROW(s.declare("x", Sort::Int));
  CHECK_THROWS_AS(s.declare("s", Sort::Opaque), SolverError);
}

TEST_CASE("the deepest expression the builders allow prints and solves", "[z3]") {
  Expr e = I("x");
  for (uint32_t i = 1; i + 2 < kMaxExprDepth; ++i) e = add(e, floor_div(I("y"), L(1 + i % 7)));
  CHECK(to_python(e).size() > 1000);
  Solver s;
  s.add(eq(I("y"), L(0)));
  CHECK(prove({eq(I("y"), L(0))}, eq(e, I("x"))) == Status::Unsat);
}
