// IR -> Z3 terms, with Python's semantics (internal to solvers/: includes z3++.h).
//
// An IR expression becomes a value term plus "obligations": the conditions under which Python
// evaluates it without raising (divisor != 0, index in range, min() of a non-empty list), each
// under the guard that short-circuit evaluation puts on it. The expression evaluates normally
// iff every obligation holds.
//
// Sequences are (length, elements): a variable is an Int->Int array plus an Int length bounded
// by the session's max_seq_len; a list literal is its elements; range(a, b) is a + k. Everything
// that ranges over a sequence (sum, min, all, ==, in) is unrolled over the static maximum length,
// so it is exact for that bound. all/any over a range() without a static bound become
// quantifiers.
//
// Unsupported nodes (and constructs the translator cannot express exactly) are replaced by fresh
// unknowns; abstractions() lists them so that the session can refuse to trust a model built on
// them (an over-approximation keeps unsat sound, not sat).
#pragma once

#include <z3++.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "solvers/ir.h"

namespace vsynth::solvers::detail {

struct SeqVal {
  explicit SeqVal(z3::expr length) : len(std::move(length)) {}

  z3::expr len;
  bool bounded = true;                          // max_len is a true upper bound of len
  unsigned max_len = 0;                         // elements 0..max_len-1 can exist (bounded only)
  std::function<z3::expr(unsigned)> elem;       // element k (k < max_len), bounded only
  std::function<z3::expr(const z3::expr&)> at;  // element at a symbolic index 0 <= i < len
  std::optional<z3::expr> lo, hi;               // for range(lo, hi): the interval
};

struct Val {
  Sort sort = Sort::Bool;
  std::optional<z3::expr> scalar;  // Bool/Int/Real
  std::shared_ptr<SeqVal> seq;     // IntSeq

  const z3::expr& z() const { return *scalar; }
};

// Where free variables and fresh unknowns come from (the session owns the declarations).
class VarSource {
 public:
  virtual ~VarSource() = default;
  virtual Val variable(const std::string& name, Sort sort) = 0;
  // A fresh constant of a scalar sort or a fresh bounded sequence (for abstractions).
  virtual Val fresh(Sort sort, const std::string& hint) = 0;
  virtual unsigned max_seq_len() const = 0;
};

class Translator {
 public:
  struct Obligation {
    z3::expr holds;     // guard -> requirement
    std::string error;  // Python's exception text, with the offending expression
  };

  Translator(z3::context& ctx, VarSource& vars) : ctx_(ctx), vars_(vars) {}

  Val value(const Expr& e);
  // A let-binding seen by later value() calls (bindings shadow variables of the same name).
  void bind(const std::string& name, Val v) { env_.emplace_back(name, std::move(v)); }

  // Conjunction of all obligations recorded so far.
  z3::expr defined() const;
  const std::vector<Obligation>& obligations() const { return obligations_; }
  const std::vector<std::string>& abstractions() const { return abstractions_; }

 private:
  Val scalar(Sort s, const z3::expr& e) const { return Val{s, e, nullptr}; }
  void oblige(const z3::expr& requirement, std::string error);
  void abstract(std::string why) { abstractions_.push_back(std::move(why)); }
  Val abstracted(Sort s, const std::string& why);
  template <class F>
  auto guarded(const z3::expr& g, F&& f);

  Val lookup(const Expr& e);
  Val sequence(const Expr& e);
  z3::expr floor_div_mod(const Expr& e, const z3::expr& a, const z3::expr& b, bool want_div);
  Val seq_compare_eq(const Val& a, const Val& b, const Expr& e);
  Val quantify(const Expr& e);
  Val sum_of(const Expr& e);
  z3::expr raises_first(bool is_all, const z3::expr& i, const z3::expr& lo,
                        const z3::expr& in_range, const z3::expr& body,
                        const std::vector<Obligation>& inner);
  std::string inner_error(const Expr& e, const std::vector<Obligation>& inner) const;
  std::optional<int64_t> seq_bound(const Expr& seq);

  z3::context& ctx_;
  VarSource& vars_;
  std::optional<z3::expr> guard_;
  std::vector<std::pair<std::string, Val>> env_;
  std::vector<Obligation> obligations_;
  std::vector<std::string> abstractions_;
  unsigned quantifiers_ = 0;  // names bound constants uniquely within one translation
};

// Exact rational text Z3 accepts ("-125/1000") for a Python float literal ("-1.25e-1").
std::string rational_text(const std::string& python_float);

}  // namespace vsynth::solvers::detail
