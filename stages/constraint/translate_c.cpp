#include "stages/constraint/translate_c.h"

#include <cctype>
#include <charconv>
#include <cstring>
#include <map>
#include <optional>

#include "solvers/error.h"
#include "stages/constraint/error.h"
#include "stages/constraint/executor.h"

namespace vsynth::stages::constraint {

namespace {

// A C scalar type under LP64.
struct CType {
  enum Kind { Bool, Signed, Unsigned, Other } kind = Other;
  int bits = 0;
  std::string spelling;

  bool integer() const { return kind == Signed || kind == Unsigned; }
  bool operator==(const CType& o) const { return kind == o.kind && bits == o.bits; }
};

const CType kInt{CType::Signed, 32, "int"};

// 2^bits as an IR integer (bits <= 64).
Expr pow2(int bits) {
  if (bits < 63) return ir::int_lit(int64_t{1} << bits);
  return ir::mul(ir::int_lit(int64_t{1} << 32), ir::int_lit(int64_t{1} << (bits - 32)));
}
Expr type_min(const CType& t) {
  if (t.kind == CType::Unsigned) return ir::int_lit(0);
  if (t.bits == 64) return ir::sub(ir::neg(ir::int_lit(INT64_MAX)), ir::int_lit(1));
  return ir::int_lit(-(int64_t{1} << (t.bits - 1)));
}
Expr type_max(const CType& t) {
  if (t.kind == CType::Unsigned)
    return t.bits < 63 ? ir::int_lit((int64_t{1} << t.bits) - 1)
                       : ir::sub(pow2(t.bits), ir::int_lit(1));
  return t.bits == 64 ? ir::int_lit(INT64_MAX) : ir::int_lit((int64_t{1} << (t.bits - 1)) - 1);
}
Expr in_range(const Expr& v, const CType& t) {
  return ir::chain({ir::le(type_min(t), v), ir::le(v, type_max(t))});
}

// The type a declaration's type specifier spells, pointers and arrays aside.
CType parse_type(std::string_view spelling) {
  std::vector<std::string> words;
  std::string w;
  for (char c : spelling) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      w += c;
    } else if (!w.empty()) {
      words.push_back(std::move(w));
      w.clear();
    }
  }
  if (!w.empty()) words.push_back(std::move(w));
  CType t;
  t.spelling = std::string(spelling);
  if (words.size() == 1) {
    const std::string& x = words[0];
    if (x == "bool" || x == "_Bool") return {CType::Bool, 1, t.spelling};
    if (x == "size_t" || x == "uintptr_t") return {CType::Unsigned, 64, t.spelling};
    if (x == "ssize_t" || x == "ptrdiff_t" || x == "intptr_t")
      return {CType::Signed, 64, t.spelling};
    for (int b : {8, 16, 32, 64}) {
      if (x == "int" + std::to_string(b) + "_t") return {CType::Signed, b, t.spelling};
      if (x == "uint" + std::to_string(b) + "_t") return {CType::Unsigned, b, t.spelling};
    }
  }
  bool is_unsigned = false, is_char = false, is_short = false, other = false;
  int longs = 0;
  for (const std::string& x : words) {
    if (x == "unsigned") {
      is_unsigned = true;
    } else if (x == "signed" || x == "int" || x == "const" || x == "volatile") {
    } else if (x == "long") {
      ++longs;
    } else if (x == "short") {
      is_short = true;
    } else if (x == "char") {
      is_char = true;
    } else {
      other = true;
    }
  }
  if (other || words.empty()) return t;  // Other
  t.kind = is_unsigned ? CType::Unsigned : CType::Signed;
  t.bits = is_char ? 8 : is_short ? 16 : longs > 0 ? 64 : 32;
  return t;
}

Sort sort_of(const CType& t) {
  return t.kind == CType::Bool ? Sort::Bool : t.integer() ? Sort::Int : Sort::Opaque;
}

struct CVal {
  Expr e;
  CType t;
};

class CTranslator : public Executor {
 public:
  using Executor::Executor;

