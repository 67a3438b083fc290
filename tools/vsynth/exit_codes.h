// Process exit codes of `vsynth`; documented in README.md and `vsynth --help`.
#pragma once

namespace vsynth::cli {
inline constexpr int kExitOk = 0;             // ran to the end; every task has a result record
inline constexpr int kExitUsage = 2;          // bad command line, pipeline file or input file
inline constexpr int kExitRuntime = 3;        // a resource failed to build, I/O failed, fail_fast
inline constexpr int kExitIncomplete = 4;     // vsynth merge: tasks of --input have no record
inline constexpr int kExitInterrupted = 130;  // Ctrl-C, SIGTERM: in-flight items left unfinished
}  // namespace vsynth::cli
