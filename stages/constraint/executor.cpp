#include "stages/constraint/executor.h"

namespace vsynth::stages::constraint {

std::size_t tree_size(const Expr& e, std::size_t cap) {
  if (!e) return 0;
  std::size_t n = 0;
  std::vector<const solvers::Node*> stack{e.get()};
  while (!stack.empty() && n < cap) {
    const solvers::Node* x = stack.back();
    stack.pop_back();
    ++n;
    for (const Expr& a : x->args) stack.push_back(a.get());
  }
  return n;
}

BinaryBuilder find_builder(std::span<const NamedBuilder> table, std::string_view op) {
  for (const NamedBuilder& b : table) {
    if (b.op == op) return b.build;
  }
  return nullptr;
}

BinaryBuilder comparison_builder(std::string_view op) {
  static constexpr NamedBuilder kComparisons[] = {
      {"<", ir::lt},
      {"<=", ir::le},
      {">", ir::gt},
      {">=", ir::ge},
      {"==", ir::eq},
      {"!=", ir::ne},
      {"in", ir::in},
      {"not in", [](Expr a, Expr b) { return ir::not_(ir::in(std::move(a), std::move(b))); }},
  };
  return find_builder(kComparisons, op);
}

Translation Executor::run(TSNode root) {
  TSNode fn{};
  const uint32_t n = ts_node_named_child_count(root);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode f = wanted_function(ts_node_named_child(root, i));
    if (!ts_node_is_null(f)) fn = f;
  }
  if (ts_node_is_null(fn)) {
    out_.unknown = "no function `" + sig_.function + "` in the code";
    return std::move(out_);
  }
  out_.function_found = true;
  try {
    translate_function(fn);
  } catch (const StopTranslation& st) {
    out_.unknown = st.why;
  } catch (const OpenLoop&) {
    // partial program: the rest may still change
  }
  return std::move(out_);
}

