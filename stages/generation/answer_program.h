// From a model's answer to the program a validator runs.
//
// extract_code: the code in a chat answer. The first fenced block (``` or ~~~) whose info
// string names the language (python also as py/python3, cpp as c++/cc...), else the first
// fenced block of any language, else the whole answer. A fence the model never closed (it ran
// out of tokens) extends to the end of the answer.
//
// assemble_program: the whole program for a candidate.
//   complete mode: prefix + completion + suffix (the file as it would be after accepting it);
//   instruct mode: the extracted code; when the task gave code to complete (a HumanEval
//   prompt) and the answer does not define the entry point, the answer is taken as the body's
//   continuation and appended to that code; for Python, import lines of the task's code that
//   the answer lacks are put in front (models often drop `from typing import List`).
#pragma once

#include <string>
#include <string_view>

#include "stages/generation/prompt.h"

namespace vsynth::stages::generation {

std::string_view extract_code(std::string_view answer, std::string_view language);

std::string assemble_program(const PromptParts& parts, std::string_view completion);

}  // namespace vsynth::stages::generation
