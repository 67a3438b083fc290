#include "stages/constraint/translate_python.h"

#include <charconv>
#include <optional>

#include "solvers/error.h"
#include "stages/constraint/executor.h"

namespace vsynth::stages::constraint {

namespace {

std::optional<int64_t> parse_int(std::string_view t) {
  std::string digits;
  for (char c : t) {
    if (c != '_') digits += c;
  }
  int base = 10;
  std::string_view d = digits;
  if (d.size() > 2 && d[0] == '0' && (d[1] == 'x' || d[1] == 'X')) base = 16;
  if (d.size() > 2 && d[0] == '0' && (d[1] == 'o' || d[1] == 'O')) base = 8;
  if (d.size() > 2 && d[0] == '0' && (d[1] == 'b' || d[1] == 'B')) base = 2;
  if (base != 10) d.remove_prefix(2);
  int64_t v = 0;
  const auto r = std::from_chars(d.data(), d.data() + d.size(), v, base);
  if (r.ec != std::errc() || r.ptr != d.data() + d.size()) return std::nullopt;
  return v;
}

// Python's binary arithmetic operators.
constexpr NamedBuilder kArithmetic[] = {
    {"+", ir::add},        {"-", ir::sub}, {"*", ir::mul},  {"/", ir::div},
    {"//", ir::floor_div}, {"%", ir::mod}, {"**", ir::pow},
};

class PythonTranslator : public Executor {
 public:
  using Executor::Executor;

 private:
  TSNode wanted_function(TSNode c) const override {
    if (type(c) == "decorated_definition") c = field(c, "definition");
    if (ts_node_is_null(c) || type(c) != "function_definition") return {};
    return text(field(c, "name")) == sig_.function ? c : TSNode{};
  }

  void translate_function(TSNode fn) override {
    State s = enter_function(fn);
    TSNode body = field(fn, "body");
    exec_block(body, s);
    if (!s.dead && !opt_.partial) {
      // Reaching the end returns None.
      TSNode last = ts_node_named_child(body, ts_node_named_child_count(body) - 1);
      if (ts_node_is_null(last)) last = body;
      fall_off_end(s, last, "None",
                   "`" + sig_.function + "` can end without a return (returns None)",
                   "the end of `" + sig_.function + "` (falls off, returns None)");
    }
  }

  State enter_function(TSNode fn) {
    TSNode params = field(fn, "parameters");
    std::vector<std::string> names;
    const uint32_t n = ts_node_named_child_count(params);
    for (uint32_t i = 0; i < n; ++i) {
      TSNode p = ts_node_named_child(params, i);
      const std::string_view t = type(p);
      if (t == "identifier") {
        names.emplace_back(text(p));
      } else if (t == "typed_parameter") {
        TSNode id = ts_node_named_child(p, 0);
        if (type(id) != "identifier") stop(p, "a *args/**kwargs parameter");
        names.emplace_back(text(id));
      } else if (t == "default_parameter" || t == "typed_default_parameter") {
        names.emplace_back(text(field(p, "name")));
      } else if (t == "keyword_separator" || t == "positional_separator" || t == "comment") {
        continue;
      } else {
        stop(p, "a *args/**kwargs parameter");
      }
    }
    // A method's receiver: the signature parser drops it too.
    if (!names.empty() && (names.front() == "self" || names.front() == "cls") &&
        names.size() == sig_.params.size() + 1)
      names.erase(names.begin());
    check_param_count(names.size());
    State s;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const solvers::Param& p = sig_.params[i];
      s.env[names[i]] = p.sort == Sort::Opaque
                            ? ir::unsupported(Sort::Opaque, names[i],
                                              "parameter `" + p.name + "` has type " +
                                                  (p.annotation.empty() ? "?" : p.annotation) +
                                                  ", which is not modelled")
                            : ir::var(p.name, p.sort);
    }
    return s;
  }

  // --- statements ------------------------------------------------------------------------------

  void exec_block(TSNode block, State& s) {
    for_each_statement(block, s, [&](TSNode st) { exec(st, s); });
  }