 private:
  // function_definition -> declarator chain -> function_declarator with the wanted name.
  TSNode function_declarator(TSNode fn) const {
    TSNode d = field(fn, "declarator");
    while (!ts_node_is_null(d) && type(d) != "function_declarator") d = field(d, "declarator");
    return d;
  }

  TSNode wanted_function(TSNode c) const override {
    if (type(c) != "function_definition") return {};
    TSNode d = function_declarator(c);
    return !ts_node_is_null(d) && text(field(d, "declarator")) == sig_.function ? c : TSNode{};
  }

  void translate_function(TSNode fn) override {
    out_.caveats.push_back(
        "C integers are modelled with their LP64 ranges: signed overflow, division by zero and "
        "INT_MIN / -1 are errors, unsigned arithmetic wraps");
    State s = enter_function(fn);
    TSNode body = field(fn, "body");
    stmt_ = body;
    exec_compound(body, s);
    if (!s.dead && !opt_.partial) {
      fall_off_end(s, body, "?", "`" + sig_.function + "` can reach its end without a return",
                   "the end of `" + sig_.function + "`");
    }
  }

  State enter_function(TSNode fn) {
    if (type(field(fn, "declarator")) != "function_declarator") {
      stop(fn, "a function returning a pointer");
    }
    result_ = parse_type(text(field(fn, "type")));
    if (text(field(fn, "type")) == "void") result_ = {};
    TSNode params = field(function_declarator(fn), "parameters");
    State s;
    std::vector<TSNode> decls;
    const uint32_t n = ts_node_named_child_count(params);
    for (uint32_t i = 0; i < n; ++i) {
      TSNode p = ts_node_named_child(params, i);
      if (type(p) == "parameter_declaration") {
        if (ts_node_is_null(field(p, "declarator")) && text(field(p, "type")) == "void") continue;
        decls.push_back(p);
      } else if (type(p) != "comment") {
        stop(p, "a variadic parameter list");
      }
    }
    check_param_count(decls.size());
    for (std::size_t i = 0; i < decls.size(); ++i) {
      TSNode d = field(decls[i], "declarator");
      if (ts_node_is_null(d)) stop(decls[i], "an unnamed parameter");
      const std::string name(text(d));
      CType t = parse_type(text(field(decls[i], "type")));
      if (type(d) != "identifier") t = {};  // pointer, array
      const solvers::Param& p = sig_.params[i];
      types_[name] = t;
      if (sort_of(t) == Sort::Opaque || p.sort != sort_of(t)) {
        s.env[name] =
            ir::unsupported(Sort::Opaque, name,
                            "parameter `" + name + "` of type `" +
                                std::string(text(field(decls[i], "type"))) + "` is not modelled");
      } else {
        s.env[name] = ir::var(p.name, p.sort);
      }
    }
    return s;
  }

  // --- statements ------------------------------------------------------------------------------

  void exec_compound(TSNode block, State& s) {
    std::vector<std::string> declared;
    for_each_statement(block, s, [&](TSNode st) { exec(st, s, declared); });
    end_scope(declared, s);
  }

  // A block's scope ends: its declarations go out of scope.
  void end_scope(const std::vector<std::string>& declared, State& s) {
    for (const std::string& d : declared) {
      s.env.erase(d);
      types_.erase(d);
    }
  }

  // Obligations found while evaluating go to the state being executed.
  struct InState {
    InState(CTranslator& t, State& s) : t_(t), saved_(t.cur_state_) { t.cur_state_ = &s; }
    ~InState() { t_.cur_state_ = saved_; }
    InState(const InState&) = delete;
    InState& operator=(const InState&) = delete;
    CTranslator& t_;
    State* saved_;
  };

  void exec(TSNode st, State& s, std::vector<std::string>& declared) {
    InState in(*this, s);
    stmt_ = st;
    if (exec_shared(st, s)) return;
    const std::string_view t = type(st);
    if (t == "compound_statement") {
      exec_compound(st, s);
    } else if (t == "declaration") {
      declare(st, s, declared);
    } else if (t == "expression_statement") {
      if (ts_node_named_child_count(st) > 0) effect(ts_node_named_child(st, 0), s);
    } else if (t == "while_statement" || t == "do_statement") {
      stop(st, "a while/do loop");
    } else {
      stop_statement(st);
    }
  }

