// The contract of a task: its `spec` (requires / ensures as Python-style expressions) over its
// signature, ready for solvers::ContractChecker.
//
// Where the signature comes from: the task's `signature` (Python: the `def` line; C: the
// declaration), else the line of the task's `prompt` that declares the entry point. A C
// signature's integer parameters also get requires saying they hold values of their C types
// (an `int` lies in [-2^31, 2^31 - 1]). Specs are read with Python semantics in both languages
// (see examples/tasks/README.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "graph/item.h"
#include "solvers/function_contract.h"

namespace vsynth::stages::constraint {

struct TaskSpec {
  std::string language;  // "python" or "c"
  solvers::FunctionContract contract;
  std::string signature_line;  // as read, for messages
};

// The task's language: its `language`, else `fallback` when not empty, else python.
std::string task_language(const graph::Task& task, std::string_view fallback);

// nullopt when the task has no `spec` (or an empty one). Throws ConstraintError naming the task
// and the field for a spec that is malformed, that mentions unknown names, or whose signature
// cannot be found or parsed; and for a language other than python and c.
std::optional<TaskSpec> task_spec(const graph::Task& task, std::string_view language);

}  // namespace vsynth::stages::constraint