  void exec(TSNode st, State& s) {
    if (exec_shared(st, s)) return;
    const std::string_view t = type(st);
    if (t == "expression_statement") {
      exec_expression_statement(st, s);
    } else if (t == "assert_statement") {
      TSNode c = ts_node_named_child(st, 0);
      const Expr cond = truthy(eval(c, s), c);
      add(ObligationKind::Assert, s, cond, st);
    } else if (t == "raise_statement") {
      add(ObligationKind::Assert, s, ir::bool_lit(false), st);
      out_.obligations.back().where += " (a reachable raise)";
      s.dead = true;
    } else if (t == "pass_statement") {
      // nothing
    } else if (t == "import_statement" || t == "import_from_statement") {
      // an import inside the function changes no modelled value
    } else if (t == "while_statement") {
      stop(st, "a while loop");
    } else if (t == "function_definition" || t == "decorated_definition") {
      stop(st, "a nested function");
    } else {
      stop_statement(st);
    }
  }

  void exec_expression_statement(TSNode st, State& s) {
    TSNode e = ts_node_named_child(st, 0);
    const std::string_view t = type(e);
    if (t == "assignment") {
      exec_assignment(e, st, s);
    } else if (t == "augmented_assignment") {
      exec_augmented(e, st, s);
    } else if (t == "string" || t == "concatenated_string" || t == "ellipsis") {
      // a docstring or `...`
    } else if (t == "call") {
      TSNode f = field(e, "function");
      if (type(f) == "identifier" && text(f) == "print") return;  // output only
      stop(e, "a call made for its effect");
    } else {
      const Expr v = eval(e, s);  // evaluated for nothing but its exceptions
      require_defined(s, v, st);
    }
  }

  void assign_target(TSNode target, const Expr& v, State& s) {
    if (type(target) != "identifier") stop(target, "assigning to `" + snippet(target) + "`");
    s.env[std::string(text(target))] = v;
  }

  void exec_assignment(TSNode a, TSNode st, State& s) {
    TSNode left = field(a, "left");
    TSNode right = field(a, "right");
    if (ts_node_is_null(right)) return;  // a bare annotation `x: int`
    if (type(right) == "assignment") stop(a, "a chained assignment");
    const std::string_view lt = type(left);
    if (lt == "pattern_list" || lt == "tuple_pattern") {
      // a, b = b, a % b: every value first, then every target.
      if (type(right) != "expression_list" && type(right) != "tuple")
        stop(a, "unpacking a value that is not a tuple");
      const uint32_t n = ts_node_named_child_count(left);
      if (n != ts_node_named_child_count(right)) stop(a, "unpacking with mismatched lengths");
      std::vector<Expr> values;
      for (uint32_t i = 0; i < n; ++i) {
        values.push_back(eval(ts_node_named_child(right, i), s));
        require_defined(s, values.back(), st);
      }
      for (uint32_t i = 0; i < n; ++i) assign_target(ts_node_named_child(left, i), values[i], s);
      return;
    }
    const Expr v = eval(right, s);
    require_defined(s, v, st);
    assign_target(left, v, s);
  }

  void exec_augmented(TSNode a, TSNode st, State& s) {
    TSNode left = field(a, "left");
    if (type(left) != "identifier") stop(a, "augmented assignment to `" + snippet(left) + "`");
    std::string op(text(field(a, "operator")));
    if (op.size() < 2 || op.back() != '=') stop(a, "the operator `" + op + "`");
    op.pop_back();
    const Expr cur = eval(left, s);
    const Expr v = binary(op, cur, eval(field(a, "right"), s), a);
    require_defined(s, v, st);
    s.env[std::string(text(left))] = v;
  }

  void exec_return(TSNode st, State& s) override {
    TSNode e = ts_node_named_child(st, 0);
    Expr v;
    if (!ts_node_is_null(e) && type(e) != "none") v = eval(e, s);
    if (!sig_.result) {
      if (v) require_defined(s, v, st);
      add(ObligationKind::Return, s, nullptr, st);
    } else if (!v) {
      add(ObligationKind::Return, s,
          ir::unsupported(*sig_.result, "None",
                          "line " + std::to_string(line(st)) + " returns None"),
          st);
    } else {
      const Sort want = *sig_.result;
      const bool ok = v->sort == want || (want == Sort::Real && v->sort == Sort::Int) ||
                      v->sort == Sort::Opaque;
      if (!ok) {
        v = ir::unsupported(want, std::string(text(e)),
                            "line " + std::to_string(line(st)) + " returns " +
                                std::string(solvers::sort_name(v->sort)) + " where " +
                                sig_.function + " returns " +
                                std::string(solvers::sort_name(want)));
      }
      add(ObligationKind::Return, s, v, st);
    }
    s.dead = true;
  }

