// Where validate.async finds the programs to check, as views (never copies):
//   1. the `candidates` facet of generate.llm (stages/facets/candidates.h): each
//      candidate's `code`, the whole program, a view into the item's arena;
//   2. else the task itself, for pipelines that check given code (scoring a file of samples):
//      `candidate` (a whole program), else `completion` appended to `prompt` (the HumanEval
//      samples format), else `canonical_solution` appended to `prompt` (HumanEval's reference,
//      handy to check a task file's tests).
// The program is the concatenation of its pieces; the sandbox writes it once into a memfd.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "graph/item.h"

namespace vsynth::stages::validation {

struct Program {
  std::vector<std::string_view> pieces;  // the file is their concatenation
  std::size_t index = 0;                 // the candidate's position
  std::string source;                    // where it came from: "candidates[0]", "task.completion"

  std::size_t size() const;
};

// The item's programs, in order; empty when it has none (the message of a caller's error
// should then name the places looked at: kWhereCandidatesComeFrom).
std::vector<Program> programs_of(const graph::Item& item);

inline constexpr std::string_view kWhereCandidatesComeFrom =
    "the `candidates` facet (generate.llm) or the task fields `candidate`, `completion` (with "
    "`prompt`) or `canonical_solution` (with `prompt`)";

}  // namespace vsynth::stages::validation
