// The context.* stages as the graph runs them: registered contracts, pipelines/context.yaml
// end to end on tasks with other files and an edit history, the facet a generation stage
// reads, and bad tasks or parameters failing with messages naming the field.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "graph/pipeline.h"
#include "stages/facets/context.h"
#include "tests/graph/test_kinds.h"

namespace graph = vsynth::graph;

namespace {

std::string read(const std::string& rel) {
  std::ifstream in(std::string(VSYNTH_SOURCE_DIR) + "/" + rel);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

std::vector<nlohmann::json> run(graph::Pipeline& p, std::vector<nlohmann::json> tasks) {
  vsynth::test::JsonTaskSource src(std::move(tasks), "id");
  vsynth::test::VectorSink sink;
  graph::RunControl control;
  p.run(src, sink, control);
  std::vector<nlohmann::json> records = sink.records;
  std::sort(records.begin(), records.end(),
            [](const auto& a, const auto& b) { return a["id"] < b["id"]; });
  return records;
}

std::vector<nlohmann::json> run(const std::string& yaml, std::vector<nlohmann::json> tasks) {
  const graph::Registry reg = vsynth::test::full_registry();
  graph::Pipeline p(vsynth::test::load_text(yaml, reg), reg);
  return run(p, std::move(tasks));
}

const char* kMain =
    "from util import helper\n\n\ndef run(x):\n    y = x + 1\n    return helper(y)\n";
const char* kUtil =
    "from core import core_fn\n\n\ndef helper(value: int) -> int:\n"
    "    \"\"\"Doubles through the core.\"\"\"\n    return core_fn(value) * 2\n";
const char* kCore = "def core_fn(value: int) -> int:\n    return value + 1\n";

}  // namespace

TEST_CASE("context stages are registered with their contracts", "[context][stage]") {
  const graph::Registry reg = vsynth::test::full_registry();
  for (const char* kind : {"context.summarize", "context.deps", "context.prune"}) {
    INFO(kind);
    REQUIRE(reg.find_stage(kind) != nullptr);
    CHECK(reg.find_stage(kind)->contract.requires_facets == std::vector<std::string>{"anchor"});
  }
  // Dedup only marks candidates a stage before it built: the request's data flows one way.
  REQUIRE(reg.find_stage("context.dedup") != nullptr);
  CHECK(reg.find_stage("context.dedup")->contract.requires_facets ==
        std::vector<std::string>{"context_units"});
  CHECK_THROWS_WITH(vsynth::test::load_text(
                        "stages:\n  anchor: { use: ast.anchor }\n"
                        "  dedup: { use: context.dedup }\nedges:\n  - anchor -> dedup -> out\n",
                        reg),
                    Catch::Contains("requires facet `context_units`"));
  const graph::Contract& prune = reg.find_stage("context.prune")->contract;
  CHECK(prune.provides_facets == std::vector<std::string>{"context"});
  CHECK(std::get<int64_t>(*prune.find_param("budget_tokens")->default_value) == 1024);
  CHECK(std::get<double>(
            *reg.find_stage("context.dedup")->contract.find_param("threshold")->default_value) ==
        0.85);
  CHECK(std::get<int64_t>(
            *reg.find_stage("context.deps")->contract.find_param("hops")->default_value) == 2);
}

TEST_CASE("pipelines/context.yaml: two-hop context across files, edits, within budget",
          "[context][stage]") {
  nlohmann::json task = {
      {"id", "t1"},
      {"path", "main.py"},
      {"source", kMain},
      {"cursor", {{"line", 6}, {"column", 19}}},
      {"project", "demo"},
      {"files",
       {{{"path", "util.py"}, {"source", kUtil}}, {{"path", "core.py"}, {"source", kCore}}}},
      {"edits", {{{"path", "main.py"}, {"start_line", 5}, {"end_line", 5}}}}};
  nlohmann::json later = task;  // the same task again, in a later run of the same pipeline
  later["id"] = "t2";
  nlohmann::json alone = task;  // the cursor's file alone: what t1 sent is not its to see
  alone["id"] = "t3";
  alone.erase("files");
  // Runs of one pipeline: the stages (and context.deps' file cache) persist between them, as
  // they do between the tasks of one long run; results never depend on that.
  const graph::Registry reg = vsynth::test::full_registry();
  graph::Pipeline p(vsynth::test::load_text(read("pipelines/context.yaml"), reg), reg);
  std::vector<nlohmann::json> records = run(p, {task});
  for (nlohmann::json& r : run(p, {later})) records.push_back(std::move(r));
  const std::vector<nlohmann::json> without = run(p, {alone});
  REQUIRE(without.size() == 1);
  CHECK(without[0]["facets"]["context_units"]["deps"].empty());
  CHECK(without[0]["facets"]["context"]["text"].get<std::string>().find("util.py") ==
        std::string::npos);
  REQUIRE(records.size() == 2);
  CHECK(records[0]["facets"] == records[1]["facets"]);  // the cache's hit gives the same
  for (const nlohmann::json& rec : records) {
    INFO(rec.dump(2));
    REQUIRE(rec["status"] == "prune.ok");
    const nlohmann::json& ctx = rec["facets"]["context"];
    CHECK(ctx["budget_tokens"] == 1024);
    CHECK(ctx["used_tokens"].get<int>() <= 1024);
    const std::string text = ctx["text"];
    CHECK(text.find("# file: util.py\n") != std::string::npos);
    CHECK(text.find("def helper(value: int) -> int:") != std::string::npos);
    CHECK(text.find("# file: core.py\n") != std::string::npos);
    CHECK(text.rfind("# file: main.py\n") > text.find("# file: util.py\n"));
    CHECK(text.substr(ctx["cursor_offset"].get<std::size_t>(), 3) == "y)\n");
    const nlohmann::json& deps = rec["facets"]["context_units"]["deps"];
    bool hop2 = false;
    for (const auto& d : deps) hop2 |= d["name"] == "core_fn" && d["hop"] == 2;
    CHECK(hop2);
    bool focus = false;
    for (const auto& u : ctx["units"]) focus |= u["name"] == "run" && u["reason"] == "focus";
    CHECK(focus);
  }
}

TEST_CASE("pipelines/context.yaml runs on the shipped example tasks", "[context][stage]") {
  std::vector<nlohmann::json> tasks;
  for (const char* file : {"examples/tasks/completion.jsonl", "examples/tasks/context.jsonl"}) {
    std::istringstream lines(read(file));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) tasks.push_back(nlohmann::json::parse(line));
    }
  }
  REQUIRE(tasks.size() >= 7);
  const auto records = run(read("pipelines/context.yaml"), tasks);
  REQUIRE(records.size() == tasks.size());
  for (const nlohmann::json& rec : records) {
    INFO(rec["id"] << ": " << rec.value("error", ""));
    CHECK(rec["status"] == "prune.ok");
    CHECK(rec["facets"]["context"]["cursor_offset"].get<int64_t>() >= 0);
  }
}

