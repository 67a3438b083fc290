#include "solvers/ir.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

namespace vsynth::solvers {

std::string_view sort_name(Sort s) {
  switch (s) {
    case Sort::Bool:
      return "bool";
    case Sort::Int:
      return "int";
    case Sort::Real:
      return "float";
    case Sort::IntSeq:
      return "list[int]";
    case Sort::Opaque:
      return "<unsupported>";
  }
  return "?";
}

namespace {

std::string_view op_symbol(Op op) {
  switch (op) {
    case Op::Neg:
      return "unary -";
    case Op::Add:
      return "+";
    case Op::Sub:
      return "-";
    case Op::Mul:
      return "*";
    case Op::Div:
      return "/";
    case Op::FloorDiv:
      return "//";
    case Op::Mod:
      return "%";
    case Op::TruncDiv:
      return "cdiv";
    case Op::TruncMod:
      return "cmod";
    case Op::Abs:
      return "abs()";
    case Op::Min:
      return "min()";
    case Op::Max:
      return "max()";
    case Op::ToReal:
      return "float()";
    case Op::ToInt:
      return "int()";
    case Op::Eq:
      return "==";
    case Op::Ne:
      return "!=";
    case Op::Lt:
      return "<";
    case Op::Le:
      return "<=";
    case Op::Gt:
      return ">";
    case Op::Ge:
      return ">=";
    case Op::Not:
      return "not";
    case Op::And:
      return "and";
    case Op::Or:
      return "or";
    case Op::Implies:
      return "implies";
    case Op::Ite:
      return "if-else";
    case Op::Len:
      return "len()";
    case Op::Index:
      return "[]";
    case Op::Sum:
      return "sum()";
    case Op::SeqMin:
      return "min()";
    case Op::SeqMax:
      return "max()";
    case Op::In:
      return "in";
    case Op::Range:
      return "range()";
    case Op::ListLit:
      return "list literal";
    case Op::All:
      return "all()";
    case Op::Any:
      return "any()";
    case Op::SumOf:
      return "sum()";
    default:
      return "?";
  }
}

Expr make(Op op, Sort sort, std::vector<Expr> args) {
  auto n = std::make_shared<Node>(op, sort);
  for (const auto& a : args) n->depth = std::max(n->depth, a->depth + 1);
  if (n->depth > kMaxExprDepth)
    throw SolverError("solvers: expression nested deeper than " + std::to_string(kMaxExprDepth) +
                      " levels; split it (e.g. into intermediate variables)");
  n->args = std::move(args);
  return n;
}

void require_nonnull(const Expr& e, Op op) {
  if (!e) throw SolverError("solvers: null operand given to '" + std::string(op_symbol(op)) + "'");
}

bool numeric(Sort s) {
  return s == Sort::Int || s == Sort::Real;
}

// An Opaque operand poisons the whole node: the result is Unsupported of the sort the node would
// have had, printed as the node would print, carrying the operand's reason.
std::optional<Expr> poisoned(Op op, Sort result, const std::vector<Expr>& args) {
  for (const auto& a : args) {
    if (a->sort == Sort::Opaque) {
      auto raw = make(op, result, args);
      return ir::unsupported(result, to_python(raw), a->detail);
    }
  }
  return std::nullopt;
}

[[noreturn]] void sort_error(Op op, const std::vector<Expr>& args, std::string_view valid) {
  std::string msg = "solvers: cannot apply '" + std::string(op_symbol(op)) + "' to ";
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) msg += i + 1 == args.size() ? " and " : ", ";
    msg += sort_name(args[i]->sort);
    msg += " (" + to_python(args[i]) + ")";
  }
  msg += "; ";
  msg += valid;
  throw SolverError(msg);
}

Expr promote(const Expr& e, Sort to) {
  if (to == Sort::Real && e->sort == Sort::Int) {
    auto n = std::make_shared<Node>(*ir::to_real(e));
    n->implicit = true;
    return n;
  }
  return e;
}

