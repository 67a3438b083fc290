// The Python interpreter hook.python runs in: the host's when vsynth was imported by Python
// (the `vsynth` module: Pipeline(...) builds the resource inside a Python process), else one
// embedded into this process on first use (`vsynth run`, `vsynth serve`, tests).
//
// The embedded interpreter is started once and never finalized: extension modules (numpy among
// them) do not support a second initialization, and the hooks' objects may be dropped by worker
// threads until the process exits. It is started without Python's signal handlers (the CLI's
// own SIGINT handling stays in charge) and the starting thread gives up the GIL at once, so
// every caller takes it with pybind11::gil_scoped_acquire, as in the host case.
//
// In the embedded case `import vsynth` inside a hook's module finds a module holding the hook
// API (DecodingHook, Verdict, DecodeView, TokenMask: hook_api.h), registered in sys.modules
// before any user code runs; in the host case it is the real module, which holds the same types.
#pragma once

namespace vsynth::stages::python {

// Makes sure an interpreter is running (starting the embedded one when none is). Thread-safe;
// the caller must not hold the GIL when this starts the interpreter (it never does on first
// use: no interpreter, no GIL). Throws std::runtime_error when Python cannot start.
void ensure_interpreter();

// True when this process's interpreter was started by ensure_interpreter() (no Python host).
bool embedded_interpreter();

}  // namespace vsynth::stages::python
