// Small statistics for the figures stages report (per-token hook timings, proof times):
// a nearest-rank percentile and rounding to one decimal.
#pragma once

#include <vector>

namespace vsynth::base {

// Percentile p (0..100) of `v` by nearest rank (the smallest value with at least p% of the
// values at or below it); 0 for an empty vector.
double percentile(std::vector<float> v, double p);

// v rounded to one decimal (half away from zero), for JSON figures people read.
double round1(double v);

}  // namespace vsynth::base
