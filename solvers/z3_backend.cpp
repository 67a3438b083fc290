#include "solvers/z3_backend.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "solvers/z3_translate.h"
#include "solvers/z3_watchdog.h"

namespace vsynth::solvers {

using detail::SeqVal;
using detail::Translator;
using detail::Val;

namespace {

constexpr size_t kMaxShownElements = 64;

// Python's repr() of a float: the shortest digits that round-trip, fixed notation for
// 1e-4 <= |d| < 1e16, a trailing ".0" on integral values.
std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf = [-]D[.DDD]e[+-]XX
  std::string s(buf);
  const bool neg = s[0] == '-';
  if (neg) s = s.substr(1);
  const size_t epos = s.find('e');
  const int exp = std::atoi(s.c_str() + epos + 1);
  std::string digits;
  for (size_t i = 0; i < epos; ++i)
    if (s[i] != '.') digits += s[i];
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      const size_t int_len = static_cast<size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out = digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    } else {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += e;
  }
  return neg ? "-" + out : out;
}

Value scalar_value(const z3::expr& v, Sort sort) {
  Value out;
  out.sort = sort;
  if (sort == Sort::Bool) {
    out.boolean = v.is_true();
    return out;
  }
  if (sort == Sort::Int) {
    std::string s;
    if (v.is_numeral(s)) {
      out.number = s;
      int64_t i = 0;
      if (v.is_numeral_i64(i)) out.integer = i;
    } else {
      out.number = "?";
      out.exact = false;
    }
    return out;
  }
  // Real: exact rational or algebraic number, shown as the nearest Python float.
  std::string dec = Z3_get_numeral_decimal_string(v.ctx(), v, 20);
  if (!dec.empty() && dec.back() == '?') {
    out.exact = false;
    dec.pop_back();
  }
  if (v.is_algebraic()) out.exact = false;
  out.number = python_float_repr(std::strtod(dec.c_str(), nullptr));
  return out;
}

std::string join(const std::vector<std::string>& xs, std::string_view sep) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i) s += sep;
    s += xs[i];
  }
  return s;
}

[[noreturn]] void rethrow_z3(const z3::exception& e, std::string_view where) {
  throw SolverError("z3 (" + std::string(where) + "): " + e.msg());
}

}  // namespace

std::string Value::python() const {
  switch (sort) {
    case Sort::Bool:
      return boolean ? "True" : "False";
    case Sort::IntSeq: {
      std::vector<std::string> xs;
      for (const auto& e : elements) xs.push_back(e.python());
      if (truncated) xs.push_back("...");
      return "[" + join(xs, ", ") + "]";
    }
    default:
      return number;
  }
}

const Value* Model::find(std::string_view name) const {
  for (const auto& [n, v] : values)
    if (n == name) return &v;
  return nullptr;
}

std::string_view status_name(Status s) {
  switch (s) {
    case Status::Sat:
      return "sat";
    case Status::Unsat:
      return "unsat";
    case Status::Unknown:
      return "unknown";
  }
  return "?";
}

struct Solver::Impl : detail::VarSource {
  struct Decl {
    std::string name;
    Val val;
  };
  struct Tracked {
    std::string label;
    z3::expr literal;
  };
  struct Scope {
    size_t decls, tracked, abstractions;
  };
  enum class Last { None, Sat, Unsat, Unknown };
  class EvalSource;

  SolverOptions opts;
  z3::context ctx;
  z3::solver solver;
  std::vector<Decl> decls;
  std::vector<Tracked> tracked;
  std::vector<std::string> abstracted;
  std::vector<Scope> scopes;
  mutable unsigned fresh_counter = 0;
  Last last = Last::None;
  std::optional<z3::model> model;
  unsigned last_timeout = 0;

  explicit Impl(SolverOptions o)
      : opts(std::move(o)),
        solver(opts.logic.empty() ? z3::solver(ctx) : z3::solver(ctx, opts.logic.c_str())) {}

  const Decl* find(const std::string& name) const {
    for (const auto& d : decls)
      if (d.name == name) return &d;
    return nullptr;
  }

