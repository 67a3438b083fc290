// Multiple-choice knapsack: from each group pick at most one option so that the total cost
// stays within a capacity and the total value is the largest possible. This is how
// context.prune chooses each unit's form (none, name, signature, full): exactly, by dynamic
// programming over the budget, not first-fit by priority.
//
// Costs are integers (tokens). Capacities above `resolution` are solved on a coarser grid:
// costs are rounded *up* to multiples of ceil(capacity / resolution), so a solution never
// exceeds the real capacity, at a loss of at most one grid step per chosen option.
// Time O(options x resolution), memory O(groups x resolution) bytes.
#pragma once

#include <cstdint>
#include <vector>

namespace vsynth::stages::context {

struct Option {
  uint32_t cost = 0;  // tokens; 0 counts as 1
  double value = 0;   // options with value <= 0 are never taken
};

struct KnapsackResult {
  std::vector<int> choice;  // per group: index of the chosen option, -1 for none
  double value = 0;
  uint64_t cost = 0;  // real (unrounded) cost of the chosen options
};

KnapsackResult solve_knapsack(const std::vector<std::vector<Option>>& groups, uint32_t capacity,
                              uint32_t resolution = 4096);

}  // namespace vsynth::stages::context
