// to_python(): IR back to Python source, parenthesised by Python's precedence table.
#include <string>

#include "solvers/ir.h"

namespace vsynth::solvers {

namespace {

// Python precedence levels (higher binds tighter).
enum Prec : int {
  kLowest = 0,
  kTernary = 1,
  kOr = 2,
  kAnd = 3,
  kNot = 4,
  kCompare = 5,
  kAdd = 10,
  kMul = 11,
  kUnary = 12,
  kAtom = 14,
};

std::string cmp_symbol(Op op) {
  switch (op) {
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
    case Op::In:
      return "in";
    default:
      return "?";
  }
}

bool is_comparison(const Expr& e) {
  switch (e->op) {
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::In:
      return true;
    default:
      return false;
  }
}

const Node* strip_implicit(const Expr& e) {
  return (e->op == Op::ToReal && e->implicit) ? e->args[0].get() : e.get();
}

class Printer {
 public:
  std::string print(const Expr& e, int min_prec) {
    int prec = kAtom;
    std::string s = body(e, prec);
    if (prec < min_prec) return "(" + s + ")";
    return s;
  }

 private:
  std::string call(std::string_view fn, const std::vector<Expr>& args) {
    std::string s(fn);
    s += '(';
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) s += ", ";
      s += print(args[i], kTernary);
    }
    return s + ')';
  }

  std::string binary(const Expr& e, std::string_view sym, int prec, int& out_prec) {
    out_prec = prec;
    return print(e->args[0], prec) + " " + std::string(sym) + " " + print(e->args[1], prec + 1);
  }

  // An And built from `a < b <= c`, printed back as the chain when its links still share their
  // middle operands (modulo an implicit int->float promotion).
  bool chain(const Expr& e, std::string& out) {
    if (!e->chain) return false;
    for (const auto& c : e->args)
      if (!is_comparison(c)) return false;
    for (size_t i = 0; i + 1 < e->args.size(); ++i)
      if (strip_implicit(e->args[i]->args[1]) != strip_implicit(e->args[i + 1]->args[0]))
        return false;
    out = print(e->args[0]->args[0], kCompare + 1);
    for (const auto& c : e->args)
      out += " " + cmp_symbol(c->op) + " " + print(c->args[1], kCompare + 1);
    return true;
  }

  std::string body(const Expr& e, int& prec) {
    prec = kAtom;
    switch (e->op) {
      case Op::BoolLit:
        return e->bool_value ? "True" : "False";
      case Op::IntLit:
        if (e->int_value < 0) prec = kUnary;
        return std::to_string(e->int_value);
      case Op::RealLit:
        if (!e->text.empty() && e->text[0] == '-') prec = kUnary;
        return e->text;
      case Op::Var:
        return e->text;
      case Op::Unsupported:
        if (e->text.find(' ') != std::string::npos) prec = kLowest;
        return e->text;
      case Op::ListLit: {
        std::string s = "[";
        for (size_t i = 0; i < e->args.size(); ++i) {
          if (i) s += ", ";
          s += print(e->args[i], kTernary);
        }
        return s + "]";
      }
      case Op::Range:
        return call("range", e->args);
      case Op::Len:
        return call("len", e->args);
      case Op::Sum:
        return call("sum", e->args);
      case Op::SeqMin:
      case Op::Min:
        return call("min", e->args);
      case Op::SeqMax:
      case Op::Max:
        return call("max", e->args);
      case Op::Abs:
        return call("abs", e->args);
      case Op::TruncDiv:
        return call("cdiv", e->args);
      case Op::TruncMod:
        return call("cmod", e->args);
      case Op::ToInt:
        return call("int", e->args);
      case Op::ToReal:
        if (e->implicit) return body(e->args[0], prec);
        return call("float", e->args);
      case Op::Index:
        return print(e->args[0], kAtom) + "[" + print(e->args[1], kLowest) + "]";
      case Op::In:
        return binary(e, "in", kCompare, prec);
      case Op::Neg:
        prec = kUnary;
        return "-" + print(e->args[0], kUnary);
      case Op::Add:
        return binary(e, "+", kAdd, prec);
      case Op::Sub:
        return binary(e, "-", kAdd, prec);
      case Op::Mul:
        return binary(e, "*", kMul, prec);
      case Op::Div:
        return binary(e, "/", kMul, prec);
      case Op::FloorDiv:
        return binary(e, "//", kMul, prec);
      case Op::Mod:
        return binary(e, "%", kMul, prec);
      case Op::Eq:
      case Op::Ne:
      case Op::Lt:
      case Op::Le:
      case Op::Gt:
      case Op::Ge:
        prec = kCompare;
        return print(e->args[0], kCompare + 1) + " " + cmp_symbol(e->op) + " " +
               print(e->args[1], kCompare + 1);
      case Op::Not:
        if (e->args[0]->op == Op::In) {
          prec = kCompare;
          const auto& in = e->args[0];
          return print(in->args[0], kCompare + 1) + " not in " + print(in->args[1], kCompare + 1);
        }
        prec = kNot;
        return "not " + print(e->args[0], kNot);
      case Op::And: {
        std::string s;
        if (chain(e, s)) {
          prec = kCompare;
          return s;
        }
        prec = kAnd;
        for (size_t i = 0; i < e->args.size(); ++i) {
          if (i) s += " and ";
          s += print(e->args[i], kNot);
        }
        return s;
      }
      case Op::Or: {
        prec = kOr;
        std::string s;
        for (size_t i = 0; i < e->args.size(); ++i) {
          if (i) s += " or ";
          s += print(e->args[i], kAnd);
        }
        return s;
      }
      case Op::Implies:
        prec = kOr;
        return "not " + print(e->args[0], kNot) + " or " + print(e->args[1], kAnd);
      case Op::Ite:
        if (e->implicit) return body(e->args[0], prec);  // a bool used as an int
        prec = kTernary;
        return print(e->args[1], kOr) + " if " + print(e->args[0], kOr) + " else " +
               print(e->args[2], kTernary);
      case Op::All:
      case Op::Any:
      case Op::SumOf:
        return std::string(e->op == Op::All   ? "all("
                           : e->op == Op::Any ? "any("
                                              : "sum(") +
               print(e->args[2], kTernary) + " for " + e->args[0]->text + " in " +
               print(e->args[1], kOr) + ")";
    }
    return "?";
  }
};

}  // namespace

std::string to_python(const Expr& e) {
  if (!e) return "<null>";
  return Printer().print(e, kLowest);
}

}  // namespace vsynth::solvers
