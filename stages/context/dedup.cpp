#include "stages/context/dedup.h"

#include <algorithm>

#include "stages/context/normalize.h"
#include "stages/context/unit_extract.h"
#include "stages/context/value.h"

namespace vsynth::stages::context {

namespace {

bool matters(const Unit& u) {
  const Reasons& r = u.reasons;
  return !u.container && !u.removed &&
         (r.focus || r.at_cursor || r.class_member || r.in_focus || r.ref_rank >= 0 ||
          r.edit_rank >= 0 || r.hop >= 0 || r.retrieval_rank >= 0);
}

}  // namespace

uint32_t remove_duplicates(ContextUnitsFacet& c, const DedupOptions& options) {
  // --- the fingerprints of the units that can matter ---
  std::vector<uint32_t> pool;
  std::vector<std::vector<uint64_t>> sets(c.units.size());
  std::vector<uint64_t> own;  // a cursor-file unit's tokens: dedup's own, the unit is unchanged
  for (std::size_t i = 0; i < c.units.size(); ++i) {
    const Unit& u = c.units[i];
    if (!matters(u)) continue;
    const std::vector<uint64_t>* tokens = &u.normalized;  // copied units carry theirs (deps)
    if (u.normalized.empty() && u.file == 0 && c.file && u.node_end > u.node_start) {
      own = normalized_tokens(*c.file, unit_node(*c.file, u));
      tokens = &own;
    }
    if (tokens->size() < options.min_tokens) continue;
    sets[i] = shingles(*tokens, options.shingle_size);
    pool.push_back(static_cast<uint32_t>(i));
  }
  // --- most valuable first (value.h, default weights): a unit is only ever removed in favour
  // of one already kept ---
  const ValueWeights weights;
  auto worth = [&](uint32_t i) {
    const Unit& u = c.units[i];
    if (u.reasons.focus) return 1e18;
    return unit_value(u, Form::Full, weights) + unit_value(u, Form::Signature, weights);
  };
  std::stable_sort(pool.begin(), pool.end(), [&](uint32_t a, uint32_t b) {
    const double wa = worth(a), wb = worth(b);
    if (wa != wb) return wa > wb;
    if (c.units[a].file != c.units[b].file) return c.units[a].file < c.units[b].file;
    return a < b;
  });
  // --- each against those kept before it ---
  std::vector<uint32_t> kept;
  uint32_t removed = 0;
  for (uint32_t i : pool) {
    const std::size_t size_i = sets[i].size();
    bool dup = false;
    for (uint32_t k : kept) {
      const std::size_t size_k = sets[k].size();
      const double ratio = static_cast<double>(std::min(size_i, size_k)) /
                           static_cast<double>(std::max(size_i, size_k));
      if (ratio < options.threshold) continue;  // Jaccard <= min/max
      const double j = jaccard(sets[i], sets[k]);
      if (j >= options.threshold) {
        Unit& u = c.units[i];
        u.removed = true;
        u.duplicate_of = static_cast<int32_t>(k);
        c.duplicates.push_back({i, k, j});
        ++removed;
        dup = true;
        break;
      }
    }
    if (!dup) kept.push_back(i);
  }
  return removed;
}

}  // namespace vsynth::stages::context
