// The exception type of stages/ast: every message says what went wrong, where (file, cursor,
// byte offset, query offset...) and what would have been valid.
#pragma once

#include <stdexcept>
#include <string>

namespace vsynth::stages::ast {

class AstError : public std::runtime_error {
 public:
  explicit AstError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace vsynth::stages::ast