  // The terms of a variable; `assert_bounds` adds 0 <= len <= max_seq_len for a sequence.
  Val make_var(const std::string& name, Sort sort, bool assert_bounds) {
    switch (sort) {
      case Sort::Bool:
        return Val{sort, ctx.bool_const(name.c_str()), nullptr};
      case Sort::Int:
        return Val{sort, ctx.int_const(name.c_str()), nullptr};
      case Sort::Real:
        return Val{sort, ctx.real_const(name.c_str()), nullptr};
      case Sort::IntSeq: {
        z3::expr arr = ctx.constant(name.c_str(), ctx.array_sort(ctx.int_sort(), ctx.int_sort()));
        z3::expr len = ctx.int_const((name + "!len").c_str());
        if (assert_bounds) solver.add(len >= 0 && len <= static_cast<int>(opts.max_seq_len));
        auto s = std::make_shared<SeqVal>(len);
        s->bounded = true;
        s->max_len = opts.max_seq_len;
        z3::context& c = ctx;
        s->elem = [arr, &c](unsigned k) {
          return z3::select(arr, c.int_val(static_cast<int64_t>(k)));
        };
        s->at = [arr](const z3::expr& i) { return z3::select(arr, i); };
        return Val{sort, std::nullopt, s};
      }
      case Sort::Opaque:
        break;
    }
    throw SolverError("solvers: variable '" + name + "' has an unsupported type");
  }

  Val variable(const std::string& name, Sort sort) override {
    if (const Decl* d = find(name)) {
      if (d->val.sort != sort)
        throw SolverError("solvers: variable '" + name + "' is declared as " +
                          std::string(sort_name(d->val.sort)) + " but used as " +
                          std::string(sort_name(sort)));
      return d->val;
    }
    Val v = make_var(name, sort, true);
    decls.push_back({name, v});
    return v;
  }

  Val fresh(Sort sort, const std::string& hint) override {
    return make_var("!" + hint + std::to_string(++fresh_counter), sort, true);
  }

  unsigned max_seq_len() const override { return opts.max_seq_len; }

  void assert_fact(const Expr& fact, const Bindings& bindings, bool negated,
                   std::optional<z3::expr> literal) {
    if (!fact) throw SolverError("solvers: null fact");
    if (fact->sort != Sort::Bool)
      throw SolverError("solvers: a fact must be bool, got " + std::string(sort_name(fact->sort)) +
                        " `" + to_python(fact) + "`");
    try {
      Translator tr(ctx, *this);
      for (const auto& [name, e] : bindings) tr.bind(name, tr.value(e));
      z3::expr v = tr.value(fact).z();
      z3::expr holds = tr.obligations().empty() ? v : (tr.defined() && v);
      z3::expr f = negated ? !holds : holds;
      solver.add(literal ? z3::implies(*literal, f) : f);
      for (const auto& a : tr.abstractions()) abstracted.push_back(a);
    } catch (const z3::exception& e) {
      rethrow_z3(e, "add");
    }
  }

  z3::check_result run_check(const std::vector<z3::expr>& assumptions, unsigned timeout_ms,
                             bool& timed_out) {
    uint64_t ticket = 0;
    if (timeout_ms) {
      ticket = detail::Watchdog::instance().arm(
          detail::Watchdog::Clock::now() + std::chrono::milliseconds(timeout_ms), ctx, solver);
    }
    z3::check_result r = z3::unknown;
    try {
      if (assumptions.empty()) {
        r = solver.check();
      } else {
        z3::expr_vector v(ctx);
        for (const auto& a : assumptions) v.push_back(a);
        r = solver.check(v);
      }
    } catch (const z3::exception& e) {
      if (ticket) detail::Watchdog::instance().disarm(ticket);
      rethrow_z3(e, "check");
    }
    timed_out = ticket && detail::Watchdog::instance().disarm(ticket);
    return r;
  }

  std::vector<z3::expr> tracked_literals() const {
    std::vector<z3::expr> lits;
    for (const auto& t : tracked) lits.push_back(t.literal);
    return lits;
  }
};

// Variables for eval(): the session's declarations, and bare constants (no assertions) for
// anything else, so that evaluating never changes the session.
class Solver::Impl::EvalSource : public detail::VarSource {
 public:
  explicit EvalSource(Solver::Impl& impl) : impl_(impl) {}
  Val variable(const std::string& name, Sort sort) override {
    if (const auto* d = impl_.find(name); d && d->val.sort == sort) return d->val;
    return impl_.make_var(name, sort, false);
  }
  Val fresh(Sort sort, const std::string& hint) override {
    return impl_.make_var("!" + hint + std::to_string(++impl_.fresh_counter), sort, false);
  }
  unsigned max_seq_len() const override { return impl_.opts.max_seq_len; }

