// Exceptions thrown by solvers/: every message says what went wrong, where, and what is valid.
#pragma once

#include <stdexcept>
#include <string>

namespace vsynth::solvers {

// Misuse of the IR or the backend: a sort mismatch in a builder, popping an empty scope stack,
// asking for a model after an unsat check. Z3 API errors are rethrown as this type too.
class SolverError : public std::runtime_error {
 public:
  explicit SolverError(const std::string& what) : std::runtime_error(what) {}
};

// A spec (requires/ensures text or a signature line) that does not parse or does not type-check.
// what() is the full multi-line message with the caret line; line/column are 1-based.
class SpecError : public SolverError {
 public:
  SpecError(const std::string& what, int line, int column)
      : SolverError(what), line_(line), column_(column) {}
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_;
  int column_;
};

}  // namespace vsynth::solvers
