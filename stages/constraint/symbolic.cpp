#include "stages/constraint/symbolic.h"

#include <set>

namespace vsynth::stages::constraint {

namespace ir = solvers::ir;
using solvers::Expr;
using solvers::Op;
using solvers::Sort;

Expr conj(const Expr& a, const Expr& b) {
  if (!a) return b;
  if (!b) return a;
  return ir::and_({a, b});
}

State branch(const State& s, const Expr& cond) {
  State t = s;
  t.alive = conj(s.alive, cond);
  return t;
}

namespace {

// Sorts an if-then-else can join: equal ones, or Int with Real (promoted).
bool joinable(Sort a, Sort b) {
  if (a == b) return a != Sort::Opaque;
  return (a == Sort::Int && b == Sort::Real) || (a == Sort::Real && b == Sort::Int);
}

}  // namespace

State merge(std::vector<State> states, std::string_view where) {
  std::vector<State> live;
  for (State& s : states) {
    if (!s.dead) live.push_back(std::move(s));
  }
  if (live.empty()) {
    State d;
    d.dead = true;
    d.alive = ir::bool_lit(false);
    return d;
  }
  if (live.size() == 1) return std::move(live.front());

  State out;
  std::vector<Expr> alives;
  bool always = false;
  for (const State& s : live) {
    if (!s.alive) always = true;  // cannot happen with disjoint states, but stay sound
    alives.push_back(s.alive);
  }
  out.alive = always ? nullptr : ir::or_(alives);

  std::set<std::string, std::less<>> names;
  for (const State& s : live) {
    for (const auto& [name, v] : s.env) names.insert(name);
  }
  for (const std::string& name : names) {
    std::vector<Expr> values;
    bool all_bound = true, same = true, sorts_ok = true;
    for (const State& s : live) {
      auto it = s.env.find(name);
      if (it == s.env.end()) {
        all_bound = false;
        break;
      }
      if (!values.empty()) {
        same = same && it->second == values.front();
        sorts_ok = sorts_ok && joinable(values.front()->sort, it->second->sort);
      }
      values.push_back(it->second);
    }
    if (!all_bound) {
      out.env[name] = ir::unsupported(Sort::Opaque, name,
                                      "`" + name + "` may be unbound " + std::string(where));
      continue;
    }
    if (same) {
      out.env[name] = values.front();
      continue;
    }
    if (!sorts_ok) {
      out.env[name] =
          ir::unsupported(Sort::Opaque, name,
                          "`" + name + "` holds values of different types " + std::string(where));
      continue;
    }
    // The last live state is the default: ite(alive_0, v_0, ite(alive_1, v_1, ... v_n)).
    Expr v = values.back();
    for (std::size_t i = values.size() - 1; i-- > 0;) {
      v = live[i].alive ? ir::ite(live[i].alive, values[i], v) : values[i];
    }
    out.env[name] = v;
  }
  return out;
}

std::optional<bool> const_bool(const Expr& e) {
  if (!e) return true;
  switch (e->op) {
    case Op::BoolLit:
      return e->bool_value;
    case Op::Not: {
      const auto a = const_bool(e->args[0]);
      return a ? std::optional<bool>(!*a) : std::nullopt;
    }
    case Op::And:
    case Op::Or: {
      const bool is_and = e->op == Op::And;
      bool all_known = true;
      for (const Expr& a : e->args) {
        const auto v = const_bool(a);
        if (v && *v != is_and) return !is_and;  // a false conjunct / a true disjunct decides
        if (!v) all_known = false;
      }
      return all_known ? std::optional<bool>(is_and) : std::nullopt;
    }
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge: {
      const Expr& a = e->args[0];
      const Expr& b = e->args[1];
      if (a->op != Op::IntLit || b->op != Op::IntLit) return std::nullopt;
      const int64_t x = a->int_value, y = b->int_value;
      switch (e->op) {
        case Op::Eq:
          return x == y;
        case Op::Ne:
          return x != y;
        case Op::Lt:
          return x < y;
        case Op::Le:
          return x <= y;
        case Op::Gt:
          return x > y;
        default:
          return x >= y;
      }
    }
    default:
      return std::nullopt;
  }
}

bool can_raise(const Expr& e) {
  if (!e) return false;
  switch (e->op) {
    case Op::Div:
    case Op::FloorDiv:
    case Op::Mod:
    case Op::TruncDiv:
    case Op::TruncMod:
    case Op::Index:
    case Op::SeqMin:
    case Op::SeqMax:
      return true;
    default:
      break;
  }
  for (const Expr& a : e->args) {
    if (can_raise(a)) return true;
  }
  return false;
}

Expr defined(const Expr& e) {
  // e == e is True exactly when e evaluates (the backend's equality raises when an operand does).
  return ir::eq(e, e);
}

}  // namespace vsynth::stages::constraint
