#include "stages/context/knapsack.h"

#include <algorithm>

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

  // best[b]: the largest value with grid cost <= b using the groups seen so far; taken[g][b]:
  // 1 + the option group g took to reach best[b] (0: none).
  std::vector<double> best(cells + 1, 0.0);
  std::vector<std::vector<uint8_t>> taken(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::vector<Option>& opts = groups[g];
    taken[g].assign(cells + 1, 0);
    bool any = false;
    for (const Option& o : opts) any |= o.value > 0 && grid(o.cost) <= cells;
    if (!any) continue;
    // Descending b reads best[b - c] before this group writes it: each group is used once.
    for (uint32_t b = cells;; --b) {
      double v = best[b];
      uint8_t pick = 0;
      for (std::size_t k = 0; k < opts.size() && k < 255; ++k) {
        const Option& o = opts[k];
        if (o.value <= 0) continue;
        const uint32_t c = grid(o.cost);
        if (c > b) continue;
        const double cand = best[b - c] + o.value;
        if (cand > v) {
          v = cand;
          pick = static_cast<uint8_t>(k + 1);
        }
      }
      best[b] = v;
      taken[g][b] = pick;
      if (b == 0) break;
    }
  }
  uint32_t b = cells;
  result.value = best[b];
  for (std::size_t g = groups.size(); g-- > 0;) {
    const uint8_t pick = taken[g][b];
    if (pick == 0) continue;
    const Option& o = groups[g][pick - 1];
    result.choice[g] = pick - 1;
    result.cost += o.cost;
    b -= grid(o.cost);
  }
  return result;
}

}  // namespace vsynth::stages::context
