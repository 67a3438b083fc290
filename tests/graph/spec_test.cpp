// The pipeline file: every bad config in tests/data/bad_configs is rejected with the text its
// `# expect:` lines give; shipped pipelines load; YAML bombs fail fast with a typed error.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/validate.h"
#include "tests/graph/test_kinds.h"

using namespace vsynth;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Loads and validates; returns the formatted diagnostics ("" when the file is valid).
std::string errors_of(const std::string& text, const std::string& name) {
  auto reg = test::full_registry();
  graph::Diagnostics diags(name);
  auto spec = graph::load_spec_string(text, name, diags);
  if (diags.empty()) graph::validate(spec, reg, diags);
  return diags.format();
}

}  // namespace

TEST_CASE("every bad config is rejected with its expected message") {
  const fs::path dir = fs::path(VSYNTH_SOURCE_DIR) / "tests/data/bad_configs";
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    const std::string text = read_file(entry.path());
    const std::string name = "tests/data/bad_configs/" + entry.path().filename().string();
    const std::string errors = errors_of(text, name);
    INFO(name << "\n" << errors);
    CHECK_FALSE(errors.empty());
    std::istringstream lines(text);
    std::size_t expects = 0;
    for (std::string line; std::getline(lines, line);) {
      const std::string tag = "# expect: ";
      if (line.rfind(tag, 0) != 0) continue;
      ++expects;
      const std::string want = line.substr(tag.size());
      INFO("expected: " << want);
      CHECK(errors.find(want) != std::string::npos);
    }
    CHECK(expects > 0);
  }
  CHECK(files >= 20);
}

TEST_CASE("every shipped pipeline validates") {
  // Shipped pipelines may reference ${VSYNTH_MODEL}; give it a value as a user would.
  ::setenv("VSYNTH_MODEL", "models/gemma-3-270m-q4_k_m.gguf", 0);
  const fs::path dir = fs::path(VSYNTH_SOURCE_DIR) / "pipelines";
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    INFO(entry.path().string());
    CHECK(errors_of(read_file(entry.path()), entry.path().string()) == "");
  }
  CHECK(files >= 1);
}

TEST_CASE("all problems are reported at once, in file order") {
  const std::string errors = errors_of(R"(stages:
  a: { use: core.selct }
  b: { use: test.sleep, with: { ms: -4, mss: 3 } }
edges: [ a -> out, b -> out ]
)",
                                       "x.yaml");
  CHECK(errors.find("x.yaml:2:13: error: unknown stage kind `core.selct`") != std::string::npos);
  CHECK(errors.find("x.yaml:3:37: error: parameter `ms` of stage `b` (test.sleep) is -4") !=
        std::string::npos);
  CHECK(errors.find("x.yaml:3:41: error: unknown parameter `mss`") != std::string::npos);
  CHECK(errors.find("did you mean `ms`?") != std::string::npos);
}

TEST_CASE("a self-referencing alias is a typed error, not a hang or a crash") {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string errors = errors_of("stages: &x [*x]\nedges: []\n", "cycle.yaml");
  CHECK_FALSE(errors.empty());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
}

TEST_CASE("alias bombs and deep nesting fail with typed diagnostics") {
  auto reg = test::full_registry();
  SECTION("alias bomb") {
    graph::Diagnostics d("bomb.yaml");
    std::string doc = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
    for (char c = 'b'; c <= 'j'; ++c) {
      doc += fmt::format("{}: &{} [", c, c);
      for (int i = 0; i < 10; ++i)
        doc += fmt::format("{}*{}", i ? ", " : "", static_cast<char>(c - 1));
      doc += "]\n";
    }
    graph::load_spec_string(doc, "bomb.yaml", d);
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].code == "yaml.alias_bomb");
  }
  SECTION("deep nesting") {
    graph::Diagnostics d("deep.yaml");
    graph::load_spec_string("stages: " + std::string(400, '[') + std::string(400, ']'), "deep.yaml",
                            d);
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].code == "yaml.depth");
  }
}

TEST_CASE("a big flat list is too many nodes, not an alias bomb, and is refused early") {
  // 2M items in a flow sequence, just under the 4 MiB file limit: real nodes, no alias.
  std::string doc = "stages: [";
  for (int i = 0; i < 2000000; ++i) doc += i ? ",1" : "1";
  doc += "]\nedges: []\n";
  REQUIRE(doc.size() < graph::LoadLimits{}.max_bytes);
  graph::Diagnostics d("big.yaml");
  graph::load_spec_string(doc, "big.yaml", d);
  REQUIRE(d.size() == 1);
  CHECK(d.list()[0].code == "yaml.nodes");
  CHECK_THAT(d.list()[0].format(),
             Catch::StartsWith("big.yaml:1:") &&
                 Catch::Contains("too many YAML nodes (more than 100000; the limit is 100000)"));
  // The count stops at the limit: the node named is the 100001st (the root mapping, the key
  // `stages` and the list come first; list item k is at column 10 + 2k), so the parser never
  // read the rest of the file.
  CHECK(d.list()[0].mark.col == 10 + 2 * (100001 - 4));
}

