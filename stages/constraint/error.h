// The exception type of stages/constraint: every message says what went wrong, where (the task,
// the field, the stage) and what would have been valid.
#pragma once

#include <stdexcept>
#include <string>

namespace vsynth::stages::constraint {

class ConstraintError : public std::runtime_error {
 public:
  explicit ConstraintError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace vsynth::stages::constraint
