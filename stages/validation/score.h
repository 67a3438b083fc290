// Scoring with hidden tests: what the loop bench calls on a final answer. The hidden tests
// (`hidden_tests`, HumanEval's `test`, MBPP's `test_list`) never reach the loop; this is the
// only place besides oracle mode that runs them.
#pragma once

#include <string_view>
#include <vector>

#include "graph/item.h"
#include "stages/validation/checks.h"

namespace vsynth::stages::validation {

// Runs the task's hidden tests against `program` (the whole program, as pieces) and returns
// the tests verdict (oracle = true). Status: pass, fail (with the message), skipped (the task
// has no hidden tests or the language has no test runner), error (infrastructure). Blocks the
// calling thread; thread-safe. `language` overrides the task's. Throws ValidationError for a
// malformed task.
CheckVerdict score_hidden(const graph::Task& task, const std::vector<std::string_view>& program,
                          const Checker& checker, std::string_view language = {});

}  // namespace vsynth::stages::validation