  // One statement body (an if's branch, a loop's body) in its own scope.
  void exec_body(TSNode st, State& s) {
    std::vector<std::string> declared;
    exec(st, s, declared);
    end_scope(declared, s);
  }

  void declare(TSNode st, State& s, std::vector<std::string>& declared) {
    const CType t = parse_type(text(field(st, "type")));
    const uint32_t n = ts_node_named_child_count(st);
    for (uint32_t i = 0; i < n; ++i) {
      TSNode d = ts_node_named_child(st, i);
      if (!ts_node_eq(d, field(st, "type")) &&
          (type(d) == "init_declarator" || type(d) == "identifier")) {
        TSNode name_node = type(d) == "init_declarator" ? field(d, "declarator") : d;
        if (type(name_node) != "identifier") stop(d, "a pointer or array variable");
        if (!t.integer() && t.kind != CType::Bool)
          stop(st, "a variable of type `" + t.spelling + "`");
        const std::string name(text(name_node));
        if (types_.count(name)) stop(d, "a declaration that shadows `" + name + "`");
        types_[name] = t;
        declared.push_back(name);
        if (type(d) == "init_declarator") {
          TSNode value = field(d, "value");
          if (type(value) == "initializer_list") stop(value, "an initializer list");
          s.env[name] = convert(eval(value, s), t, d).e;
        } else {
          s.env[name] = ir::unsupported(sort_of(t), name,
                                        "`" + name + "` is read before it is assigned (line " +
                                            std::to_string(line(d)) + ")");
        }
      }
    }
  }

  void exec_return(TSNode st, State& s) override {
    TSNode e = ts_node_named_child(st, 0);
    if (!sig_.result) {
      if (!ts_node_is_null(e)) eval(e, s);
      add(ObligationKind::Return, s, nullptr, st);
    } else if (ts_node_is_null(e)) {
      add(ObligationKind::Return, s,
          ir::unsupported(*sig_.result, "?", "a bare `return` in a function returning a value"),
          st);
    } else {
      CVal v = eval(e, s);
      Expr r;
      if (result_.kind == CType::Other) {
        r = ir::unsupported(*sig_.result, snippet(e), "the return type is not modelled");
      } else {
        r = convert(v, result_, st).e;
      }
      if (r->sort != *sig_.result && r->sort != Sort::Opaque) {
        r = ir::unsupported(*sig_.result, snippet(e),
                            "the C return type does not match the spec's result");
      }
      add(ObligationKind::Return, s, r, st);
    }
    s.dead = true;
  }

  void exec_if(TSNode st, State& s) override {
    TSNode c = field(st, "condition");
    const Expr cond = truthy(eval(c, s));
    State then = branch(s, cond);
    State rest = branch(s, ir::not_(cond));
    exec_body(field(st, "consequence"), then);
    TSNode alt = field(st, "alternative");
    if (!ts_node_is_null(alt)) {
      if (type(alt) == "else_clause") alt = ts_node_named_child(alt, 0);
      exec_body(alt, rest);
    }
    s = join({std::move(then), std::move(rest)},
             "after the if at line " + std::to_string(line(st)));
  }

  void exec_for(TSNode st, State& s) override {
    if (is_open(st)) throw OpenLoop{};
    std::vector<std::string> declared;
    TSNode init = field(st, "initializer");
    if (!ts_node_is_null(init)) {
      stmt_ = st;
      if (type(init) == "declaration") {
        declare(init, s, declared);
      } else {
        effect(init, s);
      }
    }
    TSNode cond = field(st, "condition");
    TSNode update = field(st, "update");
    TSNode body = field(st, "body");
    unroll(
        s, st,
        [&](State& cur, int) {
          InState in(*this, cur);
          stmt_ = st;
          return ts_node_is_null(cond) ? ir::bool_lit(true) : truthy(eval(cond, cur));
        },
        [](State&, int) {}, [&](State& in) { exec_body(body, in); },
        [&](State& cur) {
          InState in(*this, cur);
          stmt_ = st;
          if (!ts_node_is_null(update)) effect(update, cur);
        });
    end_scope(declared, s);
  }