TEST_CASE("the facet a generation stage reads: text, prefix and suffix in the arena",
          "[context][stage]") {
  const graph::Registry reg = vsynth::test::full_registry();
  const std::string yaml =
      "stages:\n  anchor: { use: ast.anchor }\n"
      "  prune: { use: context.prune, with: { budget_tokens: 64 } }\n"
      "edges:\n  - anchor -> prune -> out\n";
  graph::Pipeline p(vsynth::test::load_text(yaml, reg), reg);
  const nlohmann::json task = {
      {"id", "a"},
      {"path", "a.rs"},
      {"source", "fn a() -> i32 {\n    1\n}\n\nfn b() -> i32 {\n    2\n}\n"},
      {"cursor", {{"line", 6}, {"column", 5}}}};
  vsynth::test::JsonTaskSource src(std::vector<nlohmann::json>{task}, "id");
  vsynth::test::VectorSink sink;
  std::string prefix, suffix, text;
  sink.on_write = [&](const graph::Item& item) {
    const auto* f = item.find<vsynth::stages::facets::ContextFacet>();
    REQUIRE(f);
    text = std::string(f->text());
    prefix = std::string(f->prefix());
    suffix = std::string(f->suffix());
  };
  graph::RunControl control;
  p.run(src, sink, control);
  CHECK(prefix + suffix == text);
  CHECK(prefix.substr(prefix.size() - 4) == "    ");
  CHECK(suffix.substr(0, 2) == "2\n");
  CHECK(text.rfind("// file: a.rs\n", 0) == 0);
}

