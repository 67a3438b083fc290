// The Python test runner: a small script of ours that runs inside the sandbox as
// `python3 -I -S -B runner.py` next to `candidate.py` and `tests.json`, executes the tests
// against the candidate and reports on fd 3, one JSON object per line:
//   {"event": "start"}                       before the candidate is loaded
//   {"event": "loaded"}                      the candidate's module ran
//   {"event": "test", "name": ..., "source": ...}   before each test (attributes a timeout)
//   {"event": "pass", "tests": N}            every test passed (N run)
//   {"event": "fail", "kind": K, "name": ..., "message": ...}   the first failure
// K is one of: candidate_syntax (the candidate does not compile), candidate_error (it raised
// while loading), exit (it called exit()), missing_entry_point, assertion (a test's assertion
// failed; the message gives the assertion's source and the values of its non-literal sides),
// exception (the candidate raised during a test), test_error (the test itself is broken).
//
// tests.json: {"kind": "statements" | "script" | "doctest", "entry_point": str or null,
//              "statements": [str...] | "script": str | "prompt": str}
//   statements  each string runs in turn in the candidate's namespace (usually an assert);
//   script      runs once in the candidate's namespace; then check(<entry_point>) if the script
//               defines a top-level `check` (HumanEval), then each top-level test_* function;
//   doctest     the `>>>` examples of `prompt`, compared as doctest does (whitespace
//               normalised), stopping at the first failure.
// Asserts in the tests are rewritten (ast) so a failure reports `f(2) = 5` for
// `assert f(2) == 6`. A candidate can still forge a report (it runs in the same interpreter):
// the sandbox protects the host, not the verdict, from a hostile candidate.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vsynth::stages::validation {

// The script: its own code around the shared report helpers (python_harness.h).
const std::string& python_runner_script();

// tests.json for the runner.
std::string python_tests_json(std::string_view kind, std::string_view entry_point,
                              const std::vector<std::string_view>& statements,
                              std::string_view script_or_prompt);

}  // namespace vsynth::stages::validation