  // An expression evaluated for its effect: assignments, ++/--, assert(), comma lists.
  void effect(TSNode e, State& s) {
    const std::string_view t = type(e);
    if (t == "assignment_expression") {
      TSNode left = field(e, "left");
      if (type(left) != "identifier") stop(e, "assigning to `" + snippet(left) + "`");
      const std::string name(text(left));
      auto ty = types_.find(name);
      if (ty == types_.end()) stop(left, "assigning to an undeclared `" + name + "`");
      std::string op(text(field(e, "operator")));
      CVal v = eval(field(e, "right"), s);
      if (op != "=") {
        op.pop_back();
        v = arith(op, CVal{s.env.at(name), ty->second}, v, e);
      }
      s.env[name] = convert(v, ty->second, e).e;
    } else if (t == "update_expression") {
      TSNode arg = field(e, "argument");
      if (type(arg) != "identifier") stop(e, "incrementing `" + snippet(arg) + "`");
      const std::string name(text(arg));
      auto ty = types_.find(name);
      if (ty == types_.end()) stop(arg, "incrementing an undeclared `" + name + "`");
      const std::string op = text(field(e, "operator")) == "++" ? "+" : "-";
      const CVal v = arith(op, CVal{s.env.at(name), ty->second}, CVal{ir::int_lit(1), kInt}, e);
      s.env[name] = convert(v, ty->second, e).e;
    } else if (t == "comma_expression") {
      effect(field(e, "left"), s);
      effect(field(e, "right"), s);
    } else if (t == "call_expression" && text(field(e, "function")) == "assert") {
      TSNode args = field(e, "arguments");
      if (ts_node_named_child_count(args) != 1) stop(e, "assert() with other than one argument");
      const Expr c = truthy(eval(ts_node_named_child(args, 0), s));
      add(ObligationKind::Assert, s, c, stmt_);
    } else if (t == "parenthesized_expression") {
      effect(ts_node_named_child(e, 0), s);
    } else if (t == "call_expression") {
      stop(e, "a call made for its effect");
    } else {
      eval(e, s);  // for its obligations only
    }
  }

  // --- values ----------------------------------------------------------------------------------

  // Records an obligation on the current statement, under the short-circuit guards in force.
  void oblige(const State& s, const Expr& holds, const std::string& note) {
    State g = s;
    for (const Expr& c : guards_) g.alive = conj(g.alive, c);
    add(ObligationKind::Defined, g, holds, stmt_);
    out_.obligations.back().where += " (" + note + ")";
  }

  static Expr truthy(const CVal& v) {
    if (v.t.kind == CType::Bool) return v.e;
    if (v.e->sort == Sort::Opaque) return ir::truthy(v.e);
    return ir::ne(v.e, ir::int_lit(0));
  }

  // Integer promotion: bool and types narrower than int become int.
  static CVal promote(const CVal& v) {
    if (v.t.kind == CType::Bool) return {ir::ite(v.e, ir::int_lit(1), ir::int_lit(0)), kInt};
    if (v.t.integer() && v.t.bits < 32) return {v.e, kInt};
    return v;
  }

  static CType common(const CType& a, const CType& b) {
    if (a.kind == b.kind) return a.bits >= b.bits ? a : b;
    const CType& u = a.kind == CType::Unsigned ? a : b;
    const CType& sg = a.kind == CType::Unsigned ? b : a;
    if (u.bits >= sg.bits) return u;
    return sg;  // the signed type holds every value of the narrower unsigned one
  }

  // The value of `v` converted to `to` (C's implicit conversion).
  CVal convert(const CVal& v, const CType& to, TSNode at) {
    (void)at;
    if (v.e->sort == Sort::Opaque) return {v.e, to};
    if (to.kind == CType::Bool) return {truthy(v), to};
    const CVal p = v.t.kind == CType::Bool ? promote(v) : v;
    if (p.t == to) return {p.e, to};
    if (to.kind == CType::Unsigned) {
      const bool fits = p.t.kind == CType::Unsigned && p.t.bits <= to.bits;
      return {fits ? p.e : ir::mod(p.e, pow2(to.bits)), to};
    }
    // To signed: exact when every value of the source type fits, else implementation-defined.
    const bool fits = (p.t.kind == CType::Signed && p.t.bits <= to.bits) ||
                      (p.t.kind == CType::Unsigned && p.t.bits < to.bits);
    if (!fits && cur_state_) {
      oblige(*cur_state_, in_range(p.e, to), "`" + to_python(p.e) + "` must fit in " + to.spelling);
    }
    return {p.e, to};
  }