// Python's bool is an int subclass: True + True == 2, (a > b) < 1, abs(False) == 0. A Bool
// operand of arithmetic or of an ordering comparison becomes `1 if b else 0`, marked implicit
// so that the printer writes the bare operand back (the same Python, the same value).
Expr bool_as_int(const Expr& e) {
  if (e->sort != Sort::Bool) return e;
  auto n = std::make_shared<Node>(*ir::ite(e, ir::int_lit(1), ir::int_lit(0)));
  n->implicit = true;
  return n;
}

Sort join_numeric(const std::vector<Expr>& args) {
  for (const auto& a : args)
    if (a->sort == Sort::Real) return Sort::Real;
  return Sort::Int;
}

// Arithmetic on Int/Real with promotion; `int_only` for C's truncating operators.
Expr arith(Op op, std::vector<Expr> args, bool int_only = false) {
  for (const auto& a : args) require_nonnull(a, op);
  for (auto& a : args) a = bool_as_int(a);
  Sort joined = join_numeric(args);
  if (op == Op::Div) joined = Sort::Real;
  if (auto p = poisoned(op, joined, args)) return *p;
  for (const auto& a : args) {
    if (a->sort == Sort::IntSeq) {
      // Valid Python (concatenation, repetition) that the IR does not model.
      auto raw = make(op, Sort::IntSeq, args);
      if (op == Op::Add || op == Op::Mul)
        return ir::unsupported(Sort::IntSeq, to_python(raw),
                               "list concatenation/repetition is not modelled");
    }
    if (!numeric(a->sort) || (int_only && a->sort != Sort::Int))
      sort_error(op, args, int_only ? "operands must be int" : "operands must be int or float");
  }
  for (auto& a : args) a = promote(a, joined);
  return make(op, joined, std::move(args));
}

Expr compare(Op op, Expr a, Expr b) {
  require_nonnull(a, op);
  require_nonnull(b, op);
  std::vector<Expr> args{a, b};
  if (auto p = poisoned(op, Sort::Bool, args)) return *p;
  const bool equality = op == Op::Eq || op == Op::Ne;
  // bool against a number (`(a > b) == 1`), or two bools ordered (`p < q`): compared as ints.
  const bool bool_vs_number =
      (a->sort == Sort::Bool && numeric(b->sort)) || (b->sort == Sort::Bool && numeric(a->sort));
  if (bool_vs_number || (!equality && a->sort == Sort::Bool && b->sort == Sort::Bool)) {
    a = bool_as_int(a);
    b = bool_as_int(b);
    args = {a, b};
  }
  if (numeric(a->sort) && numeric(b->sort)) {
    Sort j = join_numeric(args);
    return make(op, Sort::Bool, {promote(a, j), promote(b, j)});
  }
  if (equality && a->sort == b->sort) {
    if (a->sort == Sort::IntSeq && (a->op == Op::Range || b->op == Op::Range))
      return ir::unsupported(Sort::Bool, to_python(make(op, Sort::Bool, args)),
                             "comparing range() objects is not modelled");
    return make(op, Sort::Bool, std::move(args));
  }
  if (!equality && a->sort == Sort::IntSeq && b->sort == Sort::IntSeq)
    return ir::unsupported(Sort::Bool, to_python(make(op, Sort::Bool, args)),
                           "lexicographic list ordering is not modelled");
  sort_error(op, args,
             equality ? "both sides must have the same sort (int and float mix)"
                      : "operands must be int or float");
}

Expr seq_unary(Op op, Sort result, Expr s) {
  require_nonnull(s, op);
  if (auto p = poisoned(op, result, {s})) return *p;
  if (s->sort != Sort::IntSeq) sort_error(op, {s}, "the operand must be a list[int]");
  if (s->op == Op::Range && op != Op::Len)
    return ir::unsupported(result, to_python(make(op, result, {s})),
                           "range() is modelled only as a loop domain, in `in`, or in len()");
  return make(op, result, {s});
}

Expr bool_nary(Op op, std::vector<Expr> args) {
  for (const auto& a : args) require_nonnull(a, op);
  if (args.empty()) return ir::bool_lit(op == Op::And);
  if (auto p = poisoned(op, Sort::Bool, args)) return *p;
  for (const auto& a : args)
    if (a->sort != Sort::Bool)
      sort_error(op, args, "operands must be bool (use truthy() for Python truthiness)");
  if (args.size() == 1) return args[0];
  return make(op, Sort::Bool, std::move(args));
}