 private:
  Solver::Impl& impl_;
};

Solver::Solver(SolverOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  if (impl_->opts.max_seq_len > 1024)
    throw SolverError("solvers: max_seq_len " + std::to_string(impl_->opts.max_seq_len) +
                      " is too large (sequence operations unroll over it; use <= 1024)");
}
Solver::~Solver() = default;
Solver::Solver(Solver&&) noexcept = default;
Solver& Solver::operator=(Solver&&) noexcept = default;

const SolverOptions& Solver::options() const {
  return impl_->opts;
}

void Solver::declare(const std::string& name, Sort sort) {
  if (sort == Sort::Opaque)
    throw SolverError("solvers: cannot declare '" + name + "' with an unsupported type");
  ir::var(name, sort);  // validates the name
  try {
    impl_->variable(name, sort);
  } catch (const z3::exception& e) {
    rethrow_z3(e, "declare");
  }
}

void Solver::add(const Expr& fact, const Bindings& bindings) {
  impl_->assert_fact(fact, bindings, false, std::nullopt);
}

void Solver::add_not(const Expr& fact, const Bindings& bindings) {
  impl_->assert_fact(fact, bindings, true, std::nullopt);
}

void Solver::add_tracked(const std::string& label, const Expr& fact) {
  z3::expr lit = impl_->ctx.bool_const(("!track" + std::to_string(++impl_->fresh_counter)).c_str());
  impl_->assert_fact(fact, {}, false, lit);
  impl_->tracked.push_back({label, lit});
}

void Solver::push() {
  try {
    impl_->solver.push();
  } catch (const z3::exception& e) {
    rethrow_z3(e, "push");
  }
  impl_->scopes.push_back({impl_->decls.size(), impl_->tracked.size(), impl_->abstracted.size()});
}

void Solver::pop(unsigned n) {
  if (n > impl_->scopes.size())
    throw SolverError("solvers: pop(" + std::to_string(n) + ") with only " +
                      std::to_string(impl_->scopes.size()) + " scope(s) pushed");
  if (n == 0) return;
  try {
    impl_->solver.pop(n);
  } catch (const z3::exception& e) {
    rethrow_z3(e, "pop");
  }
  const Impl::Scope s = impl_->scopes[impl_->scopes.size() - n];
  impl_->scopes.resize(impl_->scopes.size() - n);
  impl_->decls.erase(impl_->decls.begin() + static_cast<std::ptrdiff_t>(s.decls),
                     impl_->decls.end());
  impl_->tracked.erase(impl_->tracked.begin() + static_cast<std::ptrdiff_t>(s.tracked),
                       impl_->tracked.end());
  impl_->abstracted.resize(s.abstractions);
}

unsigned Solver::depth() const {
  return static_cast<unsigned>(impl_->scopes.size());
}

CheckResult Solver::check(unsigned timeout_ms) {
  Impl& m = *impl_;
  CheckResult out;
  m.model.reset();
  m.last_timeout = timeout_ms;
  bool timed_out = false;
  const auto t0 = std::chrono::steady_clock::now();
  const z3::check_result r = m.run_check(m.tracked_literals(), timeout_ms, timed_out);
  out.elapsed_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  switch (r) {
    case z3::sat:
      m.last = Impl::Last::Sat;
      m.model = m.solver.get_model();
      if (m.abstracted.empty()) {
        out.status = Status::Sat;
      } else {
        out.status = Status::Unknown;
        out.reason = "model may be spurious: " + join(m.abstracted, "; ");
      }
      break;
    case z3::unsat:
      m.last = Impl::Last::Unsat;
      out.status = Status::Unsat;
      break;
    case z3::unknown:
      m.last = Impl::Last::Unknown;
      out.status = Status::Unknown;
      out.reason = timed_out ? "timeout after " + std::to_string(timeout_ms) + " ms"
                             : "z3: " + m.solver.reason_unknown();
      break;
  }
  return out;
}

