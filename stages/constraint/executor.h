// The part of a translator that does not depend on the language: parsing the source, finding
// the function, tree-sitter helpers, the statements both grammars share (return, if, for,
// break, continue), recording obligations with their statement and line, stopping at an
// unsupported construct, and unrolling a loop to the bound with break/continue.
//
// A language's translator (translate_python.cpp, translate_c.cpp) derives from Executor and
// supplies the statements and expressions of its grammar.
#pragma once

#include <tree_sitter/api.h>

#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "solvers/signature.h"
#include "stages/ast/parsed_file.h"
#include "stages/constraint/symbolic.h"
#include "stages/constraint/translation.h"

namespace vsynth::stages::constraint {

// The translators' vocabulary (this header is theirs only).
namespace ir = solvers::ir;
using solvers::Expr;
using solvers::Op;
using solvers::Sort;

// An IR builder of a binary operator, looked up by the operator's spelling.
using BinaryBuilder = Expr (*)(Expr, Expr);
struct NamedBuilder {
  std::string_view op;
  BinaryBuilder build;
};
// The builder `table` holds for `op`; null when it holds none.
BinaryBuilder find_builder(std::span<const NamedBuilder> table, std::string_view op);
// The comparisons: < <= > >= == != and Python's `in`, `not in`.
BinaryBuilder comparison_builder(std::string_view op);

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
  virtual ~Executor() = default;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Translates the last top-level function that wanted_function() accepts: runs
  // translate_function() on it, and turns a StopTranslation into `unknown` (an
  // OpenLoop ends it quietly).
  Translation run(TSNode root);

 protected:
  // The language's part. `top` is a top-level node: the function definition it holds when that
  // is the function named sig_.function, else a null node.
  virtual TSNode wanted_function(TSNode top) const = 0;
  // Binds the parameters and executes the body of `fn`, raising its obligations.
  virtual void translate_function(TSNode fn) = 0;
  virtual void exec_return(TSNode st, State& s) = 0;
  virtual void exec_if(TSNode st, State& s) = 0;
  virtual void exec_for(TSNode st, State& s) = 0;

  // Null-safe: an absent field gives a null node, whose field is null and whose type is "".
  static TSNode field(TSNode n, const char* name) {
    if (ts_node_is_null(n)) return n;
    return ts_node_child_by_field_name(n, name, static_cast<uint32_t>(std::strlen(name)));
  }
  static std::string_view type(TSNode n) {
    if (ts_node_is_null(n)) return {};
    return ts_node_type(n);
  }
  std::string_view text(TSNode n) const {
    return src_.substr(ts_node_start_byte(n), ts_node_end_byte(n) - ts_node_start_byte(n));
  }
  static uint32_t line(TSNode n) { return ts_node_start_point(n).row + 1; }
  // The node's text cut to one short line for messages.
  std::string snippet(TSNode n) const;

  [[noreturn]] void stop(TSNode n, const std::string& what) const;
  // Stops at a statement the language's translator does not know: "a `<node type>`".
  [[noreturn]] void stop_statement(TSNode st) const {
    stop(st, "a `" + std::string(type(st)) + "`");
  }
  // Stops unless the code's function takes as many parameters as the spec's signature.
  void check_param_count(std::size_t in_code) const;
  // Where a statement is, for messages: "line 5" or "line 5 (iteration 2 of the loop at line 4)".
  std::string where(TSNode stmt) const;

  // Records an obligation for the statement `stmt` reached in state `s`.
  void add(ObligationKind kind, const State& s, const solvers::Expr& expr, TSNode stmt);
  // A Defined obligation when `e` can raise (division, modulo, indexing, min/max of a list).
  void require_defined(const State& s, const solvers::Expr& e, TSNode stmt);
  // The Return obligation of reaching the end of the function at `at` without a return: none
  // needed without a result; else the result is an unsupported value shown as `shown` saying
  // `why`. `where` replaces the obligation's place.
  void fall_off_end(const State& s, TSNode at, const std::string& shown, const std::string& why,
                    const std::string& where);

  // Statements. Runs `exec(statement)` on each named child of `block` but comments, in order,
  // while `s` is alive.
  template <class F>
  void for_each_statement(TSNode block, const State& s, F&& exec) {
    const uint32_t n = ts_node_named_child_count(block);
    for (uint32_t i = 0; i < n && !s.dead; ++i) {
      TSNode st = ts_node_named_child(block, i);
      if (type(st) == "comment") continue;
      exec(st);
    }
  }
  // Executes the statements both grammars spell alike (return, if, for, break, continue);
  // false for any other.
  bool exec_shared(TSNode st, State& s);

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

// Parses `source` as `language` (file name `path` in messages) and runs a T (an Executor) on
// it. A source with syntax errors translates to unknown with function_found false.
template <class T>
Translation translate_source(std::string_view source, const char* path, const char* language,
                             const solvers::Signature& sig, const TranslateOptions& options) {
  ast::ParsedFile file(path, ast::Language::named(language), std::string(source));
  if (file.has_errors()) {
    Translation t;
    t.unknown = "the code has syntax errors";
    return t;
  }
  T tr(file.source(), sig, options);
  return tr.run(file.root());
}

}  // namespace vsynth::stages::constraint
