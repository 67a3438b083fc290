#include "solvers/evaluate.h"

#include <algorithm>

namespace vsynth::solvers {

namespace {

// A Python exception raised by the expression.
struct Raised {
  std::string error;
};
// Something this evaluator does not compute (floats, unsupported constructs, huge ints).
struct NotEvaluable {
  std::string why;
};

// range() objects materialised as lists beyond this length are not evaluated (a spec's
// all(... for i in range(n)) over a generated n stays far below it).
constexpr Int128 kMaxRangeLen = 1 << 20;

Int128 checked(bool overflow, Int128 v) {
  if (overflow) throw NotEvaluable{"an int beyond 128 bits"};
  return v;
}

Int128 add(Int128 a, Int128 b) {
  Int128 r = 0;
  const bool overflow = __builtin_add_overflow(a, b, &r);  // before r is read
  return checked(overflow, r);
}
Int128 sub(Int128 a, Int128 b) {
  Int128 r = 0;
  const bool overflow = __builtin_sub_overflow(a, b, &r);  // before r is read
  return checked(overflow, r);
}
Int128 mul(Int128 a, Int128 b) {
  Int128 r = 0;
  const bool overflow = __builtin_mul_overflow(a, b, &r);  // before r is read
  return checked(overflow, r);
}
Int128 neg(Int128 a) {
  return sub(0, a);
}

// Python's // and %: the quotient rounds toward -inf, the remainder has the divisor's sign.
std::pair<Int128, Int128> floor_divmod(Int128 a, Int128 b) {
  if (b == 0) throw Raised{"ZeroDivisionError: integer division or modulo by zero"};
  if (b == -1) return {neg(a), 0};  // a / -1 overflows for the most negative a
  Int128 q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) {
    q -= 1;
    r += b;
  }
  return {q, r};
}

class Evaluator {
 public:
  explicit Evaluator(const Env& env) : env_(env) {}

  Concrete eval(const Expr& e) {
    switch (e->op) {
      case Op::BoolLit:
        return Concrete::of_bool(e->bool_value);
      case Op::IntLit:
        return Concrete::of_int(e->int_value);
      case Op::Var:
        return lookup(e->text);
      case Op::RealLit:
      case Op::Div:
      case Op::ToReal:
        throw NotEvaluable{"float arithmetic is not evaluated (" + to_python(e) + ")"};
      case Op::Unsupported:
        throw NotEvaluable{e->detail.empty() ? e->text : e->detail};
      case Op::ToInt:
        return eval(e->args[0]);  // only ever applied to a Real (ir::to_int)
      default:
        break;
    }
    if (e->sort == Sort::Real) throw NotEvaluable{"float values are not evaluated"};
    switch (e->op) {
      case Op::ListLit: {
        std::vector<Int128> xs;
        for (const auto& a : e->args) xs.push_back(int_of(a));
        return Concrete::of_list(std::move(xs));
      }
      case Op::Range:
        return range(int_of(e->args[0]), int_of(e->args[1]));
      case Op::Len:
        return Concrete::of_int(static_cast<Int128>(list_of(e->args[0]).size()));
      case Op::Index:
        return index(list_of(e->args[0]), int_of(e->args[1]));
      case Op::Sum: {
        Int128 s = 0;
        for (Int128 x : list_of(e->args[0])) s = add(s, x);
        return Concrete::of_int(s);
      }
      case Op::SeqMin:
      case Op::SeqMax: {
        const std::vector<Int128> xs = list_of(e->args[0]);
        if (xs.empty())
          throw Raised{std::string("ValueError: ") + (e->op == Op::SeqMin ? "min" : "max") +
                       "() arg is an empty sequence"};
        return Concrete::of_int(e->op == Op::SeqMin ? *std::min_element(xs.begin(), xs.end())
                                                    : *std::max_element(xs.begin(), xs.end()));
      }
      case Op::In: {
        const Int128 x = int_of(e->args[0]);
        const std::vector<Int128> xs = list_of(e->args[1]);
        return Concrete::of_bool(std::find(xs.begin(), xs.end(), x) != xs.end());
      }
      default:
        return arithmetic_or_logic(e);
    }
  }

