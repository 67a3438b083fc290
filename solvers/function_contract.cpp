#include "solvers/function_contract.h"

#include <algorithm>
#include <functional>

#include "solvers/spec_parser.h"

namespace vsynth::solvers {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Verified:
      return "verified";
    case Verdict::Refuted:
      return "refuted";
    case Verdict::Unknown:
      return "unknown";
  }
  return "?";
}

FunctionContract parse_contract(std::string_view signature_line,
                                const std::vector<std::string>& requires_texts,
                                const std::vector<std::string>& ensures_texts) {
  FunctionContract c;
  c.signature = parse_python_signature(signature_line);
  for (const auto& t : requires_texts)
    c.requires_clauses.push_back(parse_spec(t, c.signature, SpecKind::Requires));
  for (const auto& t : ensures_texts)
    c.ensures_clauses.push_back(parse_spec(t, c.signature, SpecKind::Ensures));
  return c;
}

namespace {

void add_unique(std::vector<std::string>& xs, const std::string& x) {
  if (std::find(xs.begin(), xs.end(), x) == xs.end()) xs.push_back(x);
}

// Does any node of `e` satisfy `pred`?
bool any_node(const Expr& e, const std::function<bool(const Node&)>& pred) {
  if (!e) return false;
  if (pred(*e)) return true;
  for (const auto& a : e->args)
    if (any_node(a, pred)) return true;
  return false;
}

}  // namespace

ContractChecker::ContractChecker(FunctionContract contract, ContractOptions options)
    : contract_(std::move(contract)),
      options_(std::move(options)),
      solver_(SolverOptions{options_.max_seq_len, options_.logic}) {
  for (const auto& p : contract_.signature.params)
    if (p.sort != Sort::Opaque) solver_.declare(p.name, p.sort);
  for (const auto& clause : contract_.requires_clauses) {
    if (!clause || clause->sort != Sort::Bool)
      throw SolverError("solvers: a requires clause must be bool, got `" + to_python(clause) + "`");
    // Tracked assertions are passed as assumptions to every check, which measured ~2.5x the
    // cost of a plain assertion (and a heavy tail) with Z3 4.8.12: track only if asked to.
    for (const auto& c : conjuncts(clause)) {
      if (options_.cores) {
        solver_.add_tracked(to_python(c), c);
      } else {
        solver_.add(c);
      }
    }
  }
  for (const auto& clause : contract_.ensures_clauses) {
    if (!clause || clause->sort != Sort::Bool)
      throw SolverError("solvers: an ensures clause must be bool, got `" + to_python(clause) + "`");
    for (const auto& c : conjuncts(clause)) ensures_conjuncts_.push_back(c);
  }
  ensures_ = ir::and_(contract_.ensures_clauses);

  const Signature& sig = contract_.signature;
  contract_real_ = sig.result == Sort::Real;
  contract_seq_ = sig.result == Sort::IntSeq;
  for (const auto& p : sig.params) {
    contract_real_ = contract_real_ || p.sort == Sort::Real;
    contract_seq_ = contract_seq_ || p.sort == Sort::IntSeq;
  }
  for (const auto& e : contract_.requires_clauses) scan_sorts(e, contract_real_, contract_seq_);
  for (const auto& e : contract_.ensures_clauses) scan_sorts(e, contract_real_, contract_seq_);
}

void ContractChecker::scan_sorts(const Expr& e, bool& real, bool& seq) {
  real = real || any_node(e, [](const Node& n) { return n.sort == Sort::Real; });
  seq = seq || any_node(e, [](const Node& n) {
          return n.sort == Sort::IntSeq && (n.op == Op::Var || n.op == Op::Unsupported);
        });
}

std::vector<std::string> ContractChecker::caveats(const std::vector<Expr>& extra) const {
  bool real = contract_real_, seq = contract_seq_;
  for (const auto& e : extra) scan_sorts(e, real, seq);
  std::vector<std::string> out;
  if (real) out.push_back("float is modelled as exact real arithmetic (no rounding, inf or nan)");
  if (seq) out.push_back("lists are modelled up to length " + std::to_string(options_.max_seq_len));
  return out;
}

CheckOutcome ContractChecker::check_return(const Expr& path_condition, const Expr& value,
                                           std::string_view where) {
  const Signature& sig = contract_.signature;
  Expr v = value;
  if (!sig.result) {
    if (v)
      throw SolverError("solvers: " + sig.function + " returns None, but a path returns `" +
                        to_python(v) + "`");
  } else {
    if (!v)
      throw SolverError("solvers: " + sig.function + " returns " +
                        std::string(sort_name(*sig.result)) + ", but a path has no return value");
    if (*sig.result == Sort::Real && v->sort == Sort::Int) v = ir::to_real(v);
    if (v->sort != *sig.result && v->sort != Sort::Opaque)
      throw SolverError("solvers: return value `" + to_python(v) + "` is " +
                        std::string(sort_name(v->sort)) + " but " + sig.function + " returns " +
                        std::string(sort_name(*sig.result)));
    if (v->sort == Sort::Opaque) v = ir::unsupported(*sig.result, v->text, v->detail);
  }
  Bindings b;
  if (v) b.emplace_back("result", v);
  return run(path_condition, ensures_, b, v, false, where);
}