Expr quantifier(Op op, Expr bound, Expr domain, Expr body) {
  require_nonnull(bound, op);
  require_nonnull(domain, op);
  require_nonnull(body, op);
  if (bound->op != Op::Var || bound->sort != Sort::Int)
    throw SolverError("solvers: the bound variable of " + std::string(op_symbol(op)) +
                      " must be an int var(), got " + to_python(bound));
  const Sort result = op == Op::SumOf ? Sort::Int : Sort::Bool;
  if (auto p = poisoned(op, result, {domain, body})) return *p;
  if (domain->sort != Sort::IntSeq)
    sort_error(op, {domain}, "the domain must be a list[int] or range()");
  if (op == Op::SumOf) {
    body = bool_as_int(body);
    if (body->sort != Sort::Int) sort_error(op, {body}, "the body must be int or bool");
  } else if (body->sort != Sort::Bool) {
    sort_error(op, {body}, "the body must be bool");
  }
  return make(op, result, {std::move(bound), std::move(domain), std::move(body)});
}

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool is_python_float(std::string_view s) {
  size_t i = 0, digits = 0;
  if (!s.empty() && s[0] == '-') ++i;  // a folded unary minus
  auto run = [&] {
    size_t n = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '_')) {
      if (s[i] != '_') ++n;
      ++i;
    }
    return n;
  };
  digits += run();
  if (i < s.size() && s[i] == '.') {
    ++i;
    digits += run();
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (run() == 0) return false;
  }
  return i == s.size();
}

}  // namespace