  void exec_if(TSNode st, State& s) override {
    std::vector<State> arms;
    TSNode c = field(st, "condition");
    Expr cond = truthy(eval(c, s), c);
    require_defined(s, cond, st);
    State rest = branch(s, ir::not_(cond));
    {
      State then = branch(s, cond);
      exec_block(field(st, "consequence"), then);
      arms.push_back(std::move(then));
    }
    const uint32_t n = ts_node_named_child_count(st);
    bool had_else = false;
    for (uint32_t i = 0; i < n; ++i) {
      TSNode alt = ts_node_named_child(st, i);
      const std::string_view t = type(alt);
      if (t == "elif_clause") {
        TSNode c2 = field(alt, "condition");
        const Expr cond2 = truthy(eval(c2, rest), c2);
        require_defined(rest, cond2, alt);
        State then = branch(rest, cond2);
        rest = branch(rest, ir::not_(cond2));
        exec_block(field(alt, "consequence"), then);
        arms.push_back(std::move(then));
      } else if (t == "else_clause") {
        exec_block(field(alt, "body"), rest);
        had_else = true;
      }
    }
    (void)had_else;
    arms.push_back(std::move(rest));
    s = join(std::move(arms), "after the if at line " + std::to_string(line(st)));
  }

  void exec_for(TSNode st, State& s) override {
    if (is_open(st)) throw OpenLoop{};
    TSNode left = field(st, "left");
    TSNode right = field(st, "right");
    if (type(left) != "identifier") stop(left, "a loop target other than a name");
    if (!ts_node_is_null(field(st, "alternative"))) stop(st, "a for-else");
    const std::string var(text(left));
    TSNode body = field(st, "body");
    auto run_body = [&](State& in) { exec_block(body, in); };
    auto no_step = [](State&) {};

    // for v in range(a[, b[, step]]), step a non-zero literal.
    if (type(right) == "call" && text(field(right, "function")) == "range") {
      TSNode args = field(right, "arguments");
      const uint32_t n = ts_node_named_child_count(args);
      if (n < 1 || n > 3) stop(right, "range() with " + std::to_string(n) + " arguments");
      std::vector<Expr> a;
      for (uint32_t i = 0; i < n; ++i) {
        TSNode ai = ts_node_named_child(args, i);
        if (type(ai) == "keyword_argument") stop(ai, "a keyword argument to range()");
        a.push_back(eval(ai, s));
        if (a.back()->sort != Sort::Int) stop(ai, "a range() bound that is not an int");
        require_defined(s, a.back(), st);
      }
      const Expr lo = n == 1 ? ir::int_lit(0) : a[0];
      const Expr hi = n == 1 ? a[0] : a[1];
      int64_t step = 1;
      if (n == 3) {
        const Expr& st3 = a[2];
        if (st3->op == Op::IntLit) {
          step = st3->int_value;
        } else if (st3->op == Op::Neg && st3->args[0]->op == Op::IntLit) {
          step = -st3->args[0]->int_value;
        } else {
          stop(ts_node_named_child(args, 2), "a range() step that is not a literal");
        }
        if (step == 0) stop(right, "range() with step 0 (raises ValueError)");
      }
      auto value = [lo, step](int k) {
        if (lo->op == Op::IntLit) return ir::int_lit(lo->int_value + step * k);
        return k == 0 ? lo : ir::add(lo, ir::int_lit(step * k));
      };
      unroll(
          s, st,
          [&](State&, int k) { return step > 0 ? ir::lt(value(k), hi) : ir::gt(value(k), hi); },
          [&](State& in, int k) { in.env[var] = value(k); }, run_body, no_step);
      return;
    }
    // for x in <list>
    const Expr seq = eval(right, s);
    if (seq->sort != Sort::IntSeq || seq->op == Op::Unsupported)
      stop(right, "a loop over something other than range() or a list[int]");
    require_defined(s, seq, st);
    unroll(
        s, st, [&](State&, int k) { return ir::lt(ir::int_lit(k), ir::len(seq)); },
        [&](State& in, int k) { in.env[var] = ir::index(seq, ir::int_lit(k)); }, run_body, no_step);
  }

  // --- expressions -----------------------------------------------------------------------------

  Expr truthy(const Expr& e, TSNode at) {
    (void)at;
    return ir::truthy(e);
  }