  // + - * / % on promoted, converted operands; signed results must fit, unsigned ones wrap.
  CVal arith(const std::string& op, CVal a, CVal b, TSNode n) {
    if (a.e->sort == Sort::Opaque || b.e->sort == Sort::Opaque) {
      return {ir::unsupported(Sort::Int, snippet(n), "an operand is not modelled"), kInt};
    }
    a = promote(a);
    b = promote(b);
    if (!a.t.integer() || !b.t.integer()) stop(n, "arithmetic on a non-integer");
    const CType t = common(a.t, b.t);
    a = convert(a, t, n);
    b = convert(b, t, n);
    Expr r;
    if (op == "+") {
      r = ir::add(a.e, b.e);
    } else if (op == "-") {
      r = ir::sub(a.e, b.e);
    } else if (op == "*") {
      r = ir::mul(a.e, b.e);
    } else if (op == "/" || op == "%") {
      if (cur_state_) oblige(*cur_state_, ir::ne(b.e, ir::int_lit(0)), "division by zero");
      r = op == "/" ? ir::trunc_div(a.e, b.e) : ir::trunc_mod(a.e, b.e);
    } else if (op == ">>" && t.kind == CType::Unsigned && b.e->op == Op::IntLit &&
               b.e->int_value >= 0 && b.e->int_value < t.bits) {
      return {ir::floor_div(a.e, pow2(static_cast<int>(b.e->int_value))), t};
    } else if (op == "&" && t.kind == CType::Unsigned && b.e->op == Op::IntLit &&
               b.e->int_value > 0 && (b.e->int_value & (b.e->int_value + 1)) == 0) {
      return {ir::mod(a.e, ir::add(b.e, ir::int_lit(1))), t};
    } else {
      stop(n, "the operator `" + op + "` (on these operands)");
    }
    if (t.kind == CType::Unsigned) return {ir::mod(r, pow2(t.bits)), t};
    if (cur_state_) oblige(*cur_state_, in_range(r, t), "signed overflow in `" + snippet(n) + "`");
    return {r, t};
  }

  CVal eval(TSNode n, State& s) {
    InState in(*this, s);
    return eval_in(n, s);
  }

  CVal literal(TSNode n) {
    std::string t(text(n));
    bool is_unsigned = false;
    int longs = 0;
    while (!t.empty() && std::strchr("uUlL", t.back())) {
      if (t.back() == 'u' || t.back() == 'U')
        is_unsigned = true;
      else
        ++longs;
      t.pop_back();
    }
    int base = 10;
    std::string_view d = t;
    if (d.size() > 2 && d[0] == '0' && (d[1] == 'x' || d[1] == 'X')) {
      base = 16;
      d.remove_prefix(2);
    } else if (d.size() > 1 && d[0] == '0') {
      base = 8;
      d.remove_prefix(1);
    }
    uint64_t v = 0;
    const auto r = std::from_chars(d.data(), d.data() + d.size(), v, base);
    if (r.ec != std::errc() || r.ptr != d.data() + d.size() || v > uint64_t{INT64_MAX})
      stop(n, "the literal `" + std::string(text(n)) + "`");
    // The first of int, long (or their unsigned forms with a U suffix) that holds the value.
    CType ty{is_unsigned ? CType::Unsigned : CType::Signed, longs > 0 ? 64 : 32,
             is_unsigned ? "unsigned" : "int"};
    const uint64_t limit = is_unsigned ? 0xFFFFFFFFull : 0x7FFFFFFFull;
    if (ty.bits == 32 && v > limit) ty = {ty.kind, 64, is_unsigned ? "unsigned long" : "long"};
    return {ir::int_lit(static_cast<int64_t>(v)), ty};
  }