namespace ir {

Expr bool_lit(bool v) {
  auto n = std::make_shared<Node>(Op::BoolLit, Sort::Bool);
  n->bool_value = v;
  return n;
}

Expr int_lit(int64_t v) {
  auto n = std::make_shared<Node>(Op::IntLit, Sort::Int);
  n->int_value = v;
  return n;
}

Expr real_lit(std::string_view python_text) {
  if (!is_python_float(python_text))
    throw SolverError("solvers: '" + std::string(python_text) +
                      "' is not a finite Python float literal (digits, '.', exponent)");
  auto n = std::make_shared<Node>(Op::RealLit, Sort::Real);
  n->text = std::string(python_text);
  return n;
}

Expr var(std::string_view name, Sort sort) {
  if (!is_identifier(name))
    throw SolverError("solvers: '" + std::string(name) + "' is not a valid variable name");
  if (sort == Sort::Opaque)
    throw SolverError("solvers: variable '" + std::string(name) +
                      "' cannot have an unsupported sort; use ir::unsupported() for it");
  auto n = std::make_shared<Node>(Op::Var, sort);
  n->text = std::string(name);
  return n;
}

Expr unsupported(Sort sort, std::string_view source, std::string_view why) {
  auto n = std::make_shared<Node>(Op::Unsupported, sort);
  n->text = std::string(source);
  n->detail = std::string(why);
  return n;
}

Expr list_lit(std::vector<Expr> elems) {
  for (const auto& e : elems) require_nonnull(e, Op::ListLit);
  if (auto p = poisoned(Op::ListLit, Sort::IntSeq, elems)) return *p;
  for (const auto& e : elems) {
    if (e->sort == Sort::Real)
      return unsupported(Sort::IntSeq, to_python(make(Op::ListLit, Sort::IntSeq, elems)),
                         "only lists of int are modelled");
    if (e->sort != Sort::Int) sort_error(Op::ListLit, elems, "elements must be int");
  }
  return make(Op::ListLit, Sort::IntSeq, std::move(elems));
}

Expr range(Expr lo, Expr hi) {
  require_nonnull(lo, Op::Range);
  require_nonnull(hi, Op::Range);
  std::vector<Expr> args{lo, hi};
  if (auto p = poisoned(Op::Range, Sort::IntSeq, args)) return *p;
  if (lo->sort != Sort::Int || hi->sort != Sort::Int)
    sort_error(Op::Range, args, "range() bounds must be int");
  return make(Op::Range, Sort::IntSeq, std::move(args));
}

Expr len(Expr seq) {
  return seq_unary(Op::Len, Sort::Int, std::move(seq));
}
Expr sum(Expr seq) {
  return seq_unary(Op::Sum, Sort::Int, std::move(seq));
}
Expr seq_min(Expr seq) {
  return seq_unary(Op::SeqMin, Sort::Int, std::move(seq));
}
Expr seq_max(Expr seq) {
  return seq_unary(Op::SeqMax, Sort::Int, std::move(seq));
}

Expr index(Expr seq, Expr i) {
  require_nonnull(seq, Op::Index);
  require_nonnull(i, Op::Index);
  std::vector<Expr> args{seq, i};
  if (auto p = poisoned(Op::Index, Sort::Int, args)) return *p;
  if (seq->sort != Sort::IntSeq || i->sort != Sort::Int)
    sort_error(Op::Index, args, "indexing needs a list[int] and an int index");
  if (seq->op == Op::Range)
    return unsupported(Sort::Int, to_python(make(Op::Index, Sort::Int, args)),
                       "indexing a range() is not modelled");
  return make(Op::Index, Sort::Int, std::move(args));
}

Expr in(Expr x, Expr seq) {
  require_nonnull(x, Op::In);
  require_nonnull(seq, Op::In);
  std::vector<Expr> args{x, seq};
  if (auto p = poisoned(Op::In, Sort::Bool, args)) return *p;
  if (seq->sort != Sort::IntSeq || !numeric(x->sort))
    sort_error(Op::In, args, "`x in s` needs an int x and a list[int] or range() s");
  if (x->sort == Sort::Real)
    return unsupported(Sort::Bool, to_python(make(Op::In, Sort::Bool, args)),
                       "float membership in an int sequence is not modelled");
  return make(Op::In, Sort::Bool, std::move(args));
}

Expr neg(Expr a) {
  return arith(Op::Neg, {std::move(a)});
}
Expr add(Expr a, Expr b) {
  return arith(Op::Add, {std::move(a), std::move(b)});
}
Expr sub(Expr a, Expr b) {
  return arith(Op::Sub, {std::move(a), std::move(b)});
}
Expr mul(Expr a, Expr b) {
  return arith(Op::Mul, {std::move(a), std::move(b)});
}
Expr div(Expr a, Expr b) {
  return arith(Op::Div, {std::move(a), std::move(b)});
}
Expr floor_div(Expr a, Expr b) {
  return arith(Op::FloorDiv, {std::move(a), std::move(b)});
}
Expr mod(Expr a, Expr b) {
  return arith(Op::Mod, {std::move(a), std::move(b)});
}
Expr trunc_div(Expr a, Expr b) {
  return arith(Op::TruncDiv, {std::move(a), std::move(b)}, true);
}
Expr trunc_mod(Expr a, Expr b) {
  return arith(Op::TruncMod, {std::move(a), std::move(b)}, true);
}
Expr abs(Expr a) {
  return arith(Op::Abs, {std::move(a)});
}

Expr min(std::vector<Expr> args) {
  if (args.size() < 2) throw SolverError("solvers: min() of scalars needs two or more arguments");
  return arith(Op::Min, std::move(args));
}

Expr max(std::vector<Expr> args) {
  if (args.size() < 2) throw SolverError("solvers: max() of scalars needs two or more arguments");
  return arith(Op::Max, std::move(args));
}

Expr to_real(Expr a) {
  require_nonnull(a, Op::ToReal);
  a = bool_as_int(a);
  if (auto p = poisoned(Op::ToReal, Sort::Real, {a})) return *p;
  if (a->sort == Sort::Real) return a;
  if (a->sort != Sort::Int) sort_error(Op::ToReal, {a}, "the operand must be int or float");
  return make(Op::ToReal, Sort::Real, {std::move(a)});
}

Expr to_int(Expr a) {
  require_nonnull(a, Op::ToInt);
  a = bool_as_int(a);
  if (auto p = poisoned(Op::ToInt, Sort::Int, {a})) return *p;
  if (a->sort == Sort::Int) return a;
  if (a->sort != Sort::Real) sort_error(Op::ToInt, {a}, "the operand must be int or float");
  return make(Op::ToInt, Sort::Int, {std::move(a)});
}

Expr pow(Expr a, Expr n) {
  require_nonnull(a, Op::Mul);
  require_nonnull(n, Op::Mul);
  a = bool_as_int(a);
  n = bool_as_int(n);
  if (a->sort == Sort::Opaque || n->sort == Sort::Opaque || !numeric(a->sort) ||
      !numeric(n->sort)) {
    if (a->sort == Sort::Bool || n->sort == Sort::Bool || a->sort == Sort::IntSeq ||
        n->sort == Sort::IntSeq)
      sort_error(Op::Mul, {a, n}, "'**' needs int or float operands");
    return unsupported(a->sort == Sort::Opaque ? Sort::Opaque : a->sort,
                       to_python(a) + " ** " + to_python(n), "an operand has an unsupported type");
  }
  if (n->op != Op::IntLit || n->int_value < 0 || n->int_value > 64)
    return unsupported(a->sort == Sort::Real || n->sort == Sort::Real ? Sort::Real : Sort::Int,
                       to_python(a) + " ** " + to_python(n),
                       "only '**' with a literal exponent 0..64 is modelled");
  if (n->int_value == 0) return a->sort == Sort::Real ? real_lit("1.0") : int_lit(1);
  Expr r = a;
  for (int64_t k = 1; k < n->int_value; ++k) r = mul(r, a);
  return r;
}

Expr eq(Expr a, Expr b) {
  return compare(Op::Eq, std::move(a), std::move(b));
}
Expr ne(Expr a, Expr b) {
  return compare(Op::Ne, std::move(a), std::move(b));
}
Expr lt(Expr a, Expr b) {
  return compare(Op::Lt, std::move(a), std::move(b));
}
Expr le(Expr a, Expr b) {
  return compare(Op::Le, std::move(a), std::move(b));
}
Expr gt(Expr a, Expr b) {
  return compare(Op::Gt, std::move(a), std::move(b));
}
Expr ge(Expr a, Expr b) {
  return compare(Op::Ge, std::move(a), std::move(b));
}

Expr compare_chain(std::vector<Expr> operands, const std::vector<Op>& ops) {
  if (operands.size() < 2 || ops.size() + 1 != operands.size())
    throw SolverError("solvers: a comparison chain needs n operands and n-1 operators");
  std::vector<Expr> parts;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Expr& a = operands[i];
    const Expr& b = operands[i + 1];
    switch (ops[i]) {
      case Op::Eq:
      case Op::Ne:
      case Op::Lt:
      case Op::Le:
      case Op::Gt:
      case Op::Ge:
        parts.push_back(compare(ops[i], a, b));
        break;
      case Op::In:
        parts.push_back(in(a, b));
        break;
      default:
        throw SolverError("solvers: '" + std::string(op_symbol(ops[i])) +
                          "' is not a comparison operator (valid: == != < <= > >= in)");
    }
  }
  return chain(std::move(parts));
}

