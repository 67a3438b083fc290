#include "base/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace vsynth::base {

double percentile(std::vector<float> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  const std::size_t i = static_cast<std::size_t>(std::max(1.0, rank)) - 1;
  return v[std::min(i, v.size() - 1)];
}

double round1(double v) {
  return std::round(v * 10.0) / 10.0;
}

}  // namespace vsynth::base
