#include "stages/python/interpreter.h"

#include <pybind11/embed.h>

#include <mutex>
#include <stdexcept>

#include "stages/python/hook_api.h"

namespace vsynth::stages::python {

namespace py = pybind11;

namespace {

std::once_flag g_started;
bool g_embedded = false;

// Starts the interpreter, registers the hook API as `vsynth`, and hands the GIL back.
void start_embedded() {
  py::initialize_interpreter(/*init_signal_handlers=*/false);
  {
    py::module_ m = py::reinterpret_steal<py::module_>(PyModule_New("vsynth"));
    if (!m) throw py::error_already_set();
    m.attr("__doc__") =
        "vsynth's hook API inside `vsynth run` (DecodingHook, Verdict, DecodeView, TokenMask); "
        "Pipeline and Model come with the installed module (pip install .)";
    bind_hook_api(m);
    py::module_::import("sys").attr("modules")["vsynth"] = m;
  }
  // Every later user takes the GIL with gil_scoped_acquire; this thread's state is kept (never
  // restored: the interpreter is never finalized, see the header).
  PyEval_SaveThread();
  g_embedded = true;
}

}  // namespace

void ensure_interpreter() {
  std::call_once(g_started, [] {
    if (Py_IsInitialized()) return;  // a Python host: its interpreter, its GIL rules
    try {
      start_embedded();
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("cannot start the embedded Python interpreter: ") +
                               e.what());
    }
  });
}

bool embedded_interpreter() {
  return g_embedded;
}

}  // namespace vsynth::stages::python
