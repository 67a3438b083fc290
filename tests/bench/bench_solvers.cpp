// Cost of one incremental forward check: push / add (path condition, not ensures) / check / pop
// on clamp(x, lo, hi) with requires lo <= hi and ensures lo <= result <= hi, rotating over its
// three return paths. Rows go from bare Z3 (prebuilt terms) to the full ContractChecker path
// stages/constraint will call at each statement boundary.
//
// Usage: bench_solvers [--iters N] [--json PATH]   (defaults: 5000, bench_solvers.json)
// Prints a table of p50/p90/p99/mean in microseconds and writes the same as JSON.
#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "solvers/function_contract.h"
#include "solvers/spec_parser.h"
#include "solvers/z3_backend.h"

using namespace vsynth::solvers;
using Clock = std::chrono::steady_clock;

namespace {

struct Row {
  std::string name;
  size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
};

// Runs `once(i)` iters times after a warm-up and returns latency percentiles (us).
Row measure(const std::string& name, size_t iters, const std::function<void(size_t)>& once) {
  for (size_t i = 0; i < std::min<size_t>(iters / 10 + 10, 500); ++i) once(i);
  std::vector<double> us(iters);
  for (size_t i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    once(i);
    us[i] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
  Row r{name, iters};
  double sum = 0;
  for (double u : us) sum += u;
  std::sort(us.begin(), us.end());
  auto pct = [&](double p) { return us[std::min(iters - 1, static_cast<size_t>(p * iters))]; };
  r.p50 = pct(0.50);
  r.p90 = pct(0.90);
  r.p99 = pct(0.99);
  r.mean = sum / static_cast<double>(iters);
  return r;
}

void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "bench_solvers: unexpected answer in '%s'\n", what);
    std::exit(1);
  }
}

// Bare Z3 with prebuilt terms: the floor under everything below.
Row raw_z3(const char* name, const char* logic, bool z3_timeout, size_t iters) {
  z3::context c;
  z3::solver s = *logic ? z3::solver(c, logic) : z3::solver(c);
  if (z3_timeout) s.set("timeout", 50u);
  z3::expr x = c.int_const("x"), lo = c.int_const("lo"), hi = c.int_const("hi");
  s.add(lo <= hi);
  const z3::expr pcs[] = {x < lo, !(x < lo) && x > hi, !(x < lo) && !(x > hi)};
  const z3::expr res[] = {lo, hi, x};
  return measure(name, iters, [&](size_t i) {
    s.push();
    s.add(pcs[i % 3] && !(lo <= res[i % 3] && res[i % 3] <= hi));
    expect(s.check() == z3::unsat, name);
    s.pop();
  });
}

}  // namespace

