// One capability on its own (tests/capabilities/CMakeLists.txt builds this once per
// capability, with every object of vsynth_stage_<cap> and only the libraries it may link):
// that it links at all is the test of its dependencies; here it registers exactly its kinds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/registry.h"
#include VSYNTH_CAPABILITY_HEADER

#define VSYNTH_STR2(x) #x
#define VSYNTH_STR(x) VSYNTH_STR2(x)

TEST_CASE("a capability linked alone registers its stage and resource kinds", "[capabilities]") {
  vsynth::graph::Registry registry;
  vsynth::stages::VSYNTH_CAPABILITY::register_stages(registry);
  std::vector<std::string> kinds = registry.stage_kinds();
  for (std::string& r : registry.resource_kinds()) kinds.push_back(std::move(r));
  std::sort(kinds.begin(), kinds.end());
  std::string joined;
  for (const std::string& k : kinds) joined += (joined.empty() ? "" : ",") + k;
  INFO("capability " VSYNTH_STR(VSYNTH_CAPABILITY));
  CHECK(joined == VSYNTH_CAPABILITY_KINDS);
  for (const std::string& k : registry.stage_kinds()) {
    const vsynth::graph::StageKind* s = registry.find_stage(k);
    REQUIRE(s != nullptr);
    CHECK(s->contract.kind == k);
    CHECK_FALSE(s->contract.summary.empty());
  }
}
