#include "graph/bypass.h"

#include <fmt/format.h>

#include <algorithm>

namespace vsynth::graph {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Does a stage that still runs, other than stage `self`, provide `facet`? A stage is never its
// own provider: one that requires and provides a facet (context.dedup rewrites
// `context_units`) needs someone else to have made it first.
bool provided_by_running(const ValidatedPipeline& p, const std::vector<bool>& skipped,
                         std::size_t self, const std::string& facet) {
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    if (i != self && !skipped[i] && contains(p.stages[i].kind->contract.provides_facets, facet)) {
      return true;
    }
  }
  return false;
}

}  // namespace

BypassPlan bypass_closure(const ValidatedPipeline& p, const std::vector<std::string>& roots) {
  const std::size_t n = p.stages.size();
  std::vector<bool> skipped(n, false);
  // Phase 1: the roots.
  for (const auto& r : roots) {
    std::size_t i = 0;
    while (i < n && p.stages[i].name != r) ++i;
    if (i == n) return {{}, fmt::format("no stage `{}` in pipeline `{}` to skip", r, p.name)};
    skipped[i] = true;
  }
  // Phase 2: to a fixed point, each stage whose required facet no running stage provides.
  for (bool grew = true; grew;) {
    grew = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (skipped[i]) continue;
      for (const auto& f : p.stages[i].kind->contract.requires_facets) {
        if (!provided_by_running(p, skipped, i, f)) {
          skipped[i] = grew = true;
          break;
        }
      }
    }
  }
  // Phase 3: each skipped stage must pass items on through a success port.
  BypassPlan plan;
  for (std::size_t i = 0; i < n; ++i) {
    if (!skipped[i]) continue;
    const ResolvedStage& s = p.stages[i];
    if (s.kind->contract.ports.empty() || s.kind->contract.ports[0].failure) {
      return {{},
              fmt::format("stage `{}` ({}) cannot be skipped: its default port is not a success "
                          "port",
                          s.name, s.kind->contract.kind)};
    }
    plan.stages.push_back(s.name);
  }
  return plan;
}

}  // namespace vsynth::graph
