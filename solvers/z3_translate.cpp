#include "solvers/z3_translate.h"

#include <algorithm>

namespace vsynth::solvers::detail {

namespace {

// all()/any() over range(a, b) is unrolled when b - a has a static bound up to this.
constexpr int64_t kMaxUnroll = 4096;

std::string snippet(const Expr& e) {
  std::string s = to_python(e);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return "in `" + s + "`";
}

z3::expr mk_and(z3::context& ctx, const std::vector<z3::expr>& xs) {
  if (xs.empty()) return ctx.bool_val(true);
  if (xs.size() == 1) return xs[0];
  z3::expr_vector v(ctx);
  for (const auto& x : xs) v.push_back(x);
  return z3::mk_and(v);
}

z3::expr mk_or(z3::context& ctx, const std::vector<z3::expr>& xs) {
  if (xs.empty()) return ctx.bool_val(false);
  if (xs.size() == 1) return xs[0];
  z3::expr_vector v(ctx);
  for (const auto& x : xs) v.push_back(x);
  return z3::mk_or(v);
}

z3::expr real2int(const z3::expr& a) {  // floor
  Z3_ast r = Z3_mk_real2int(a.ctx(), a);
  a.check_error();
  return z3::expr(a.ctx(), r);
}

// len is a numeral of at least k+1: element k certainly exists.
bool surely_has(const SeqVal& s, unsigned k) {
  int64_t n = 0;
  return s.len.is_numeral_i64(n) && n > static_cast<int64_t>(k);
}

}  // namespace

std::string rational_text(const std::string& python_float) {
  std::string digits;
  int64_t frac = 0, exp = 0;
  bool negative = false, in_frac = false;
  size_t i = 0;
  if (i < python_float.size() && (python_float[i] == '-' || python_float[i] == '+'))
    negative = python_float[i++] == '-';
  for (; i < python_float.size(); ++i) {
    const char c = python_float[i];
    if (c == '_') continue;
    if (c == '.') {
      in_frac = true;
    } else if (c == 'e' || c == 'E') {
      exp = std::stoll(python_float.substr(i + 1));
      break;
    } else {
      digits += c;
      if (in_frac) ++frac;
    }
  }
  const int64_t scale = frac - exp;
  if (scale > 400 || scale < -400)
    throw SolverError("solvers: float literal '" + python_float +
                      "' is outside the modelled range (|exponent| <= 400)");
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  std::string out = negative && digits != "0" ? "-" : "";
  if (scale <= 0) return out + digits + std::string(static_cast<size_t>(-scale), '0');
  return out + digits + "/1" + std::string(static_cast<size_t>(scale), '0');
}

z3::expr Translator::defined() const {
  std::vector<z3::expr> xs;
  for (const auto& o : obligations_) xs.push_back(o.holds);
  return mk_and(ctx_, xs);
}

void Translator::oblige(const z3::expr& requirement, std::string error) {
  if (requirement.is_true()) return;
  obligations_.push_back(
      {guard_ ? z3::implies(*guard_, requirement) : requirement, std::move(error)});
}

Val Translator::abstracted(Sort s, const std::string& why) {
  abstract(why);
  // The unknown value may also raise: a fresh condition keeps the abstraction an
  // over-approximation of Python's behaviour.
  Val may_raise = vars_.fresh(Sort::Bool, "raises");
  oblige(may_raise.z(), "unmodelled construct raised (" + why + ")");
  return vars_.fresh(s, "u");
}

template <class F>
auto Translator::guarded(const z3::expr& g, F&& f) {
  struct Restore {
    std::optional<z3::expr>& slot;
    std::optional<z3::expr> saved;
    ~Restore() { slot = saved; }
  } restore{guard_, guard_};
  guard_ = guard_ ? (*guard_ && g) : g;
  return f();
}

Val Translator::lookup(const Expr& e) {
  for (auto it = env_.rbegin(); it != env_.rend(); ++it) {
    if (it->first != e->text) continue;
    if (it->second.sort != e->sort)
      throw SolverError("solvers: '" + e->text + "' is bound to a " +
                        std::string(sort_name(it->second.sort)) + " but used as " +
                        std::string(sort_name(e->sort)));
    return it->second;
  }
  return vars_.variable(e->text, e->sort);
}

std::optional<int64_t> Translator::seq_bound(const Expr& seq) {
  switch (seq->op) {
    case Op::Var:
      for (auto it = env_.rbegin(); it != env_.rend(); ++it) {
        if (it->first != seq->text) continue;
        if (!it->second.seq || !it->second.seq->bounded) return std::nullopt;
        return it->second.seq->max_len;
      }
      return vars_.max_seq_len();
    case Op::ListLit:
      return static_cast<int64_t>(seq->args.size());
    case Op::Unsupported:
      return vars_.max_seq_len();
    case Op::Ite: {
      auto a = seq_bound(seq->args[1]);
      auto b = seq_bound(seq->args[2]);
      if (!a || !b) return std::nullopt;
      return std::max(*a, *b);
    }
    default:
      return std::nullopt;
  }
}

Val Translator::sequence(const Expr& e) {
  auto s = std::make_shared<SeqVal>(ctx_.int_val(0));
  if (e->op == Op::ListLit) {
    std::vector<z3::expr> elems;
    for (const auto& a : e->args) elems.push_back(value(a).z());
    s->len = ctx_.int_val(static_cast<int64_t>(elems.size()));
    s->max_len = static_cast<unsigned>(elems.size());
    s->elem = [elems](unsigned k) { return elems[k]; };
    z3::context& ctx = ctx_;
    s->at = [elems, &ctx](const z3::expr& i) {
      int64_t k = 0;
      if (i.is_numeral_i64(k) && k >= 0 && k < static_cast<int64_t>(elems.size()))
        return elems[static_cast<size_t>(k)];
      z3::expr r = elems.empty() ? ctx.int_val(0) : elems.back();
      for (size_t j = elems.size(); j-- > 1;)
        r = z3::ite(i == ctx.int_val(static_cast<int64_t>(j - 1)), elems[j - 1], r);
      return r;
    };
    return Val{Sort::IntSeq, std::nullopt, s};
  }
  // range(lo, hi)
  z3::expr lo = value(e->args[0]).z();
  z3::expr hi = value(e->args[1]).z();
  s->lo = lo;
  s->hi = hi;
  s->len = z3::ite(hi > lo, hi - lo, ctx_.int_val(0));
  s->at = [lo](const z3::expr& i) { return lo + i; };
  auto cb = [this](const Expr& q) { return seq_bound(q); };
  // The span is bounded by the end's highest value minus the start's lowest; neither end needs
  // its other side (range(2, min(abs(b), 9) + 2) has at most 9 elements whatever b is).
  // An end with no static bound may still be a constant here: inside an unrolled loop its
  // bound variables are the loop's numerals (range(k, 4) for k = 0, 1, 2).
  auto constant = [](const z3::expr& x) -> std::optional<int64_t> {
    int64_t v = 0;
    if (z3::expr(x).simplify().is_numeral_i64(v)) return v;
    return std::nullopt;
  };
  auto bl = int_interval(e->args[0], cb).lo;
  auto bh = int_interval(e->args[1], cb).hi;
  if (!bl) bl = constant(lo);
  if (!bh) bh = constant(hi);
  int64_t span = 0;
  if (bl && bh && !__builtin_sub_overflow(*bh, *bl, &span) && span <= kMaxUnroll) {
    s->bounded = true;
    s->max_len = static_cast<unsigned>(std::max<int64_t>(0, span));
    z3::context& ctx = ctx_;
    s->elem = [lo, &ctx](unsigned k) { return lo + ctx.int_val(static_cast<int64_t>(k)); };
  } else {
    s->bounded = false;
  }
  return Val{Sort::IntSeq, std::nullopt, s};
}

z3::expr Translator::floor_div_mod(const Expr& e, const z3::expr& a, const z3::expr& b,
                                   bool want_div) {
  if (e->sort == Sort::Real) {
    oblige(b != ctx_.real_val(0), std::string("ZeroDivisionError: float ") +
                                      (want_div ? "floor division" : "modulo") + " by zero " +
                                      snippet(e));
    z3::expr fl = z3::to_real(real2int(a / b));
    return want_div ? fl : a - b * fl;
  }
  oblige(b != 0, "ZeroDivisionError: integer division or modulo by zero " + snippet(e));
  // Z3's div/mod are Euclidean (0 <= r < |b|); Python's round toward -inf (r has b's sign).
  // They agree when b > 0 or r == 0; otherwise q_py = q - 1 and r_py = r + b.
  z3::expr q = a / b;
  z3::expr r = z3::mod(a, b);
  int64_t bv = 0;
  if (b.is_numeral_i64(bv) && bv > 0) return want_div ? q : r;
  z3::expr same = bv < 0 && b.is_numeral() ? (r == 0) : (b >= 0 || r == 0);
  return want_div ? z3::ite(same, q, q - 1) : z3::ite(same, r, r + b);
}

Val Translator::seq_compare_eq(const Val& a, const Val& b, const Expr& e) {
  if (!a.seq->bounded || !b.seq->bounded)
    return abstracted(Sort::Bool, to_python(e) + ": comparing an unbounded range");
  std::vector<z3::expr> parts{a.seq->len == b.seq->len};
  const unsigned n = std::min(a.seq->max_len, b.seq->max_len);
  for (unsigned k = 0; k < n; ++k) {
    z3::expr same = a.seq->elem(k) == b.seq->elem(k);
    parts.push_back(surely_has(*a.seq, k) ? same
                                          : z3::implies(a.seq->len > static_cast<int>(k), same));
  }
  return scalar(Sort::Bool, mk_and(ctx_, parts));
}

// Python evaluates all()/any() element by element and stops at the first element that decides
// it (all: a False body, any: a True one), so the body raises for the call exactly when some
// element i in range is undefined while every earlier element j is defined and does not
// decide: exists i. in_range(i) & !defined(i) & forall j in [lo, i). defined(j) & goes_on(j).
z3::expr Translator::raises_first(bool is_all, const z3::expr& i, const z3::expr& lo,
                                  const z3::expr& in_range, const z3::expr& body,
                                  const std::vector<Obligation>& inner) {
  std::vector<z3::expr> defs;
  for (const Obligation& o : inner) defs.push_back(o.holds);
  const z3::expr defined_i = mk_and(ctx_, defs);
  const z3::expr j = ctx_.int_const(("!" + i.decl().name().str() + "_before").c_str());
  z3::expr_vector from(ctx_), to(ctx_);
  from.push_back(i);
  to.push_back(j);
  z3::expr defined_j = mk_and(ctx_, defs).substitute(from, to);
  z3::expr body_j = z3::expr(body).substitute(from, to);
  const z3::expr goes_on_j = is_all ? body_j : !body_j;
  return z3::exists(i, in_range && !defined_i &&
                           z3::forall(j, z3::implies(lo <= j && j < i, defined_j && goes_on_j)));
}

// The exception text for a body that may raise: Python's own when every way it can raise is
// the same exception, else a plain statement.
std::string Translator::inner_error(const Expr& e, const std::vector<Obligation>& inner) const {
  const std::string first = inner.front().error.substr(0, inner.front().error.find(':'));
  for (const Obligation& o : inner) {
    if (o.error.substr(0, o.error.find(':')) != first) {
      return "the body of " + snippet(e) + " raised";
    }
  }
  return first + ": in the body of " + snippet(e);
}

// sum(body for x in domain): unrolled over a bounded domain, every element's body evaluated (no
// short circuit: any raise raises); an unbounded one has no closed form and is abstracted.
Val Translator::sum_of(const Expr& e) {
  const std::string& name = e->args[0]->text;
  Val dom = value(e->args[1]);
  const SeqVal& s = *dom.seq;
  if (!s.bounded) return abstracted(Sort::Int, to_python(e) + ": sum over an unbounded range");
  z3::expr total = ctx_.int_val(0);
  for (unsigned k = 0; k < s.max_len; ++k) {
    const bool sure = surely_has(s, k);
    const z3::expr exists = s.len > static_cast<int>(k);
    env_.emplace_back(name, scalar(Sort::Int, s.elem(k)));
    const z3::expr b =
        sure ? value(e->args[2]).z() : guarded(exists, [&] { return value(e->args[2]).z(); });
    env_.pop_back();
    total = total + (sure ? b : z3::ite(exists, b, ctx_.int_val(0)));
  }
  return scalar(Sort::Int, total);
}

Val Translator::quantify(const Expr& e) {
  const bool is_all = e->op == Op::All;
  const std::string& name = e->args[0]->text;
  const Expr& body = e->args[2];
  Val dom = value(e->args[1]);
  const SeqVal& s = *dom.seq;

  if (s.bounded) {
    // Unrolled exactly: element k is evaluated only if it exists and all()/any() has not
    // stopped at an earlier element (Python short-circuits on the first False/True).
    std::vector<z3::expr> terms;
    z3::expr undecided = ctx_.bool_val(true);
    for (unsigned k = 0; k < s.max_len; ++k) {
      const bool sure = surely_has(s, k);
      z3::expr exists = s.len > static_cast<int>(k);
      env_.emplace_back(name, scalar(Sort::Int, s.elem(k)));
      z3::expr gate = sure ? undecided : (exists && undecided);
      z3::expr b = guarded(gate, [&] { return value(body).z(); });
      env_.pop_back();
      if (is_all) {
        terms.push_back(sure ? b : z3::implies(exists, b));
        undecided = k == 0 ? b : (undecided && b);
      } else {
        terms.push_back(sure ? b : (exists && b));
        undecided = k == 0 ? !b : (undecided && !b);
      }
    }
    return scalar(Sort::Bool, is_all ? mk_and(ctx_, terms) : mk_or(ctx_, terms));
  }

  if (!s.lo || find_unsupported(body))
    return abstracted(Sort::Bool, to_python(e) + ": quantifier over an unbounded domain");
  z3::expr i = ctx_.int_const(("!" + name + std::to_string(++quantifiers_)).c_str());
  std::vector<Obligation> outer;
  outer.swap(obligations_);
  std::optional<z3::expr> outer_guard = guard_;
  guard_.reset();
  env_.emplace_back(name, scalar(Sort::Int, i));
  z3::expr b = value(body).z();
  env_.pop_back();
  guard_ = outer_guard;
  std::vector<Obligation> inner;
  inner.swap(obligations_);
  obligations_ = std::move(outer);
  z3::expr in_range = *s.lo <= i && i < *s.hi;
  if (!inner.empty())
    oblige(!raises_first(is_all, i, *s.lo, in_range, b, inner), inner_error(e, inner));
  return scalar(Sort::Bool,
                is_all ? z3::forall(i, z3::implies(in_range, b)) : z3::exists(i, in_range && b));
}

Val Translator::value(const Expr& e) {
  if (!e) throw SolverError("solvers: null expression");
  auto arg = [&](size_t k) { return value(e->args[k]).z(); };
  switch (e->op) {
    case Op::BoolLit:
      return scalar(Sort::Bool, ctx_.bool_val(e->bool_value));
    case Op::IntLit:
      return scalar(Sort::Int, ctx_.int_val(e->int_value));
    case Op::RealLit:
      return scalar(Sort::Real, ctx_.real_val(rational_text(e->text).c_str()));
    case Op::Var:
      return lookup(e);
    case Op::Unsupported:
      if (e->sort == Sort::Opaque)
        throw SolverError("solvers: cannot translate `" + e->text +
                          "`: its type is not modelled (" + e->detail + ")");
      return abstracted(e->sort, to_python(e) + ": " + e->detail);
    case Op::ListLit:
    case Op::Range:
      return sequence(e);
    case Op::Len:
      return scalar(Sort::Int, value(e->args[0]).seq->len);
    case Op::Index: {
      Val s = value(e->args[0]);
      z3::expr i = arg(1);
      const z3::expr& n = s.seq->len;
      oblige(-n <= i && i < n, "IndexError: list index out of range " + snippet(e));
      int64_t k = 0;
      z3::expr idx = (i.is_numeral_i64(k) && k >= 0) ? i : z3::ite(i < 0, i + n, i);
      return scalar(Sort::Int, s.seq->at(idx));
    }
    case Op::Sum: {
      Val s = value(e->args[0]);
      if (!s.seq->bounded) return abstracted(Sort::Int, to_python(e) + ": unbounded range");
      z3::expr total = ctx_.int_val(0);
      for (unsigned k = 0; k < s.seq->max_len; ++k) {
        z3::expr x = s.seq->elem(k);
        total = total + (surely_has(*s.seq, k)
                             ? x
                             : z3::ite(s.seq->len > static_cast<int>(k), x, ctx_.int_val(0)));
      }
      return scalar(Sort::Int, total);
    }
    case Op::SeqMin:
    case Op::SeqMax: {
      const bool is_min = e->op == Op::SeqMin;
      Val s = value(e->args[0]);
      oblige(s.seq->len > 0, std::string("ValueError: ") + (is_min ? "min" : "max") +
                                 "() arg is an empty sequence " + snippet(e));
      if (!s.seq->bounded) return abstracted(Sort::Int, to_python(e) + ": unbounded range");
      if (s.seq->max_len == 0) return scalar(Sort::Int, ctx_.int_val(0));
      z3::expr m = s.seq->elem(0);
      for (unsigned k = 1; k < s.seq->max_len; ++k) {
        z3::expr x = s.seq->elem(k);
        z3::expr better = is_min ? x < m : x > m;
        if (!surely_has(*s.seq, k)) better = better && s.seq->len > static_cast<int>(k);
        m = z3::ite(better, x, m);
      }
      return scalar(Sort::Int, m);
    }
    case Op::In: {
      z3::expr x = arg(0);
      Val s = value(e->args[1]);
      if (s.seq->lo) return scalar(Sort::Bool, *s.seq->lo <= x && x < *s.seq->hi);
      if (!s.seq->bounded) return abstracted(Sort::Bool, to_python(e) + ": unbounded sequence");
      std::vector<z3::expr> hits;
      for (unsigned k = 0; k < s.seq->max_len; ++k) {
        z3::expr hit = s.seq->elem(k) == x;
        hits.push_back(surely_has(*s.seq, k) ? hit : (s.seq->len > static_cast<int>(k) && hit));
      }
      return scalar(Sort::Bool, mk_or(ctx_, hits));
    }
    case Op::Neg:
      return scalar(e->sort, -arg(0));
    case Op::Add:
      return scalar(e->sort, arg(0) + arg(1));
    case Op::Sub:
      return scalar(e->sort, arg(0) - arg(1));
    case Op::Mul:
      return scalar(e->sort, arg(0) * arg(1));
    case Op::Div: {
      z3::expr a = arg(0), b = arg(1);
      oblige(b != ctx_.real_val(0), "ZeroDivisionError: division by zero " + snippet(e));
      return scalar(Sort::Real, a / b);
    }
    case Op::FloorDiv:
    case Op::Mod: {
      z3::expr a = arg(0), b = arg(1);
      return scalar(e->sort, floor_div_mod(e, a, b, e->op == Op::FloorDiv));
    }
    case Op::TruncDiv:
    case Op::TruncMod: {
      z3::expr a = arg(0), b = arg(1);
      oblige(b != 0, "ZeroDivisionError: division by zero " + snippet(e));
      z3::expr abs_a = z3::ite(a >= 0, a, -a), abs_b = z3::ite(b >= 0, b, -b);
      if (e->op == Op::TruncDiv) {
        z3::expr q = abs_a / abs_b;
        return scalar(Sort::Int, z3::ite((a >= 0) == (b >= 0), q, -q));
      }
      z3::expr r = z3::mod(abs_a, abs_b);
      return scalar(Sort::Int, z3::ite(a >= 0, r, -r));
    }
    case Op::Abs: {
      z3::expr a = arg(0);
      return scalar(e->sort, z3::ite(a >= 0, a, -a));
    }
    case Op::Min:
    case Op::Max: {
      z3::expr m = arg(0);
      for (size_t k = 1; k < e->args.size(); ++k) {
        z3::expr x = arg(k);
        m = e->op == Op::Min ? z3::ite(x < m, x, m) : z3::ite(x > m, x, m);
      }
      return scalar(e->sort, m);
    }
    case Op::ToReal:
      return scalar(Sort::Real, z3::to_real(arg(0)));
    case Op::ToInt: {
      z3::expr a = arg(0);
      return scalar(Sort::Int, z3::ite(a >= 0, real2int(a), -real2int(-a)));
    }
    case Op::Eq:
    case Op::Ne: {
      Val a = value(e->args[0]);
      Val b = value(e->args[1]);
      z3::expr r = a.sort == Sort::IntSeq ? seq_compare_eq(a, b, e).z() : (a.z() == b.z());
      return scalar(Sort::Bool, e->op == Op::Eq ? r : !r);
    }
    case Op::Lt:
      return scalar(Sort::Bool, arg(0) < arg(1));
    case Op::Le:
      return scalar(Sort::Bool, arg(0) <= arg(1));
    case Op::Gt:
      return scalar(Sort::Bool, arg(0) > arg(1));
    case Op::Ge:
      return scalar(Sort::Bool, arg(0) >= arg(1));
    case Op::Not:
      return scalar(Sort::Bool, !arg(0));
    case Op::And:
    case Op::Or: {
      const bool is_and = e->op == Op::And;
      std::vector<z3::expr> xs{arg(0)};
      // Operand k is evaluated only when every earlier one was True (and) / False (or).
      z3::expr reached = is_and ? xs[0] : !xs[0];
      for (size_t k = 1; k < e->args.size(); ++k) {
        z3::expr x = guarded(reached, [&] { return arg(k); });
        xs.push_back(x);
        reached = reached && (is_and ? x : !x);
      }
      return scalar(Sort::Bool, is_and ? mk_and(ctx_, xs) : mk_or(ctx_, xs));
    }
    case Op::Implies: {
      z3::expr a = arg(0);
      z3::expr b = guarded(a, [&] { return arg(1); });
      return scalar(Sort::Bool, z3::implies(a, b));
    }
    case Op::Ite: {
      z3::expr c = arg(0);
      Val t = guarded(c, [&] { return value(e->args[1]); });
      Val f = guarded(!c, [&] { return value(e->args[2]); });
      if (e->sort != Sort::IntSeq) return scalar(e->sort, z3::ite(c, t.z(), f.z()));
      auto s = std::make_shared<SeqVal>(z3::ite(c, t.seq->len, f.seq->len));
      auto ts = t.seq, fs = f.seq;
      s->at = [c, ts, fs](const z3::expr& i) { return z3::ite(c, ts->at(i), fs->at(i)); };
      s->bounded = ts->bounded && fs->bounded;
      if (s->bounded) {
        s->max_len = std::max(ts->max_len, fs->max_len);
        s->elem = [c, ts, fs](unsigned k) {
          // Past one side's maximum, that side's length rules the element out anyway.
          if (k >= ts->max_len) return fs->elem(k);
          if (k >= fs->max_len) return ts->elem(k);
          return z3::ite(c, ts->elem(k), fs->elem(k));
        };
      }
      return Val{Sort::IntSeq, std::nullopt, s};
    }
    case Op::All:
    case Op::Any:
      return quantify(e);
    case Op::SumOf:
      return sum_of(e);
  }
  throw SolverError("solvers: unknown IR operator");
}

}  // namespace vsynth::solvers::detail
