// The Python 3 recogniser's steps (python.cpp); recognizer.h is the interface.
#pragma once

#include "stages/grammar/recognizer.h"

namespace vsynth::stages::grammar::python {

bool feed(PyState& s, unsigned char c);  // false: no valid program starts with the text
bool complete(PyState s);                // the text is a whole program

}  // namespace vsynth::stages::grammar::python