CheckOutcome ContractChecker::check_assert(const Expr& path_condition, const Expr& assertion,
                                           std::string_view where) {
  if (!assertion || assertion->sort != Sort::Bool)
    throw SolverError("solvers: an assertion must be bool, got `" + to_python(assertion) + "`");
  return run(path_condition, assertion, {}, assertion, true, where);
}

CheckOutcome ContractChecker::run(const Expr& path_condition, const Expr& goal,
                                  const Bindings& bindings, const Expr& value, bool is_assert,
                                  std::string_view where) {
  if (path_condition && path_condition->sort != Sort::Bool)
    throw SolverError("solvers: a path condition must be bool, got `" + to_python(path_condition) +
                      "`");
  CheckOutcome out;
  solver_.push();
  try {
    if (path_condition) solver_.add(path_condition);
    solver_.add_not(goal, bindings);
    const CheckResult r = solver_.check(options_.timeout_ms);
    out.solver_us = r.elapsed_us;
    switch (r.status) {
      case Status::Unsat:
        out.verdict = Verdict::Verified;
        if (options_.cores) out.used_requires = solver_.unsat_core(options_.minimize_cores);
        break;
      case Status::Sat:
        out.verdict = Verdict::Refuted;
        out.counterexample = explain(value, goal, is_assert, where);
        break;
      case Status::Unknown:
        out.verdict = Verdict::Unknown;
        out.reason = r.reason;
        break;
    }
  } catch (...) {
    solver_.pop();
    throw;
  }
  solver_.pop();
  out.caveats = caveats({path_condition, value});
  return out;
}

Counterexample ContractChecker::explain(const Expr& value, const Expr& assertion, bool is_assert,
                                        std::string_view where) {
  const Signature& sig = contract_.signature;
  Counterexample cx;
  const Model m = solver_.model();
  std::string call = sig.function + "(";
  for (size_t i = 0; i < sig.params.size(); ++i) {
    const Param& p = sig.params[i];
    if (i) call += ", ";
    const Value* v = m.find(p.name);
    call += p.name + "=" + (v ? v->python() : "?");
    if (v) cx.inputs.values.emplace_back(p.name, *v);
  }
  call += ")";

  if (is_assert) {
    cx.failed = to_python(assertion);
    const Evaluation ev = solver_.eval(assertion);
    if (ev.raised) {
      cx.error = ev.error;
      cx.text = call + ": assert " + cx.failed + " raised " + ev.error;
    } else {
      cx.text = call + ": assert " + cx.failed + " failed";
    }
  } else {
    Bindings b;
    std::string returned = "None";
    bool raised = false;
    if (value) {
      const Evaluation ev = solver_.eval(value);
      if (ev.raised) {
        raised = true;
        cx.error = ev.error;
        cx.text = call + " raised " + ev.error;
      } else {
        cx.returned = ev.value;
        returned = ev.value.python();
        b.emplace_back("result", value);
      }
    }
    if (!raised) {
      for (const auto& c : ensures_conjuncts_) {
        const Evaluation ec = solver_.eval(c, b);
        if (!ec.raised && ec.value.boolean) continue;
        cx.failed = to_python(c);
        cx.text = call + " returned " + returned + "; ensures " + cx.failed;
        if (ec.raised) {
          cx.error = ec.error;
          cx.text += " raised " + ec.error;
        }
        break;
      }
      if (cx.text.empty()) {  // not expected: the model refutes the conjunction
        cx.failed = to_python(ensures_);
        cx.text = call + " returned " + returned + "; ensures " + cx.failed + " does not hold";
      }
    }
  }
  if (!where.empty()) cx.text += " (at " + std::string(where) + ")";
  return cx;
}

CheckOutcome ContractChecker::check_paths(const std::vector<ReturnPath>& paths) {
  if (!requires_sat_) {
    const CheckResult r = solver_.check(options_.timeout_ms);
    requires_sat_ = r.status != Status::Unsat;
  }
  CheckOutcome agg;
  agg.verdict = Verdict::Verified;
  for (size_t i = 0; i < paths.size(); ++i) {
    CheckOutcome o = check_return(paths[i].condition, paths[i].value, paths[i].where);
    agg.solver_us += o.solver_us;
    if (o.verdict == Verdict::Refuted) {
      o.counterexample->path = i;
      o.solver_us = agg.solver_us;
      return o;
    }
    if (o.verdict == Verdict::Unknown && agg.verdict != Verdict::Unknown) {
      agg.verdict = Verdict::Unknown;
      agg.reason = "path " + std::to_string(i) +
                   (paths[i].where.empty() ? "" : " (" + paths[i].where + ")") + ": " + o.reason;
    }
    for (const auto& u : o.used_requires) add_unique(agg.used_requires, u);
    for (const auto& c : o.caveats) add_unique(agg.caveats, c);
  }
  if (paths.empty()) agg.caveats = caveats({});
  if (!*requires_sat_)
    agg.caveats.push_back("requires are unsatisfiable: every path verifies vacuously");
  return agg;
}

CheckOutcome check_function_contract(const FunctionContract& contract,
                                     const std::vector<ReturnPath>& paths,
                                     const ContractOptions& options) {
  ContractChecker checker(contract, options);
  return checker.check_paths(paths);
}

}  // namespace vsynth::solvers
