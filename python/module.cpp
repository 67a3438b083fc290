// The `vsynth` Python module: run pipelines, drive the engine, write decoding hooks in Python.
// docs/python.md is its guide. The engine never runs with the GIL held: Model.generate and
// logits release it around the forward passes, Pipeline.run runs the graph on its own thread,
// and hooks take the GIL back for each call.
#include <pybind11/pybind11.h>

#include "graph/version.h"
#include "python/bindings.h"
#include "stages/python/hook_api.h"

PYBIND11_MODULE(vsynth, m) {
  m.doc() =
      "vsynth: generate-then-verify code synthesis. Pipeline(path).run(tasks) yields result "
      "records; Model(path) tokenizes, generates and scores; subclass DecodingHook to constrain "
      "decoding (Model.generate(hooks=[...]) or `use: hook.python` in a pipeline).";
  // The project's one version (CMakeLists.txt's project(VERSION)), as `vsynth --version` says.
  m.attr("__version__") = vsynth::kVersion;
  vsynth::stages::python::bind_hook_api(m);
  vsynth::python::bind_model(m);
  vsynth::python::bind_pipeline(m);
}