Expr chain(std::vector<Expr> links) {
  if (links.size() == 1) return links[0];
  Expr r = and_(std::move(links));
  if (r->op == Op::And) {
    auto n = std::make_shared<Node>(*r);
    n->chain = true;
    return n;
  }
  return r;
}

Expr not_(Expr a) {
  require_nonnull(a, Op::Not);
  if (auto p = poisoned(Op::Not, Sort::Bool, {a})) return *p;
  if (a->sort != Sort::Bool) sort_error(Op::Not, {a}, "the operand must be bool");
  return make(Op::Not, Sort::Bool, {std::move(a)});
}

Expr and_(std::vector<Expr> args) {
  return bool_nary(Op::And, std::move(args));
}
Expr or_(std::vector<Expr> args) {
  return bool_nary(Op::Or, std::move(args));
}

Expr implies(Expr a, Expr b) {
  require_nonnull(a, Op::Implies);
  require_nonnull(b, Op::Implies);
  std::vector<Expr> args{a, b};
  if (auto p = poisoned(Op::Implies, Sort::Bool, args)) return *p;
  if (a->sort != Sort::Bool || b->sort != Sort::Bool)
    sort_error(Op::Implies, args, "operands must be bool");
  return make(Op::Implies, Sort::Bool, std::move(args));
}

