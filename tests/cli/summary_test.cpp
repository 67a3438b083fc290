// The end-of-run summary's resource lines (tools/vsynth/progress.h): counts as integers, ratios
// as percentages, other figures with two decimals, resources in the order given.
#include <catch2/catch.hpp>

#include "tools/vsynth/progress.h"

using namespace vsynth;

TEST_CASE("summary: one line per resource with counters, ratios as percentages") {
  const graph::ResourceSnapshot model{"coder",
                                      "model.gguf",
                                      {{"kv_pool_lookups", 12.0},
                                       {"kv_pool_hit_rate", 0.8333, true},
                                       {"tokens_per_verify", 2.345}}};
  CHECK(cli::counters_line(model) ==
        "resource coder (model.gguf): kv_pool_lookups 12, kv_pool_hit_rate 83.3%, "
        "tokens_per_verify 2.35\n");

  graph::RunResult r;
  r.written = 2;
  const graph::ResourceSnapshot index{"code", "retrieval.index", {{"chunks", 40.0}}};
  const std::string table = cli::summary_table({}, r, {model, index});
  const auto first = table.find("resource coder");
  const auto second = table.find("resource code (retrieval.index): chunks 40\n");
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  CHECK(first < second);
  CHECK(table.find("2 written") < first);  // after the results line
  CHECK(cli::summary_table({}, r).find("resource") == std::string::npos);
}
