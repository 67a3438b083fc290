// The C test harness: the files that compile a candidate with its tests and run them inside
// the sandbox, and the reading of a failed assert() from the program's stderr.
//
// test_main.c includes the standard headers examples/tasks/README.md lists (assert limits
// stdbool stddef stdint stdio stdlib string), then candidate.c with its own main renamed (so a
// whole program can be tested), then either runs the suite's tests one by one in main (an
// expression test becomes assert(<test>); each under `#line 1 "test N"`, so glibc's assertion
// message names the test) or includes tests.c with its main renamed and calls it.
// It reports on fd 3 as the Python runner does ({"event": "start" | "test" | "pass"}).
// NDEBUG is undefined before <assert.h>, so a candidate cannot switch the asserts off.
#pragma once

#include <string>
#include <string_view>

#include "stages/validation/task_tests.h"

namespace vsynth::stages::validation {

// The headers a C candidate is compiled after, in the compile check (cc -include) and the
// tests alike (examples/tasks/README.md).
inline constexpr std::string_view kCStandardHeaders[] = {
    "assert.h", "limits.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "string.h"};

// True when a C test is an expression (examples/tasks: `clamp(5, 0, 3) == 3`), which the
// harness wraps as assert(<test>); a test ending in ';' or '}' is a statement, used as is.
bool is_c_expression(std::string_view test);

// test_main.c for a Statements or Script suite.
std::string c_test_main(const TestSuite& suite);

// run.sh: compiles test_main.c with `cc` (-std=gnu11 -O0), reports {"event":"compiled"} on
// fd 3 and runs the program; exits 98 when compiling fails.
std::string c_run_script(std::string_view cc);

// "assertion failed: add(1, 2) == 4 (test 2)" from glibc's "prog: test 2:1: main: Assertion
// `add(1, 2) == 4' failed.", or "" when stderr holds no such line.
std::string c_assertion_message(std::string_view stderr_text);

}  // namespace vsynth::stages::validation