Expr ite(Expr cond, Expr then_e, Expr else_e) {
  require_nonnull(cond, Op::Ite);
  require_nonnull(then_e, Op::Ite);
  require_nonnull(else_e, Op::Ite);
  Sort result = then_e->sort;
  if (numeric(then_e->sort) && numeric(else_e->sort)) result = join_numeric({then_e, else_e});
  if (then_e->sort == Sort::Opaque) result = else_e->sort;
  if (auto p = poisoned(Op::Ite, result, {cond, then_e, else_e})) return *p;
  if (cond->sort != Sort::Bool) sort_error(Op::Ite, {cond}, "the condition must be bool");
  if (then_e->sort != else_e->sort && !(numeric(then_e->sort) && numeric(else_e->sort)))
    sort_error(Op::Ite, {then_e, else_e}, "both branches must have the same sort");
  return make(Op::Ite, result, {std::move(cond), promote(then_e, result), promote(else_e, result)});
}

Expr truthy(Expr a) {
  require_nonnull(a, Op::Not);
  switch (a->sort) {
    case Sort::Bool:
      return a;
    case Sort::Int:
      return ne(a, int_lit(0));
    case Sort::Real:
      return ne(a, real_lit("0.0"));
    case Sort::IntSeq:
      return gt(len(a), int_lit(0));
    case Sort::Opaque:
      return unsupported(Sort::Bool, a->text, a->detail);
  }
  return a;
}

Expr py_and(Expr a, Expr b) {
  require_nonnull(a, Op::And);
  require_nonnull(b, Op::And);
  if (a->sort == b->sort && a->sort != Sort::Bool && a->sort != Sort::Opaque &&
      a->sort != Sort::IntSeq)
    return ite(truthy(a), b, a);
  return and_({truthy(a), truthy(b)});
}

Expr py_or(Expr a, Expr b) {
  require_nonnull(a, Op::Or);
  require_nonnull(b, Op::Or);
  if (a->sort == b->sort && a->sort != Sort::Bool && a->sort != Sort::Opaque &&
      a->sort != Sort::IntSeq)
    return ite(truthy(a), a, b);
  return or_({truthy(a), truthy(b)});
}

Expr all(Expr bound, Expr domain, Expr body) {
  return quantifier(Op::All, std::move(bound), std::move(domain), std::move(body));
}

Expr any(Expr bound, Expr domain, Expr body) {
  return quantifier(Op::Any, std::move(bound), std::move(domain), std::move(body));
}
Expr sum_of(Expr bound, Expr domain, Expr body) {
  return quantifier(Op::SumOf, std::move(bound), std::move(domain), std::move(body));
}

}  // namespace ir

std::vector<Expr> conjuncts(const Expr& e) {
  std::vector<Expr> out;
  std::function<void(const Expr&)> walk = [&](const Expr& x) {
    if (x->op == Op::And) {
      for (const auto& a : x->args) walk(a);
    } else if (!(x->op == Op::BoolLit && x->bool_value)) {
      out.push_back(x);
    }
  };
  walk(e);
  return out;
}

std::vector<std::pair<std::string, Sort>> free_vars(const Expr& e) {
  std::vector<std::pair<std::string, Sort>> out;
  std::set<std::string> seen;
  std::vector<std::string> bound;
  std::function<void(const Expr&)> walk = [&](const Expr& x) {
    if (x->op == Op::Var) {
      if (std::find(bound.begin(), bound.end(), x->text) == bound.end() &&
          seen.insert(x->text).second)
        out.emplace_back(x->text, x->sort);
      return;
    }
    if (x->op == Op::All || x->op == Op::Any || x->op == Op::SumOf) {
      walk(x->args[1]);  // the domain is evaluated outside the binding
      bound.push_back(x->args[0]->text);
      walk(x->args[2]);
      bound.pop_back();
      return;
    }
    for (const auto& a : x->args) walk(a);
  };
  walk(e);
  return out;
}

std::optional<std::string> find_unsupported(const Expr& e) {
  if (e->op == Op::Unsupported) return e->detail.empty() ? e->text : e->detail;
  for (const auto& a : e->args)
    if (auto r = find_unsupported(a)) return r;
  return std::nullopt;
}