std::string Executor::snippet(TSNode n) const {
  std::string s(text(n));
  if (const auto nl = s.find('\n'); nl != std::string::npos) s = s.substr(0, nl) + " ...";
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

void Executor::stop(TSNode n, const std::string& what) const {
  throw StopTranslation{what + " at line " + std::to_string(line(n)) + " (`" + snippet(n) +
                        "`) is outside the supported subset"};
}

void Executor::check_param_count(std::size_t in_code) const {
  if (in_code != sig_.params.size()) {
    throw StopTranslation{"`" + sig_.function + "` takes " + std::to_string(in_code) +
                          " parameters in the code but " + std::to_string(sig_.params.size()) +
                          " in the spec's signature"};
  }
}

std::string Executor::where(TSNode stmt) const {
  std::string w = "line " + std::to_string(line(stmt));
  if (!loops_.empty()) {
    w += " (iteration " + std::to_string(loops_.back().iteration + 1) + " of the loop at line " +
         std::to_string(loops_.back().line) + ")";
  }
  return w;
}

void Executor::add(ObligationKind kind, const State& s, const Expr& expr, TSNode stmt) {
  if (tree_size(s.alive, opt_.max_expr_nodes) + tree_size(expr, opt_.max_expr_nodes) >=
      opt_.max_expr_nodes) {
    throw StopTranslation{"the path condition and value at line " + std::to_string(line(stmt)) +
                          " exceed " + std::to_string(opt_.max_expr_nodes) +
                          " IR nodes (too many unrolled branches)"};
  }
  Obligation o;
  o.kind = kind;
  o.condition = s.alive;
  if (!defs_.empty()) {
    std::vector<Expr> c = defs_;
    if (s.alive) c.push_back(s.alive);
    o.condition = ir::and_(std::move(c));
  }
  o.expr = expr;
  o.line = line(stmt);
  o.stmt_start = ts_node_start_byte(stmt);
  o.where = where(stmt);
  out_.obligations.push_back(std::move(o));
}

void Executor::require_defined(const State& s, const Expr& e, TSNode stmt) {
  if (!e || e->sort == solvers::Sort::Opaque || !can_raise(e)) return;
  add(ObligationKind::Defined, s, defined(e), stmt);
}

void Executor::fall_off_end(const State& s, TSNode at, const std::string& shown,
                            const std::string& why, const std::string& where) {
  if (sig_.result) {
    add(ObligationKind::Return, s, ir::unsupported(*sig_.result, shown, why), at);
  } else {
    add(ObligationKind::Return, s, nullptr, at);
  }
  out_.obligations.back().where = where;
}

bool Executor::exec_shared(TSNode st, State& s) {
  const std::string_view t = type(st);
  if (t == "return_statement") {
    exec_return(st, s);
  } else if (t == "if_statement") {
    exec_if(st, s);
  } else if (t == "for_statement") {
    exec_for(st, s);
  } else if (t == "break_statement") {
    do_break(s, st);
  } else if (t == "continue_statement") {
    do_continue(s, st);
  } else {
    return false;
  }
  return true;
}

void Executor::unroll(State& s, TSNode loop, const std::function<Expr(State&, int)>& condition,
                      const std::function<void(State&, int)>& enter,
                      const std::function<void(State&)>& body,
                      const std::function<void(State&)>& step) {
  const int bound = opt_.unroll_bound;
  std::vector<State> exits;
  State cur = std::move(s);
  for (int k = 0; k < bound && !cur.dead; ++k) {
    const Expr c = condition(cur, k);
    const std::optional<bool> known = const_bool(c);
    if (known == false) {  // range(3) after 3 iterations
      exits.push_back(std::move(cur));
      cur = State{};
      cur.dead = true;
      break;
    }
    State in = known ? cur : branch(cur, c);
    if (!known) exits.push_back(branch(cur, ir::not_(c)));
    enter(in, k);
    loops_.push_back({line(loop), k, {}, {}});
    try {
      body(in);
    } catch (...) {
      loops_.pop_back();
      throw;
    }
    Loop done = std::move(loops_.back());
    loops_.pop_back();
    for (State& b : done.breaks) exits.push_back(std::move(b));
    std::vector<State> next{std::move(in)};
    for (State& c2 : done.continues) next.push_back(std::move(c2));
    cur = join(std::move(next), "after iteration " + std::to_string(k + 1) +
                                    " of the loop at line " + std::to_string(line(loop)));
    if (!cur.dead) step(cur);
  }
  const Expr more = cur.dead ? nullptr : condition(cur, bound);
  if (!cur.dead && const_bool(more) != false) {
    add(ObligationKind::Bound, cur, ir::not_(more), loop);
    out_.obligations.back().where = "the loop at line " + std::to_string(line(loop)) +
                                    " runs at most " + std::to_string(bound) +
                                    " iterations (unroll bound)";
    exits.push_back(branch(cur, ir::not_(more)));
  } else if (!cur.dead) {
    exits.push_back(std::move(cur));
  }
  s = join(std::move(exits), "after the loop at line " + std::to_string(line(loop)));
}

State Executor::join(std::vector<State> states, const std::string& where) {
  // Terms above this many nodes get a name (a few comparisons and an if-else are below it).
  constexpr std::size_t kNameAbove = 24;
  State m = merge(std::move(states), where);
  if (m.dead) return m;
  if (m.alive && tree_size(m.alive, kNameAbove + 1) > kNameAbove) {
    const Expr a = ir::var("_a" + std::to_string(++fresh_), solvers::Sort::Bool);
    defs_.push_back(ir::eq(a, m.alive));
    m.alive = a;
  }
  for (auto& [name, v] : m.env) {
    const solvers::Sort sort = v->sort;
    if (sort != solvers::Sort::Int && sort != solvers::Sort::Real && sort != solvers::Sort::Bool)
      continue;  // a fresh list would be bounded by max_seq_len; Opaque cannot be named
    if (v->op == solvers::Op::Var || tree_size(v, kNameAbove + 1) <= kNameAbove) continue;
    const Expr x = ir::var("_v" + std::to_string(++fresh_) + "_" + name, sort);
    // Only where the state is reached: elsewhere the value may raise (xs[k] past the end).
    const Expr def = ir::eq(x, v);
    defs_.push_back(m.alive ? ir::or_({ir::not_(m.alive), def}) : def);
    v = x;
  }
  return m;
}

void Executor::do_break(State& s, TSNode stmt) {
  if (loops_.empty()) stop(stmt, "`break` outside a loop");
  loops_.back().breaks.push_back(s);
  s.dead = true;
}

void Executor::do_continue(State& s, TSNode stmt) {
  if (loops_.empty()) stop(stmt, "`continue` outside a loop");
  loops_.back().continues.push_back(s);
  s.dead = true;
}

}  // namespace vsynth::stages::constraint
