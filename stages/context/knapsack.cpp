#include "stages/context/knapsack.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace vsynth::stages::context {

KnapsackResult solve_knapsack(const std::vector<std::vector<Option>>& groups, uint32_t capacity,
                              uint32_t resolution) {
  KnapsackResult result;
  result.choice.assign(groups.size(), -1);
  if (groups.empty() || capacity == 0) return result;
  resolution = std::max<uint32_t>(resolution, 1);
  const uint32_t step = (capacity + resolution - 1) / resolution;  // tokens per grid cell
  const uint32_t cells = capacity / step;
  auto grid = [step](uint32_t cost) { return std::max<uint32_t>(1, (cost + step - 1) / step); };

  // best[b]: the largest value with grid cost <= b using the groups seen so far; taken[g *
  // (cells + 1) + b]: 1 + the option group g took to reach best[b] (0: none). One block for
  // all groups, and each option's grid cost computed once per group, not once per cell.
  std::vector<double> best(cells + 1, 0.0), next(cells + 1, 0.0);
  std::vector<uint8_t> taken(groups.size() * (std::size_t{cells} + 1), 0);
  std::vector<uint32_t> cost;  // grid cost of each usable option of the group
  std::vector<double> value;
  std::vector<uint8_t> id;  // 1 + its index in the group
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::vector<Option>& opts = groups[g];
    cost.clear();
    value.clear();
    id.clear();
    for (std::size_t k = 0; k < opts.size() && k < 255; ++k) {
      const Option& o = opts[k];
      if (o.value <= 0) continue;
      const uint32_t c = grid(o.cost);
      if (c > cells) continue;
      cost.push_back(c);
      value.push_back(o.value);
      id.push_back(static_cast<uint8_t>(k + 1));
    }
    if (cost.empty()) continue;
    uint8_t* const row = taken.data() + g * (std::size_t{cells} + 1);
    // next[b] = max(best[b], best[b - c_k] + v_k over the options k with c_k <= b), the first
    // option that is strictly better winning a tie, as a per-cell loop over the options
    // would: one pass per option over the cells (tight loops over contiguous memory),
    // reading only `best`, so each group is used once.
    std::copy(best.begin(), best.end(), next.begin());
    for (std::size_t k = 0; k < cost.size(); ++k) {
      const uint32_t c = cost[k];
      const double v = value[k];
      const uint8_t pick = id[k];
      // Cells c..cells: to[i] is cell c + i, from[i] cell i.
      const std::size_t n = std::size_t{cells} + 1 - c;
      const double* const from = best.data();
      double* const to = next.data() + c;
      uint8_t* const at = row + c;
      for (std::size_t i = 0; i < n; ++i) {
        const double cand = from[i] + v;
        if (cand > to[i]) {
          to[i] = cand;
          at[i] = pick;
        }
      }
    }
    best.swap(next);
  }
  uint32_t b = cells;
  result.value = best[b];
  for (std::size_t g = groups.size(); g-- > 0;) {
    const uint8_t pick = taken[g * (std::size_t{cells} + 1) + b];
    if (pick == 0) continue;
    const Option& o = groups[g][pick - 1];
    result.choice[g] = pick - 1;
    result.cost += o.cost;
    b -= grid(o.cost);
  }
  return result;
}

}  // namespace vsynth::stages::context