  CVal eval_in(TSNode n, State& s) {
    const std::string_view t = type(n);
    if (t == "number_literal") return literal(n);
    if (t == "true") return {ir::bool_lit(true), {CType::Bool, 1, "bool"}};
    if (t == "false") return {ir::bool_lit(false), {CType::Bool, 1, "bool"}};
    if (t == "parenthesized_expression") return eval_in(ts_node_named_child(n, 0), s);
    if (t == "identifier") {
      const std::string name(text(n));
      if (auto it = s.env.find(name); it != s.env.end()) return {it->second, types_.at(name)};
      const CType i32 = kInt, i64{CType::Signed, 64, "long"}, u32{CType::Unsigned, 32, "unsigned"},
                  u64{CType::Unsigned, 64, "size_t"};
      if (name == "INT_MAX") return {type_max(i32), i32};
      if (name == "INT_MIN") return {type_min(i32), i32};
      if (name == "UINT_MAX") return {type_max(u32), u32};
      if (name == "LONG_MAX" || name == "LLONG_MAX") return {type_max(i64), i64};
      if (name == "LONG_MIN" || name == "LLONG_MIN") return {type_min(i64), i64};
      if (name == "SIZE_MAX" || name == "ULONG_MAX") return {type_max(u64), u64};
      stop(n, "the name `" + name + "`");
    }
    if (t == "unary_expression") {
      const std::string_view op = text(field(n, "operator"));
      CVal a = eval_in(field(n, "argument"), s);
      if (op == "!") return {ir::not_(truthy(a)), {CType::Bool, 1, "bool"}};
      if (op == "+") return promote(a);
      if (op == "-") return arith("-", {ir::int_lit(0), kInt}, a, n);
      stop(n, "the operator `" + std::string(op) + "`");
    }
    if (t == "binary_expression") {
      const std::string op(text(field(n, "operator")));
      if (op == "&&" || op == "||") {
        const Expr a = truthy(eval_in(field(n, "left"), s));
        guards_.push_back(op == "&&" ? a : ir::not_(a));
        Expr b;
        try {
          b = truthy(eval_in(field(n, "right"), s));
        } catch (...) {
          guards_.pop_back();
          throw;
        }
        guards_.pop_back();
        return {op == "&&" ? ir::and_({a, b}) : ir::or_({a, b}), {CType::Bool, 1, "bool"}};
      }
      CVal a = eval_in(field(n, "left"), s);
      CVal b = eval_in(field(n, "right"), s);
      if (op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=") {
        if (a.e->sort == Sort::Opaque || b.e->sort == Sort::Opaque)
          return {ir::unsupported(Sort::Bool, snippet(n), "an operand is not modelled"),
                  {CType::Bool, 1, "bool"}};
        a = promote(a);
        b = promote(b);
        const CType ct = common(a.t, b.t);
        a = convert(a, ct, n);
        b = convert(b, ct, n);
        return {comparison_builder(op)(a.e, b.e), {CType::Bool, 1, "bool"}};
      }
      return arith(op, a, b, n);
    }
    if (t == "conditional_expression") {
      const Expr c = truthy(eval_in(field(n, "condition"), s));
      guards_.push_back(c);
      CVal a, b;
      try {
        a = eval_in(field(n, "consequence"), s);
        guards_.back() = ir::not_(c);
        b = eval_in(field(n, "alternative"), s);
      } catch (...) {
        guards_.pop_back();
        throw;
      }
      guards_.pop_back();
      if (a.t.kind == CType::Bool && b.t.kind == CType::Bool) return {ir::ite(c, a.e, b.e), a.t};
      a = promote(a);
      b = promote(b);
      const CType ct = common(a.t, b.t);
      return {ir::ite(c, convert(a, ct, n).e, convert(b, ct, n).e), ct};
    }
    if (t == "call_expression") {
      const std::string_view f = text(field(n, "function"));
      TSNode args = field(n, "arguments");
      if ((f == "abs" || f == "labs" || f == "llabs") && ts_node_named_child_count(args) == 1) {
        CVal a = promote(eval_in(ts_node_named_child(args, 0), s));
        const CType ct = f == "abs" ? kInt : CType{CType::Signed, 64, "long"};
        a = convert(a, ct, n);
        const Expr r = ir::abs(a.e);
        oblige(s, in_range(r, ct), "`" + snippet(n) + "` overflows");
        return {r, ct};
      }
      stop(n, "the call `" + snippet(n) + "`");
    }
    if (t == "cast_expression") {
      const CType to = parse_type(text(field(field(n, "type"), "type")));
      if (to.kind == CType::Other) stop(n, "a cast to `" + snippet(field(n, "type")) + "`");
      return convert(eval_in(field(n, "value"), s), to, n);
    }
    if (t == "assignment_expression" || t == "update_expression")
      stop(n, "an assignment inside an expression");
    stop(n, "the expression `" + std::string(t) + "`");
  }

