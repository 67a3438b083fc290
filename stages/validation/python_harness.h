// What both of our sandboxed Python scripts (the test runner, python_runner.h, and the spec
// runner, spec_runner.h) start with: writing one JSON report per line to fd 3, and bounded
// reprs. The script defines `_write`, `_dumps`, `_REPORT_FD` and `_LIMIT` (its repr cap, chars)
// before these.
#pragma once

#include <string>
#include <string_view>

namespace vsynth::stages::validation {

extern const std::string_view kPythonReportHelpers;

// A whole script: `head` (imports and the names above), the helpers, then `body`.
std::string harness_script(std::string_view head, std::string_view body);

}  // namespace vsynth::stages::validation
