// The C recogniser's steps (c.cpp); recognizer.h is the interface.
#pragma once

#include "stages/grammar/recognizer.h"

namespace vsynth::stages::grammar::c {

bool feed(CState& s, unsigned char c);  // false: no valid program starts with the text
bool complete(CState s);                // the text is a whole translation unit

}  // namespace vsynth::stages::grammar::c