namespace {

using Side = std::optional<int64_t>;

Side add_sides(Side a, Side b, bool subtract) {
  int64_t r = 0;
  if (!a || !b) return std::nullopt;
  const bool ovf =
      subtract ? __builtin_sub_overflow(*a, *b, &r) : __builtin_add_overflow(*a, *b, &r);
  return ovf ? Side{} : Side{r};
}

Side negate(Side a) {
  return a && *a != INT64_MIN ? Side{-*a} : Side{};
}

// min() / max() of intervals: the side the operation keeps (min's hi, max's lo) is known when
// any argument's is; the other side needs every argument's.
IntInterval min_max(const std::vector<IntInterval>& xs, bool is_min) {
  IntInterval r;
  bool all_lo = true, all_hi = true;
  Side any_lo, any_hi;
  for (const auto& x : xs) {
    auto pick = [&](Side acc, Side v) -> Side {
      if (!v) return acc;
      if (!acc) return v;
      return is_min ? std::min(*acc, *v) : std::max(*acc, *v);
    };
    all_lo = all_lo && x.lo.has_value();
    all_hi = all_hi && x.hi.has_value();
    any_lo = pick(any_lo, x.lo);
    any_hi = pick(any_hi, x.hi);
  }
  if (is_min) {
    r.hi = any_hi;
    if (all_lo) r.lo = any_lo;
  } else {
    r.lo = any_lo;
    if (all_hi) r.hi = any_hi;
  }
  return r;
}

}  // namespace

IntInterval int_interval(const Expr& e, const SeqMaxLen& max_seq_len) {
  auto of = [&](const Expr& x) { return int_interval(x, max_seq_len); };
  switch (e->op) {
    case Op::IntLit:
      return {e->int_value, e->int_value};
    case Op::Len: {
      const Expr& s = e->args[0];
      if (s->op == Op::ListLit) {
        const auto n = static_cast<int64_t>(s->args.size());
        return {n, n};
      }
      if (s->op == Op::Range) {
        const Side span = add_sides(of(s->args[1]).hi, of(s->args[0]).lo, true);
        return {0, span ? Side{std::max<int64_t>(0, *span)} : Side{}};
      }
      if (auto n = max_seq_len ? max_seq_len(s) : std::nullopt) return {0, *n};
      return {0, std::nullopt};
    }
    case Op::Add:
    case Op::Sub: {
      const IntInterval a = of(e->args[0]), b = of(e->args[1]);
      if (e->op == Op::Add) return {add_sides(a.lo, b.lo, false), add_sides(a.hi, b.hi, false)};
      return {add_sides(a.lo, b.hi, true), add_sides(a.hi, b.lo, true)};
    }
    case Op::Neg: {
      const IntInterval a = of(e->args[0]);
      return {negate(a.hi), negate(a.lo)};
    }
    case Op::Abs: {
      const IntInterval a = of(e->args[0]);
      IntInterval r{0, std::nullopt};
      if (a.lo && *a.lo >= 0) r.lo = a.lo;
      if (a.hi && *a.hi <= 0) r.lo = negate(a.hi);
      if (a.lo && a.hi) {
        const Side n = negate(a.lo);
        if (n) r.hi = std::max(*n, *a.hi);
      }
      return r;
    }
    case Op::Min:
    case Op::Max: {
      std::vector<IntInterval> xs;
      for (const auto& x : e->args) xs.push_back(of(x));
      return min_max(xs, e->op == Op::Min);
    }
    case Op::Ite: {  // either branch: the lower of the lows, the higher of the highs
      const std::vector<IntInterval> xs = {of(e->args[1]), of(e->args[2])};
      return {min_max(xs, true).lo, min_max(xs, false).hi};
    }
    default:
      return {};
  }
}

std::optional<std::pair<int64_t, int64_t>> int_bounds(const Expr& e, const SeqMaxLen& max_seq_len) {
  const IntInterval r = int_interval(e, max_seq_len);
  if (!r.lo || !r.hi) return std::nullopt;
  return std::pair{*r.lo, *r.hi};
}

}  // namespace vsynth::solvers