  Expr unsupported(TSNode n, Sort sort, const std::string& why) const {
    return ir::unsupported(sort, snippet(n), why + " (line " + std::to_string(line(n)) + ")");
  }

  // Builders reject ill-sorted operands (`xs < 3`): such code would raise TypeError in Python,
  // which the IR does not model; it becomes an unsupported value.
  template <class F>
  Expr guard(TSNode n, F&& f) {
    try {
      return f();
    } catch (const solvers::SolverError& e) {
      return unsupported(n, Sort::Opaque, e.what());
    }
  }

  Expr binary(const std::string& op, const Expr& a, const Expr& b, TSNode n) {
    return guard(n, [&]() -> Expr {
      if (const BinaryBuilder build = find_builder(kArithmetic, op)) return build(a, b);
      return unsupported(n, a->sort == Sort::Int ? Sort::Int : Sort::Opaque,
                         "the operator `" + op + "` is not modelled");
    });
  }

  Expr eval(TSNode n, State& s) {
    const std::string_view t = type(n);
    if (t == "identifier") {
      auto it = s.env.find(text(n));
      if (it != s.env.end()) return it->second;
      return unsupported(n, Sort::Opaque,
                         "`" + std::string(text(n)) + "` is not a parameter or local variable");
    }
    if (t == "integer") {
      if (auto v = parse_int(text(n))) return ir::int_lit(*v);
      return unsupported(n, Sort::Int, "integer literal beyond 64 bits");
    }
    if (t == "float") {
      return guard(n, [&] { return ir::real_lit(text(n)); });
    }
    if (t == "true") return ir::bool_lit(true);
    if (t == "false") return ir::bool_lit(false);
    if (t == "parenthesized_expression") return eval(ts_node_named_child(n, 0), s);
    if (t == "unary_operator") {
      const std::string_view op = text(field(n, "operator"));
      const Expr a = eval(field(n, "argument"), s);
      if (op == "-") return guard(n, [&] { return ir::neg(a); });
      if (op == "+") return a;
      return unsupported(n, Sort::Opaque, "the operator `" + std::string(op) + "`");
    }
    if (t == "binary_operator") {
      const Expr a = eval(field(n, "left"), s);
      const Expr b = eval(field(n, "right"), s);
      return binary(std::string(text(field(n, "operator"))), a, b, n);
    }
    if (t == "boolean_operator") {
      const std::string_view op = text(field(n, "operator"));
      const Expr a = eval(field(n, "left"), s);
      const Expr b = eval(field(n, "right"), s);
      return guard(n, [&] { return op == "and" ? ir::py_and(a, b) : ir::py_or(a, b); });
    }
    if (t == "not_operator") {
      const Expr a = eval(field(n, "argument"), s);
      return guard(n, [&] { return ir::not_(ir::truthy(a)); });
    }
    if (t == "comparison_operator") return comparison(n, s);
    if (t == "conditional_expression") {
      // a if c else b: children a, c, b
      const Expr a = eval(ts_node_named_child(n, 0), s);
      const Expr c = eval(ts_node_named_child(n, 1), s);
      const Expr b = eval(ts_node_named_child(n, 2), s);
      return guard(n, [&] { return ir::ite(ir::truthy(c), a, b); });
    }
    if (t == "call") return call(n, s);
    if (t == "subscript") {
      TSNode idx = field(n, "subscript");
      if (type(idx) == "slice") return unsupported(n, Sort::IntSeq, "slices are not modelled");
      if (ts_node_named_child_count(n) > 2) return unsupported(n, Sort::Opaque, "a multi-index");
      const Expr seq = eval(field(n, "value"), s);
      const Expr i = eval(idx, s);
      if (seq->sort != Sort::IntSeq && seq->sort != Sort::Opaque)
        return unsupported(n, Sort::Opaque, "indexing a " + std::string(sort_name(seq->sort)));
      return guard(n, [&] { return ir::index(seq, i); });
    }
    if (t == "list") {
      std::vector<Expr> elems;
      const uint32_t k = ts_node_named_child_count(n);
      for (uint32_t i = 0; i < k; ++i) {
        TSNode c = ts_node_named_child(n, i);
        Expr e = eval(c, s);
        if (e->sort != Sort::Int) return unsupported(n, Sort::IntSeq, "a list not of int");
        elems.push_back(std::move(e));
      }
      return guard(n, [&] { return ir::list_lit(std::move(elems)); });
    }
    if (t == "none") return unsupported(n, Sort::Opaque, "None is not modelled");
    if (t == "string" || t == "concatenated_string")
      return unsupported(n, Sort::Opaque, "strings are not modelled");
    return unsupported(n, Sort::Opaque, "`" + std::string(t) + "` is not modelled");
  }