Model Solver::model() const {
  const Impl& m = *impl_;
  if (!m.model) throw SolverError("solvers: model() needs a preceding check() that found a model");
  Model out;
  try {
    for (const auto& d : m.decls) {
      Value v;
      if (d.val.sort == Sort::IntSeq) {
        v.sort = Sort::IntSeq;
        int64_t n = 0;
        m.model->eval(d.val.seq->len, true).is_numeral_i64(n);
        const size_t shown =
            std::min<size_t>(static_cast<size_t>(std::max<int64_t>(n, 0)), kMaxShownElements);
        for (size_t k = 0; k < shown; ++k)
          v.elements.push_back(scalar_value(
              m.model->eval(d.val.seq->elem(static_cast<unsigned>(k)), true), Sort::Int));
        v.truncated = static_cast<size_t>(n) > shown;
      } else {
        v = scalar_value(m.model->eval(*d.val.scalar, true), d.val.sort);
      }
      out.values.emplace_back(d.name, std::move(v));
    }
  } catch (const z3::exception& e) {
    rethrow_z3(e, "model");
  }
  return out;
}

Evaluation Solver::eval(const Expr& e, const Bindings& bindings) const {
  Impl& m = *impl_;
  if (!m.model) throw SolverError("solvers: eval() needs a preceding check() that found a model");
  if (!e) throw SolverError("solvers: eval() of a null expression");
  if (e->sort == Sort::Opaque)
    throw SolverError("solvers: cannot evaluate `" + to_python(e) + "`: its type is not modelled");
  Evaluation out;
  try {
    Impl::EvalSource src(m);
    Translator tr(m.ctx, src);
    for (const auto& [name, b] : bindings) tr.bind(name, tr.value(b));
    Val v = tr.value(e);
    out.abstracted = !tr.abstractions().empty();
    for (const auto& o : tr.obligations()) {
      if (m.model->eval(o.holds, true).is_false()) {
        out.raised = true;
        out.error = o.error;
        return out;
      }
    }
    if (v.sort == Sort::IntSeq) {
      out.value.sort = Sort::IntSeq;
      int64_t n = 0;
      m.model->eval(v.seq->len, true).is_numeral_i64(n);
      const size_t shown =
          std::min<size_t>(static_cast<size_t>(std::max<int64_t>(n, 0)), kMaxShownElements);
      for (size_t k = 0; k < shown; ++k) {
        z3::expr x = v.seq->bounded ? v.seq->elem(static_cast<unsigned>(k))
                                    : v.seq->at(m.ctx.int_val(static_cast<int64_t>(k)));
        out.value.elements.push_back(scalar_value(m.model->eval(x, true), Sort::Int));
      }
      out.value.truncated = static_cast<size_t>(n) > shown;
    } else {
      out.value = scalar_value(m.model->eval(v.z(), true), v.sort);
    }
  } catch (const z3::exception& ex) {
    rethrow_z3(ex, "eval");
  }
  return out;
}

std::vector<std::string> Solver::unsat_core(bool minimize) {
  Impl& m = *impl_;
  if (m.last != Impl::Last::Unsat)
    throw SolverError("solvers: unsat_core() needs a preceding check() that answered unsat");
  std::vector<z3::expr> core;
  try {
    z3::expr_vector zc = m.solver.unsat_core();
    for (unsigned i = 0; i < zc.size(); ++i) core.push_back(zc[i]);
    if (minimize) {
      // Deletion-based minimisation: drop one literal; if the rest is still unsat it was not
      // needed (and Z3's new core may shrink the candidates further), else it is necessary.
      std::vector<z3::expr> necessary;
      while (!core.empty()) {
        z3::expr candidate = core.back();
        core.pop_back();
        std::vector<z3::expr> trial = necessary;
        trial.insert(trial.end(), core.begin(), core.end());
        bool timed_out = false;
        if (m.run_check(trial, m.last_timeout, timed_out) == z3::unsat) {
          z3::expr_vector smaller = m.solver.unsat_core();
          std::vector<z3::expr> kept;
          for (const auto& c : core) {
            for (unsigned k = 0; k < smaller.size(); ++k) {
              if (z3::eq(c, smaller[k])) {
                kept.push_back(c);
                break;
              }
            }
          }
          core = std::move(kept);
        } else {
          necessary.push_back(candidate);
        }
      }
      core = std::move(necessary);
    }
  } catch (const z3::exception& e) {
    rethrow_z3(e, "unsat_core");
  }
  m.last = Impl::Last::Unsat;
  std::vector<std::string> labels;
  for (const auto& t : m.tracked) {
    for (const auto& c : core) {
      if (z3::eq(t.literal, c)) {
        if (std::find(labels.begin(), labels.end(), t.label) == labels.end())
          labels.push_back(t.label);
        break;
      }
    }
  }
  return labels;
}

std::vector<std::string> Solver::abstractions() const {
  return impl_->abstracted;
}

}  // namespace vsynth::solvers