  CType result_;
  std::map<std::string, CType, std::less<>> types_;
  std::vector<Expr> guards_;    // short-circuit conditions of the expression being evaluated
  State* cur_state_ = nullptr;  // the state eval() records obligations in
  TSNode stmt_{};               // the statement obligations belong to
};

}  // namespace

Translation translate_c(std::string_view source, const solvers::Signature& sig,
                        const TranslateOptions& options) {
  return translate_source<CTranslator>(source, "candidate.c", "c", sig, options);
}

CSignature parse_c_signature(std::string_view declaration) {
  std::string text(declaration);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.empty() || text.back() != ';') text += ';';
  ast::ParsedFile file("signature.c", ast::Language::named("c"), text);
  auto bad = [&](const std::string& why) {
    return ConstraintError(
        "C signature `" + std::string(declaration) + "`: " + why +
        " (expected one declaration such as `int clamp(int x, int lo, int hi)`)");
  };
  if (file.has_errors()) throw bad("it does not parse");
  TSNode root = file.root();
  if (ts_node_named_child_count(root) != 1) throw bad("not exactly one declaration");
  TSNode decl = ts_node_named_child(root, 0);
  auto field = [](TSNode n, const char* name) {
    return ts_node_child_by_field_name(n, name, static_cast<uint32_t>(std::strlen(name)));
  };
  TSNode d = field(decl, "declarator");
  bool returns_pointer = false;
  while (!ts_node_is_null(d) && std::string_view(ts_node_type(d)) != "function_declarator") {
    returns_pointer = true;
    d = field(d, "declarator");
  }
  if (ts_node_is_null(d)) throw bad("no function declarator");
  CSignature out;
  solvers::Signature& sig = out.signature;
  sig.function = std::string(file.text(field(d, "declarator")));
  const std::string result_type(file.text(field(decl, "type")));
  sig.result_annotation = result_type;
  if (returns_pointer) {
    sig.result = Sort::Opaque;
  } else if (result_type == "void") {
    sig.result = std::nullopt;
  } else {
    sig.result = sort_of(parse_type(result_type));
  }
  TSNode params = field(d, "parameters");
  const uint32_t n = ts_node_named_child_count(params);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode p = ts_node_named_child(params, i);
    if (std::string_view(ts_node_type(p)) != "parameter_declaration") continue;
    TSNode pd = field(p, "declarator");
    const std::string ptype(file.text(field(p, "type")));
    if (ts_node_is_null(pd)) {
      if (ptype == "void") continue;
      throw bad("parameter " + std::to_string(i + 1) + " has no name");
    }
    solvers::Param param;
    const bool scalar = std::string_view(ts_node_type(pd)) == "identifier";
    TSNode name = pd;
    while (!ts_node_is_null(field(name, "declarator"))) name = field(name, "declarator");
    param.name = std::string(file.text(name));
    param.annotation = ptype;
    const CType t = parse_type(ptype);
    param.sort = scalar ? sort_of(t) : Sort::Opaque;
    if (scalar && t.integer()) out.ranges.push_back(in_range(ir::var(param.name, Sort::Int), t));
    sig.params.push_back(std::move(param));
  }
  return out;
}

}  // namespace vsynth::stages::constraint