TEST_CASE("real nodes and nodes reached through aliases have separate budgets") {
  // 60k real nodes plus an alias that reaches 60k more: each within its budget, so no YAML
  // diagnostic (the old single budget counted 120k and called it an alias bomb).
  std::string doc =
      "description: x\nstages:\n  a: { use: test.produce }\nedges: [ a -> out ]\n"
      "pipeline: p\nqueues: { default: { capacity: 4 } }\n";
  std::string list = "[";
  for (int i = 0; i < 60000; ++i) list += i ? ",1" : "1";
  list += "]";
  graph::Diagnostics d("aliases.yaml");
  graph::load_spec_string("x: &big " + list + "\ny: *big\n" + doc, "aliases.yaml", d);
  for (const auto& e : d.list()) CHECK(e.code.rfind("yaml.", 0) != 0);
  SECTION("the same alias used twice more crosses the alias budget") {
    graph::Diagnostics d2("aliases.yaml");
    graph::load_spec_string("x: &big " + list + "\ny: [*big, *big]\n" + doc, "aliases.yaml", d2);
    REQUIRE(d2.size() == 1);
    CHECK(d2.list()[0].code == "yaml.alias_bomb");
    CHECK(d2.list()[0].mark.line == 2);
  }
}

TEST_CASE("a tab in the indentation is named as such, at its position") {
  graph::Diagnostics d("tabs.yaml");
  graph::load_spec_string("stages:\n  a:\n  \tuse: test.produce\nedges: [ a -> out ]\n",
                          "tabs.yaml", d);
  REQUIRE(d.size() == 1);
  CHECK(d.list()[0].code == "yaml.tab");
  CHECK_THAT(d.list()[0].format(),
             Catch::StartsWith("tabs.yaml:3:3: error: tabs are not allowed in YAML indentation"));
}

TEST_CASE("a back edge without max_attempts reports just that") {
  const fs::path file =
      fs::path(VSYNTH_SOURCE_DIR) / "tests/data/bad_configs/back_edge_without_max.yaml";
  const std::string errors = errors_of(read_file(file), "b.yaml");
  INFO(errors);
  CHECK(errors.find("needs `max_attempts`") != std::string::npos);
  CHECK(errors.find("not connected") == std::string::npos);
  CHECK(std::count(errors.begin(), errors.end(), '\n') == 1);
}

TEST_CASE("environment references expand, with defaults and escapes") {
  graph::Diagnostics d("env.yaml");
  ::setenv("VSYNTH_TEST_ENV_A", "alpha", 1);
  ::unsetenv("VSYNTH_TEST_ENV_B");
  CHECK(graph::expand_env("x-${VSYNTH_TEST_ENV_A}-y", {1, 1}, d) == "x-alpha-y");
  CHECK(graph::expand_env("${VSYNTH_TEST_ENV_B:-fallback}", {1, 1}, d) == "fallback");
  CHECK(graph::expand_env("cost $$5 and $HOME", {1, 1}, d) == "cost $5 and $HOME");
  CHECK(d.empty());
  CHECK_FALSE(graph::expand_env("${VSYNTH_TEST_ENV_B}", {3, 9}, d).has_value());
  REQUIRE(d.size() == 1);
  CHECK(d.list()[0].format().find(
            "env.yaml:3:9: error: environment variable `VSYNTH_TEST_ENV_B` is not set") !=
        std::string::npos);
  CHECK_FALSE(graph::expand_env("${1BAD}", {1, 1}, d).has_value());
  CHECK_FALSE(graph::expand_env("${OPEN", {1, 1}, d).has_value());
}

TEST_CASE("did you mean: close typos only") {
  const std::vector<std::string> names = {"budget_tokens", "model", "max_new_tokens"};
  CHECK(graph::did_you_mean("budget_tokns", names) == "budget_tokens");
  CHECK(graph::did_you_mean("modle", names) == "model");
  CHECK(graph::did_you_mean("max_new_token", names) == "max_new_tokens");
  CHECK(graph::did_you_mean("temperature", names) == "");
  CHECK(graph::did_you_mean("model", names) == "");  // exact: nothing to suggest
}

TEST_CASE("edge chains, explicit ports and defaults resolve as written") {
  auto reg = test::full_registry();
  auto p = test::load_text(R"(
stages:
  route: { use: core.select, with: { field: /language, values: [python] } }
  a: { use: test.produce }
  b: { use: test.consume }
edges:
  - route.match -> a -> b -> out
  - route.other -> out
)",
                           reg);
  REQUIRE(p.edges.size() == 4);
  CHECK(p.entry == 0);
  CHECK(p.edges[0].from == 0);
  CHECK(p.edges[0].port == 0);
  CHECK(p.edges[0].to == 1);
  CHECK(p.edges[2].to == graph::kOut);
  CHECK(p.edges[3].port == 1);
  CHECK(p.max_in_flight == 64);
}

TEST_CASE("a middle element's port selects which port continues the chain") {
  auto reg = test::full_registry();
  auto p = test::load_text(R"(
stages:
  a: { use: test.produce }
  check: { use: test.check, with: { pass_on: 1 } }
edges:
  - a -> check.retry -> out
  - check.pass -> out
)",
                           reg);
  REQUIRE(p.edges.size() == 3);
  CHECK(p.edges[1].from == 1);
  CHECK(p.edges[1].port == 1);  // retry
}
