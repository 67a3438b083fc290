// The spec-test runner: a small script of ours that runs inside the sandbox as
// `python3 -I -S -B spec_runner.py` next to `candidate.py` and `inputs.json`, loads the
// candidate once, calls its entry point on every input in order and reports on fd 3, one JSON
// object per line (spec_test.h judges the results in C++; the script decides nothing):
//   {"event": "start"}                              before the candidate is loaded
//   {"event": "loaded"}                             the module ran and defines the entry point
//   {"event": "call", "i": k}                       before input k (attributes a hang)
//   {"event": "result", "i": k, "args": [...], "value": V}   input k returned V
//   {"event": "raised", "i": k, "args": [...], "error": "ZeroDivisionError: ... at
//            candidate.py:3 (`return a // b`)"}     input k raised (SystemExit included)
//   {"event": "timeout", "i": k, "args": [...]}     input k ran past call_ms of CPU time (SIGPROF
//            raised a private BaseException in it; a candidate that swallows it, or sleeps,
//            runs on to the sandbox's wall limit)
//   {"event": "stopped", "at": k}                   the time budget ran out before input k
//   {"event": "done"}                               every input was called
//   {"event": "fail", "kind": K, "message": ...}    the candidate could not be called at all:
//            K is candidate_syntax, candidate_error (raised while loading) or
//            missing_entry_point
// inputs.json: {"entry_point": str, "budget_ms": int, "call_ms": int, "inputs": [[A, ...], ...]}.
// Arguments A and values V are tagged so that big ints stay exact and bool stays apart from int:
//   {"t": "int", "v": "12345678901234567890"}   {"t": "bool", "v": true}
//   {"t": "list", "v": ["1", "2"]} (a list or tuple of ints)   {"t": "str", "v": "ab"}
//   V only: "v": "?" for an int past 128 bits or a list of more than 256 (not evaluable; keeps
//   the report small)
//   V only: {"t": "other", "type": "str", "repr": "'impossible'"} for anything else
// `args` echoes the input as received, before the call could mutate it, so a result is
// matched to its input by content as well as by index.
#pragma once

#include <string>

namespace vsynth::stages::validation {

// The script: its own code around the shared report helpers (python_harness.h).
const std::string& spec_runner_script();

}  // namespace vsynth::stages::validation