int main(int argc, char** argv) {
  size_t iters = 5000;
  std::string json_path = "bench_solvers.json";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = std::stoul(argv[++i]);
    } else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--iters N] [--json PATH]\n", argv[0]);
      return 2;
    }
  }

  const char* sig_line = "def clamp(x: int, lo: int, hi: int) -> int:";
  FunctionContract contract = parse_contract(sig_line, {"lo <= hi"}, {"lo <= result <= hi"});
  auto e = [&](const char* t) { return parse_expression(t, contract.signature.params); };
  const Expr pcs[] = {e("x < lo"), e("not x < lo and x > hi"), e("not x < lo and not x > hi")};
  const Expr vals[] = {e("lo"), e("hi"), e("x")};
  const Expr buggy_pc = e("not x < lo and x > hi"), buggy_val = e("x");

  std::vector<Row> rows;
  rows.push_back(raw_z3("z3 C++ API, default solver", "", false, iters));
  rows.push_back(raw_z3("z3 C++ API, default solver, timeout param", "", true, iters));
  rows.push_back(raw_z3("z3 C++ API, QF_AUFLIRA", "QF_AUFLIRA", false, iters));

  {
    Solver s(SolverOptions{8, "QF_AUFLIRA"});
    s.add(contract.requires_clauses[0]);
    const Expr ens = contract.ensures_clauses[0];
    rows.push_back(measure("Solver: IR translation, QF_AUFLIRA", iters, [&](size_t i) {
      s.push();
      s.add(pcs[i % 3]);
      s.add_not(ens, {{"result", vals[i % 3]}});
      expect(s.check(0).status == Status::Unsat, "Solver QF_AUFLIRA");
      s.pop();
    }));
  }
  {
    Solver s;
    s.add(contract.requires_clauses[0]);
    const Expr ens = contract.ensures_clauses[0];
    rows.push_back(measure("Solver: IR translation, no timeout", iters, [&](size_t i) {
      s.push();
      s.add(pcs[i % 3]);
      s.add_not(ens, {{"result", vals[i % 3]}});
      expect(s.check(0).status == Status::Unsat, "Solver");
      s.pop();
    }));
    rows.push_back(measure("Solver: IR translation, 50 ms timeout", iters, [&](size_t i) {
      s.push();
      s.add(pcs[i % 3]);
      s.add_not(ens, {{"result", vals[i % 3]}});
      expect(s.check(50).status == Status::Unsat, "Solver timeout");
      s.pop();
    }));
  }
  {
    ContractOptions o;
    o.timeout_ms = 50;
    o.cores = false;
    ContractChecker checker(contract, o);
    rows.push_back(measure("ContractChecker::check_return (forward check)", iters, [&](size_t i) {
      expect(checker.check_return(pcs[i % 3], vals[i % 3]).verdict == Verdict::Verified,
             "check_return");
    }));
    rows.push_back(
        measure("ContractChecker::check_return, refuted + counterexample", iters / 5, [&](size_t) {
          expect(checker.check_return(buggy_pc, buggy_val).verdict == Verdict::Refuted, "refuted");
        }));
  }
  {
    ContractOptions o;
    o.timeout_ms = 50;
    o.minimize_cores = false;
    ContractChecker checker(contract, o);  // requires tracked: every check passes assumptions
    rows.push_back(measure("ContractChecker::check_return, requires tracked", iters, [&](size_t i) {
      expect(checker.check_return(pcs[i % 3], vals[i % 3]).verdict == Verdict::Verified, "tracked");
    }));
  }
  {
    ContractOptions o;
    o.timeout_ms = 50;
    ContractChecker checker(contract, o);  // cores + minimisation (the final proof)
    rows.push_back(
        measure("ContractChecker::check_return + minimal core", iters / 5, [&](size_t i) {
          expect(checker.check_return(pcs[i % 3], vals[i % 3]).verdict == Verdict::Verified,
                 "core");
        }));
  }
  rows.push_back(measure("parse_contract (signature + 2 specs)", iters, [&](size_t) {
    expect(
        parse_contract(sig_line, {"lo <= hi"}, {"lo <= result <= hi"}).ensures_clauses.size() == 1,
        "parse");
  }));

  std::printf("%-58s %7s %9s %9s %9s %9s\n", "incremental check (clamp, 3 int vars)", "n", "p50 us",
              "p90 us", "p99 us", "mean us");
  nlohmann::json out;
  out["benchmark"] = "bench_solvers";
  out["z3_version"] = Z3_get_full_version();
  out["spec"] = {
      {"signature", sig_line}, {"requires", "lo <= hi"}, {"ensures", "lo <= result <= hi"}};
  for (const auto& r : rows) {
    std::printf("%-58s %7zu %9.1f %9.1f %9.1f %9.1f\n", r.name.c_str(), r.n, r.p50, r.p90, r.p99,
                r.mean);
    out["rows"].push_back({{"name", r.name},
                           {"n", r.n},
                           {"p50_us", r.p50},
                           {"p90_us", r.p90},
                           {"p99_us", r.p99},
                           {"mean_us", r.mean}});
  }
  std::ofstream(json_path) << out.dump(2) << "\n";
  std::printf("wrote %s\n", json_path.c_str());
  return 0;
}
