// The part of a translator that does not depend on the language: tree-sitter helpers, recording
// obligations with their statement and line, stopping at an unsupported construct, and
// unrolling a loop to the bound with break/continue.
//
// A language's translator (translate_python.cpp, translate_c.cpp) derives from Executor and
// supplies the statements and expressions of its grammar.
#pragma once

#include <tree_sitter/api.h>

#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "solvers/signature.h"
#include "stages/constraint/symbolic.h"
#include "stages/constraint/translation.h"

namespace vsynth::stages::constraint {

// Thrown inside a translator to end the translation at a construct outside the subset.
struct StopTranslation {
  std::string why;  // "while loop at line 7 is not supported"
};
// Thrown in partial mode at a loop that may still grow: the translation ends quietly there.
struct OpenLoop {};

class Executor {
 public:
  Executor(std::string_view source, const solvers::Signature& sig, const TranslateOptions& opt)
      : src_(source), sig_(sig), opt_(opt) {}

 protected:
  static TSNode field(TSNode n, const char* name) {
    return ts_node_child_by_field_name(n, name, static_cast<uint32_t>(std::strlen(name)));
  }
  static std::string_view type(TSNode n) { return ts_node_type(n); }
  std::string_view text(TSNode n) const {
    return src_.substr(ts_node_start_byte(n), ts_node_end_byte(n) - ts_node_start_byte(n));
  }
  static uint32_t line(TSNode n) { return ts_node_start_point(n).row + 1; }
  // The node's text cut to one short line for messages.
  std::string snippet(TSNode n) const;

  [[noreturn]] void stop(TSNode n, const std::string& what) const;
  // Where a statement is, for messages: "line 5" or "line 5 (iteration 2 of the loop at line 4)".
  std::string where(TSNode stmt) const;

  // Records an obligation for the statement `stmt` reached in state `s`.
  void add(ObligationKind kind, const State& s, const solvers::Expr& expr, TSNode stmt);
  // A Defined obligation when `e` can raise (division, modulo, indexing, min/max of a list).
  void require_defined(const State& s, const solvers::Expr& e, TSNode stmt);

  // Loops. unroll() runs `body` up to the bound: iteration k runs in the part of `s` where
  // `condition(state, k)` holds; `enter(state, k)` binds the loop variable, `step(state)` runs
  // after the body and after `continue` (C's update expression). After the bound, a Bound
  // obligation says the loop condition is false by then, and only that part goes on.
  void unroll(State& s, TSNode loop, const std::function<solvers::Expr(State&, int)>& condition,
              const std::function<void(State&, int)>& enter,
              const std::function<void(State&)>& body, const std::function<void(State&)>& step);
  void do_break(State& s, TSNode stmt);
  void do_continue(State& s, TSNode stmt);
  bool is_open(TSNode n) const { return opt_.partial && ts_node_end_byte(n) > opt_.open_end; }

  // merge() (symbolic.h), then large merged values and conditions get fresh names: `_a3`
  // stands for a path condition, `_v4_best` for a value, each defined once in defs_ (a value's
  // definition only where its state is reached). Without names an if inside an unrolled loop
  // doubles the terms each iteration; with them they grow linearly.
  State join(std::vector<State> states, const std::string& where);

  std::string_view src_;
  const solvers::Signature& sig_;
  const TranslateOptions& opt_;
  Translation out_;

 private:
  struct Loop {
    uint32_t line = 0;
    int iteration = 0;
    std::vector<State> breaks, continues;
  };
  std::vector<Loop> loops_;
  // Definitions of the fresh names join() introduced, in order; every obligation's path
  // condition starts with them.
  std::vector<solvers::Expr> defs_;
  int fresh_ = 0;
};

}  // namespace vsynth::stages::constraint