  Expr comparison(TSNode n, State& s) {
    // Operands are the named children; the operators are the anonymous tokens between them
    // (`not in` and `is not` are two tokens).
    std::vector<Expr> operands;
    std::vector<std::string> ops;
    std::string pending;
    const uint32_t k = ts_node_child_count(n);
    for (uint32_t i = 0; i < k; ++i) {
      TSNode c = ts_node_child(n, i);
      if (ts_node_is_named(c)) {
        if (!operands.empty()) ops.push_back(pending);
        pending.clear();
        operands.push_back(eval(c, s));
      } else {
        if (!pending.empty()) pending += ' ';
        pending += text(c);
      }
    }
    if (operands.size() < 2 || ops.size() + 1 != operands.size())
      return unsupported(n, Sort::Bool, "a malformed comparison");
    std::vector<Expr> links;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const std::string& op = ops[i];
      const Expr& a = operands[i];
      const Expr& b = operands[i + 1];
      Expr link = guard(n, [&]() -> Expr {
        if (const BinaryBuilder build = comparison_builder(op)) return build(a, b);
        return unsupported(n, Sort::Bool, "the comparison `" + op + "` is not modelled");
      });
      if (link->sort != Sort::Bool) link = unsupported(n, Sort::Bool, "a comparison");
      links.push_back(std::move(link));
    }
    // Python evaluates a chain's middle operands once and stops at the first false link; the
    // links here are pure, so their conjunction is the same value.
    return guard(n, [&] { return ir::chain(std::move(links)); });
  }

  Expr call(TSNode n, State& s) {
    TSNode f = field(n, "function");
    TSNode args = field(n, "arguments");
    if (type(f) != "identifier" || type(args) != "argument_list")
      return unsupported(n, Sort::Opaque, "the call `" + snippet(n) + "` is not modelled");
    const std::string_view name = text(f);
    if (s.env.count(name))
      return unsupported(n, Sort::Opaque, "calling a local value is not modelled");
    std::vector<Expr> a;
    const uint32_t k = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < k; ++i) {
      TSNode ai = ts_node_named_child(args, i);
      const std::string_view at = type(ai);
      if (at == "keyword_argument" || at == "list_splat" || at == "dictionary_splat" ||
          at == "generator_expression")
        return unsupported(
            n, Sort::Opaque,
            "`" + std::string(at) + "` arguments to " + std::string(name) + "() are not modelled");
      a.push_back(eval(ai, s));
    }
    return guard(n, [&]() -> Expr {
      if (name == "abs" && a.size() == 1) return ir::abs(a[0]);
      if ((name == "min" || name == "max") && a.size() >= 2)
        return name == "min" ? ir::min(a) : ir::max(a);
      if ((name == "min" || name == "max") && a.size() == 1 && a[0]->sort == Sort::IntSeq)
        return name == "min" ? ir::seq_min(a[0]) : ir::seq_max(a[0]);
      if (name == "len" && a.size() == 1 && a[0]->sort == Sort::IntSeq) return ir::len(a[0]);
      if (name == "sum" && a.size() == 1 && a[0]->sort == Sort::IntSeq) return ir::sum(a[0]);
      if (name == "int" && a.size() == 1 && a[0]->sort != Sort::Bool) return ir::to_int(a[0]);
      if (name == "float" && a.size() == 1 && a[0]->sort != Sort::Bool) return ir::to_real(a[0]);
      if (name == "bool" && a.size() == 1) return ir::truthy(a[0]);
      if (name == "range" && (a.size() == 1 || a.size() == 2))
        return a.size() == 1 ? ir::range(ir::int_lit(0), a[0]) : ir::range(a[0], a[1]);
      return unsupported(n, Sort::Opaque, std::string(name) + "() is not modelled");
    });
  }
};

}  // namespace

Translation translate_python(std::string_view source, const solvers::Signature& sig,
                             const TranslateOptions& options) {
  return translate_source<PythonTranslator>(source, "candidate.py", "python", sig, options);
}

}  // namespace vsynth::stages::constraint