 private:
  Concrete arithmetic_or_logic(const Expr& e) {
    switch (e->op) {
      case Op::Neg:
        return Concrete::of_int(neg(int_of(e->args[0])));
      case Op::Add:
        return Concrete::of_int(add(int_of(e->args[0]), int_of(e->args[1])));
      case Op::Sub:
        return Concrete::of_int(sub(int_of(e->args[0]), int_of(e->args[1])));
      case Op::Mul:
        return Concrete::of_int(mul(int_of(e->args[0]), int_of(e->args[1])));
      case Op::FloorDiv:
      case Op::Mod: {
        auto [q, r] = floor_divmod(int_of(e->args[0]), int_of(e->args[1]));
        return Concrete::of_int(e->op == Op::FloorDiv ? q : r);
      }
      case Op::TruncDiv:
      case Op::TruncMod: {
        const Int128 a = int_of(e->args[0]), b = int_of(e->args[1]);
        if (b == 0) throw Raised{"ZeroDivisionError: division by zero"};
        if (b == -1) return Concrete::of_int(e->op == Op::TruncDiv ? neg(a) : 0);
        return Concrete::of_int(e->op == Op::TruncDiv ? a / b : a % b);
      }
      case Op::Abs: {
        const Int128 a = int_of(e->args[0]);
        return Concrete::of_int(a < 0 ? neg(a) : a);
      }
      case Op::Min:
      case Op::Max: {
        Int128 acc = int_of(e->args[0]);
        for (size_t i = 1; i < e->args.size(); ++i) {
          const Int128 x = int_of(e->args[i]);
          acc = e->op == Op::Min ? std::min(acc, x) : std::max(acc, x);
        }
        return Concrete::of_int(acc);
      }
      default:
        return comparison_or_logic(e);
    }
  }

  Concrete comparison_or_logic(const Expr& e) {
    switch (e->op) {
      case Op::Eq:
      case Op::Ne: {
        const bool same = eval(e->args[0]) == eval(e->args[1]);
        return Concrete::of_bool(e->op == Op::Eq ? same : !same);
      }
      case Op::Lt:
      case Op::Le:
      case Op::Gt:
      case Op::Ge: {
        const Int128 a = int_of(e->args[0]), b = int_of(e->args[1]);
        const bool r = e->op == Op::Lt   ? a < b
                       : e->op == Op::Le ? a <= b
                       : e->op == Op::Gt ? a > b
                                         : a >= b;
        return Concrete::of_bool(r);
      }
      case Op::Not:
        return Concrete::of_bool(!bool_of(e->args[0]));
      case Op::And:
        for (const auto& a : e->args)
          if (!bool_of(a)) return Concrete::of_bool(false);
        return Concrete::of_bool(true);
      case Op::Or:
        for (const auto& a : e->args)
          if (bool_of(a)) return Concrete::of_bool(true);
        return Concrete::of_bool(false);
      case Op::Implies:
        return Concrete::of_bool(!bool_of(e->args[0]) || bool_of(e->args[1]));
      case Op::Ite:
        return bool_of(e->args[0]) ? eval(e->args[1]) : eval(e->args[2]);
      case Op::All:
      case Op::Any:
        return quantifier(e);
      case Op::SumOf: {
        Int128 total = 0;
        const std::string& name = e->args[0]->text;
        for (Int128 x : list_of(e->args[1])) {
          bound_.emplace_back(name, Concrete::of_int(x));
          const Int128 v = int_of(e->args[2]);
          bound_.pop_back();
          total = add(total, v);
        }
        return Concrete::of_int(total);
      }
      default:
        throw NotEvaluable{"`" + to_python(e) + "` is not evaluated"};
    }
  }

  Concrete quantifier(const Expr& e) {
    const bool want_all = e->op == Op::All;
    const std::vector<Int128> domain = list_of(e->args[1]);
    const std::string& name = e->args[0]->text;
    for (Int128 x : domain) {
      bound_.emplace_back(name, Concrete::of_int(x));
      const bool holds = bool_of(e->args[2]);
      bound_.pop_back();
      if (holds != want_all) return Concrete::of_bool(!want_all);
    }
    return Concrete::of_bool(want_all);
  }