TEST_CASE("context stages fail bad tasks and parameters with clear messages", "[context][stage]") {
  const std::string base = "stages:\n  anchor: { use: ast.anchor }\n";
  auto error_of = [&](const std::string& stages, nlohmann::json task) {
    const auto records = run(base + stages, {std::move(task)});
    REQUIRE(records.size() == 1);
    return records[0].value("error", std::string());
  };
  nlohmann::json ok = {{"id", "x"},
                       {"path", "a.py"},
                       {"source", "def f():\n    return 1\n"},
                       {"cursor", {{"line", 2}, {"column", 5}}}};
  const std::string deps = "  deps: { use: context.deps }\nedges:\n  - anchor -> deps -> out\n";
  nlohmann::json bad_files = ok;
  bad_files["files"] = {{{"path", "b.py"}}};
  CHECK_THAT(error_of(deps, bad_files),
             Catch::Contains("task `x`: field /files/0 must be {\"path\": string, \"source\": "
                             "string}"));
  const std::string prune = "  prune: { use: context.prune }\nedges:\n  - anchor -> prune -> out\n";
  nlohmann::json bad_edits = ok;
  bad_edits["edits"] = {{{"start_line", 0}}};
  CHECK_THAT(error_of(prune, bad_edits),
             Catch::Contains("task `x`: field /edits/0/start_line must be a 1-based line number"));

  const graph::Registry reg = vsynth::test::full_registry();
  CHECK_THROWS_WITH(
      graph::Pipeline(vsynth::test::load_text(
                          base + "  prune: { use: context.prune, with: { tokenizer: gguf } }\n"
                                 "edges:\n  - anchor -> prune -> out\n",
                          reg),
                      reg),
      Catch::Contains("`tokenizer: gguf` needs `gguf_path`"));
}

TEST_CASE("pipelines/context.yaml on an editor's request: no file name, chunks of other files",
          "[context][stage][unnamed]") {
  const std::string main = kMain;
  const std::size_t cursor = main.find("    return helper(y)") + 18;
  // llama.vim's input_extra: pieces of files, two of util.py; the definition the cursor uses is
  // in the first, so a second chunk of the same path must not replace it.
  const nlohmann::json files = {
      {{"path", "util.py"},
       {"source", "def helper(value: int) -> int:\n    return core_fn(value) * 2\n"}},
      {{"path", "core.py"}, {"source", kCore}},
      {{"path", "util.py"}, {"source", "def unrelated():\n    pass\n"}},
      {{"path", "util.py"}, {"source", "def unrelated():\n    pass\n"}}};  // sent twice
  const nlohmann::json unnamed = {
      {"id", "a-unnamed"}, {"prefix", main.substr(0, cursor)}, {"suffix", main.substr(cursor)},
      {"source", main},    {"cursor", {{"offset", cursor}}},   {"files", files}};
  const nlohmann::json anonymous = {{"id", "b-anonymous"},
                                    {"prefix", "hello "},
                                    {"suffix", "there\nplain words\n"},
                                    {"source", "hello there\nplain words\n"},
                                    {"cursor", {{"offset", 6}}}};
  const auto records = run(read("pipelines/context.yaml"), {unnamed, anonymous});
  REQUIRE(records.size() == 2);
  {
    const nlohmann::json& rec = records[0];
    INFO(rec.dump(2));
    REQUIRE(rec["status"] == "prune.ok");
    CHECK(rec["facets"]["task_file"]["language"] == "python");
    CHECK(rec["facets"]["task_file"]["language_from"] == "files");
    CHECK(rec["facets"]["task_file"]["named"] == false);
    const std::string text = rec["facets"]["context"]["text"];
    CHECK(text.find("# file: util.py\n") != std::string::npos);
    CHECK(text.find("def helper(value: int) -> int:") != std::string::npos);
    CHECK(text.find("# file: untitled.py\n") != std::string::npos);
    CHECK(text.substr(rec["facets"]["context"]["cursor_offset"].get<std::size_t>(), 3) == "y)\n");
  }
  {
    // No name, no language: passed through every context stage, not failed.
    const nlohmann::json& rec = records[1];
    INFO(rec.dump(2));
    CHECK(rec["status"] == "prune.ok");
    CHECK(rec["passed"] == true);
    CHECK(rec["facets"]["task_file"]["language"].is_null());
    CHECK_FALSE(rec["facets"].contains("anchor"));
    CHECK_FALSE(rec["facets"].contains("context"));
  }
}
