// The multiple-choice knapsack behind context.prune: optimal, one option per group, never over
// capacity, also on the coarse grid used for large budgets.
#include <catch2/catch.hpp>

#include <random>

#include "stages/context/knapsack.h"

using namespace vsynth::stages::context;

namespace {

// Exhaustive optimum for small instances.
double brute_force(const std::vector<std::vector<Option>>& groups, uint32_t capacity) {
  double best = 0;
  std::vector<int> pick(groups.size(), -1);
  for (;;) {
    uint64_t cost = 0;
    double value = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (pick[g] < 0) continue;
      cost += std::max<uint32_t>(1, groups[g][static_cast<std::size_t>(pick[g])].cost);
      value += groups[g][static_cast<std::size_t>(pick[g])].value;
    }
    if (cost <= capacity) best = std::max(best, value);
    std::size_t g = 0;
    while (g < groups.size()) {
      if (++pick[g] < static_cast<int>(groups[g].size())) break;
      pick[g] = -1;
      ++g;
    }
    if (g == groups.size()) return best;
  }
}

}  // namespace

TEST_CASE("knapsack beats first-fit by priority", "[context][knapsack]") {
  // First-fit by value would take the 60-token full form (value 10) and have no room left;
  // the optimum takes three signatures (3 x 4 = 12) in the same budget.
  const std::vector<std::vector<Option>> groups = {
      {{60, 10}},
      {{20, 4}, {60, 9}},
      {{20, 4}, {60, 9}},
      {{20, 4}, {60, 9}},
  };
  const KnapsackResult r = solve_knapsack(groups, 60);
  CHECK(r.value == Approx(12));
  CHECK(r.choice == std::vector<int>{-1, 0, 0, 0});
  CHECK(r.cost == 60);
}

TEST_CASE("knapsack takes at most one option per group and the best form that fits",
          "[context][knapsack]") {
  const std::vector<std::vector<Option>> groups = {{{5, 1}, {10, 3}, {30, 4}}};
  CHECK(solve_knapsack(groups, 4).choice == std::vector<int>{-1});
  CHECK(solve_knapsack(groups, 9).choice == std::vector<int>{0});
  CHECK(solve_knapsack(groups, 29).choice == std::vector<int>{1});
  CHECK(solve_knapsack(groups, 100).choice == std::vector<int>{2});
  // Worthless options are never taken, even for free.
  CHECK(solve_knapsack({{{1, 0}}, {{1, -3}}}, 10).choice == std::vector<int>{-1, -1});
}

TEST_CASE("knapsack matches brute force and never exceeds capacity", "[context][knapsack]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::vector<Option>> groups(rng() % 6 + 1);
    for (auto& g : groups) {
      g.resize(rng() % 3 + 1);
      for (Option& o : g) o = Option{static_cast<uint32_t>(rng() % 40), (rng() % 100) / 10.0};
    }
    const uint32_t capacity = rng() % 80;
    const KnapsackResult r = solve_knapsack(groups, capacity);
    CHECK(r.value == Approx(brute_force(groups, capacity)));
    CHECK(r.cost <= capacity);
    // The coarse grid (resolution 8) may lose value but never breaks the capacity.
    const KnapsackResult coarse = solve_knapsack(groups, capacity, 8);
    uint64_t cost = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (coarse.choice[g] >= 0) cost += groups[g][static_cast<std::size_t>(coarse.choice[g])].cost;
    }
    CHECK(cost <= capacity);
    CHECK(coarse.value <= r.value + 1e-9);
  }
}
