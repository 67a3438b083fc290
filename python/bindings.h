// The parts of the `vsynth` Python module (module.cpp puts them together).
#pragma once

#include <pybind11/pybind11.h>

namespace vsynth::python {

void bind_model(pybind11::module_& m);     // Model: tokenize, detokenize, generate, logits
void bind_pipeline(pybind11::module_& m);  // Pipeline: run(tasks) -> result records

}  // namespace vsynth::python