  Concrete lookup(const std::string& name) const {
    for (auto it = bound_.rbegin(); it != bound_.rend(); ++it)
      if (it->first == name) return it->second;
    for (const auto& [n, v] : env_)
      if (n == name) return v;
    throw NotEvaluable{"no value for `" + name + "`"};
  }

  static Concrete range(Int128 lo, Int128 hi) {
    if (sub(hi, lo) > kMaxRangeLen) throw NotEvaluable{"a range() longer than 2^20"};
    std::vector<Int128> xs;
    for (Int128 x = lo; x < hi; ++x) xs.push_back(x);
    return Concrete::of_list(std::move(xs));
  }

  static Concrete index(const std::vector<Int128>& xs, Int128 i) {
    const auto n = static_cast<Int128>(xs.size());
    if (i < -n || i >= n) throw Raised{"IndexError: list index out of range"};
    return Concrete::of_int(xs[static_cast<size_t>(i < 0 ? i + n : i)]);
  }

  Int128 int_of(const Expr& e) {
    const Concrete c = eval(e);
    if (c.sort == Sort::Bool) return c.boolean ? 1 : 0;
    if (c.sort != Sort::Int) throw NotEvaluable{"`" + to_python(e) + "` is not an int"};
    return c.integer;
  }
  bool bool_of(const Expr& e) {
    const Concrete c = eval(e);
    if (c.sort != Sort::Bool) throw NotEvaluable{"`" + to_python(e) + "` is not a bool"};
    return c.boolean;
  }
  std::vector<Int128> list_of(const Expr& e) {
    Concrete c = eval(e);
    if (c.sort != Sort::IntSeq) throw NotEvaluable{"`" + to_python(e) + "` is not a list"};
    return std::move(c.elements);
  }

  const Env& env_;
  std::vector<std::pair<std::string, Concrete>> bound_;  // quantifier variables, innermost last
};

}  // namespace

Concrete Concrete::of_bool(bool b) {
  Concrete c;
  c.sort = Sort::Bool;
  c.boolean = b;
  return c;
}
Concrete Concrete::of_int(Int128 v) {
  Concrete c;
  c.sort = Sort::Int;
  c.integer = v;
  return c;
}
Concrete Concrete::of_list(std::vector<Int128> xs) {
  Concrete c;
  c.sort = Sort::IntSeq;
  c.elements = std::move(xs);
  return c;
}

bool Concrete::operator==(const Concrete& o) const {
  // Python: True == 1; a list never equals a number.
  auto as_int = [](const Concrete& c) {
    return c.sort == Sort::Bool ? Int128(c.boolean) : c.integer;
  };
  if (sort == Sort::IntSeq || o.sort == Sort::IntSeq)
    return sort == o.sort && elements == o.elements;
  return as_int(*this) == as_int(o);
}

std::string Concrete::python() const {
  switch (sort) {
    case Sort::Bool:
      return boolean ? "True" : "False";
    case Sort::IntSeq: {
      std::string s = "[";
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i) s += ", ";
        s += int128_to_string(elements[i]);
      }
      return s + "]";
    }
    default:
      return int128_to_string(integer);
  }
}

std::string int128_to_string(Int128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  std::string s;
  while (v != 0) {
    const int digit = static_cast<int>(v % 10);
    s += static_cast<char>('0' + (digit < 0 ? -digit : digit));
    v /= 10;
  }
  if (negative) s += '-';
  std::reverse(s.begin(), s.end());
  return s;
}

std::optional<Int128> parse_int128(std::string_view text) {
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) i = 1;
  if (i == text.size()) return std::nullopt;
  Int128 v = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    const int d = text[i] - '0';
    if (__builtin_mul_overflow(v, 10, &v) ||
        (negative ? __builtin_sub_overflow(v, d, &v) : __builtin_add_overflow(v, d, &v)))
      return std::nullopt;
  }
  return v;
}

Evaluated evaluate(const Expr& e, const Env& env) {
  Evaluated r;
  try {
    r.value = Evaluator(env).eval(e);
    r.kind = Evaluated::Kind::Value;
  } catch (const Raised& x) {
    r.kind = Evaluated::Kind::Raised;
    r.error = x.error;
  } catch (const NotEvaluable& x) {
    r.kind = Evaluated::Kind::NotEvaluable;
    r.error = x.why;
  }
  return r;
}

}  // namespace vsynth::solvers
