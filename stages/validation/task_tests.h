// Which tests a task carries, read from the two task schemas validate.async accepts.
//
// Our schema (one JSON object per line):
//   id             string
//   language       python | c | any tree-sitter language name (syntax only); default: from
//                  `path`'s extension, else python
//   prompt         optional: the code to complete (its `>>>` examples are visible tests when
//                  `tests` is absent)
//   entry_point    optional: the function the tests call (script tests' check(candidate))
//   tests          visible tests, the loop may run them: a list of statements (Python: usually
//                  asserts; C: statements of main's body, usually assert(...);) run one by one,
//                  or one string: a test script (Python: runs in the candidate's namespace, then
//                  check(<entry_point>) if it defines check, then its test_* functions; C: a
//                  translation unit defining `int main(void)` that returns 0 on success)
//   hidden_tests   same shapes; used only to score (oracle mode, score_hidden), never seen by
//                  the loop
//   spec           optional, for constrain.z3
// HumanEval / MBPP style: task_id, prompt, entry_point, test (a script defining
// check(candidate)), canonical_solution: `test` is hidden; the visible tests are the `>>>`
// examples of the prompt's docstrings. MBPP's `test_list` (a list of asserts) is hidden too.
//
// Every test text is a view into the task's JSON (no copies).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph/item.h"

namespace vsynth::stages::validation {

enum class TestsKind { None, Statements, Script, Doctest };
const char* to_string(TestsKind k);

struct TestSuite {
  TestsKind kind = TestsKind::None;
  std::vector<std::string_view> statements;  // Statements
  std::string_view text;                     // Script: the script; Doctest: the prompt
  std::string origin;                        // the task field it came from ("tests", "test"...)

  bool empty() const { return kind == TestsKind::None; }
};

struct TaskTests {
  std::string language;  // canonical: python, c, cpp, go, ...
  std::string_view entry_point;
  std::string_view prompt;
  TestSuite visible;
  TestSuite hidden;
};

// Reads the task's tests. `language` overrides the task's (empty: detect). Throws
// ValidationError naming the task and the field when a field has the wrong shape (e.g. `tests`
// is a number) or the language is unknown, listing the valid choices.
TaskTests read_task_tests(const graph::Task& task, std::string_view language = {});

// True when `prompt` holds a doctest example (a line whose first non-blank text is `>>>`).
bool has_doctest_examples(std::string_view prompt);

}  // namespace vsynth::stages::validation
