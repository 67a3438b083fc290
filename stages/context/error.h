// The exception type of stages/context: every message says what went wrong, where (task,
// field, file, parameter) and what would have been valid.
#pragma once

#include <stdexcept>
#include <string>

namespace vsynth::stages::context {

class ContextError : public std::runtime_error {
 public:
  explicit ContextError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace vsynth::stages::context
