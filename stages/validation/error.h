// The exception type of stages/validation: every message says what went wrong, where (the
// task, the field, the file, the sandbox step) and what would have been valid.
#pragma once

#include <stdexcept>
#include <string>

namespace vsynth::stages::validation {

class ValidationError : public std::runtime_error {
 public:
  explicit ValidationError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace vsynth::stages::validation
