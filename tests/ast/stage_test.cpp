// ast.anchor as the graph runs it: registered, built from its contract's defaults, processing
// tasks into the `anchor` facet; bad tasks fail with messages naming the field.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "graph/registry.h"
#include "graph/validate.h"
#include "stages/ast/anchor_stage.h"
#include "stages/ast/error.h"
#include "stages/ast/register.h"
#include "stages/facets/task_file.h"
#include "tests/ast/ast_test_util.h"

namespace ast = vsynth::stages::ast;
namespace graph = vsynth::graph;

namespace {

struct Harness {
  graph::Registry registry;
  graph::ResourceSet resources;
  const graph::StageKind* kind = nullptr;

  Harness() {
    ast::register_stages(registry);
    kind = registry.find_stage("ast.anchor");
  }

  // The stage with its contract's defaults, overridden by `overrides`.
  std::unique_ptr<graph::SyncStage> make(const graph::Params& overrides = {}) {
    graph::Params params;
    for (const graph::ParamSpec& p : kind->contract.params) {
      if (p.default_value) params.set(p.name, *p.default_value);
    }
    for (const auto& [name, value] : overrides.all()) params.set(name, value);
    const graph::StageContext ctx{"anchor", kind->contract, params, resources};
    std::unique_ptr<graph::StageBase> base = kind->factory(ctx);
    auto* sync = dynamic_cast<graph::SyncStage*>(base.get());
    REQUIRE(sync != nullptr);
    base.release();
    return std::unique_ptr<graph::SyncStage>(sync);
  }
};

graph::Item make_item(nlohmann::json data) {
  return graph::Item(graph::Task{"t1", std::move(data)}, 0);
}

}  // namespace

TEST_CASE("ast.anchor is registered with its contract", "[ast][stage]") {
  Harness h;
  REQUIRE(h.kind != nullptr);
  const graph::Contract& c = h.kind->contract;
  CHECK(c.provides_facets == std::vector<std::string>{"anchor", "task_file"});
  CHECK(c.port_index("ok") == 0u);
  CHECK(c.find_param("cursor_base") != nullptr);
  CHECK(c.find_param("max_identifiers") != nullptr);
}

TEST_CASE("ast.anchor anchors a task's cursor into the anchor facet", "[ast][stage]") {
  Harness h;
  const auto s = ast::test::load_sample("sample.rs");
  ast::ParsedFile probe = ast::ParsedFile::from_path(s.path, s.source);
  const TSPoint p = probe.point_at(s.at("a"));

  auto stage = h.make();
  graph::Item item = make_item({{"path", "src/ledger.rs"},
                                {"source", s.source},
                                {"cursor", {{"line", p.row + 1}, {"column", p.column + 1}}}});
  CHECK(stage->process(item) == 0u);
  const auto* facet = item.find<ast::AnchorFacet>();
  REQUIRE(facet != nullptr);
  CHECK(facet->anchor().byte == s.at("a"));
  CHECK(facet->anchor().function->name == "deposit");
  CHECK(facet->file().language().name() == "rust");

  const nlohmann::json j = facet->to_json();
  CHECK(j["path"] == "src/ledger.rs");
  CHECK(j["language"] == "rust");
  CHECK(j["cursor"]["row"] == p.row);
  CHECK(j["function"]["name"] == "deposit");
  CHECK(j["class"]["name"] == "Ledger");
  CHECK(j["imports"].size() == 2);
  CHECK(j["identifiers"][0]["name"] == "amount");
  CHECK(j["syntax_errors"] == false);

  // A byte offset, 0-based lines, and an explicit language all reach the same place.
  auto zero = h.make(graph::Params({{"cursor_base", std::string("zero")}}));
  graph::Item by_zero = make_item({{"path", "ledger.txt"},
                                   {"language", "rust"},
                                   {"source", s.source},
                                   {"cursor", {{"line", p.row}, {"column", p.column}}}});
  zero->process(by_zero);
  CHECK(by_zero.find<ast::AnchorFacet>()->anchor().byte == s.at("a"));
  graph::Item by_offset =
      make_item({{"path", "ledger.rs"}, {"source", s.source}, {"cursor", {{"offset", s.at("a")}}}});
  stage->process(by_offset);
  CHECK(by_offset.find<ast::AnchorFacet>()->anchor().function->name == "deposit");
}

TEST_CASE("ast.anchor fails a bad task with a message naming the field", "[ast][stage]") {
  Harness h;
  auto stage = h.make();
  const nlohmann::json cursor = {{"line", 1}, {"column", 1}};
  auto fails_with = [&](nlohmann::json data, const std::string& text) {
    graph::Item item = make_item(std::move(data));
    CHECK_THROWS_WITH(stage->process(item), Catch::Contains(text));
    CHECK(item.find<ast::AnchorFacet>() == nullptr);
  };
  fails_with({{"path", "a.py"}, {"cursor", cursor}},
             "task `t1`: field /source must be a string (absent)");
  fails_with({{"path", 3}, {"source", "x"}, {"cursor", cursor}},
             "task `t1`: field /path must be a string (got number)");
  fails_with({{"path", "a.py"}, {"source", "x = 1\n"}},
             "field /cursor must be an object {\"line\": L, \"column\": C} or {\"offset\": B}");
  fails_with({{"path", "a.py"}, {"source", "x = 1\n"}, {"cursor", {{"line", -2}, {"column", 1}}}},
             "/cursor/line must be a non-negative integer (got -2)");
  fails_with({{"path", "a.cob"}, {"source", "x"}, {"cursor", cursor}}, "extension `.cob`");
  fails_with({{"path", "a.py"}, {"language", "cobol"}, {"source", "x"}, {"cursor", cursor}},
             "unknown language `cobol`");
  fails_with(
      {{"path", "a.py"}, {"source", "x = 1\n"}, {"cursor", {{"line", 9}, {"column", 1}}}},
      "a.py: cursor at line 9, column 1 (1-based) is outside the file: valid lines are 1..2");

  // A bad pointer is refused when the pipeline is validated, before any stage is built.
  graph::Diagnostics d("p.yaml");
  graph::check_params(h.kind->contract.params, {{"path_field", {3, 9}, YAML::Node("no-slash")}},
                      "stage `anchor` (ast.anchor)", {}, {}, h.registry, d);
  REQUIRE(d.size() == 1);
  CHECK_THAT(d.list()[0].format(),
             Catch::StartsWith("p.yaml: error: parameter `path_field` of stage `anchor` "
                               "(ast.anchor) must be a JSON pointer"));
}

TEST_CASE("ast.anchor keeps parsed files between requests (cache_mb)", "[ast][stage][cache]") {
  Harness h;
  const auto s = ast::test::load_sample("sample.py");
  const uint32_t at = s.at("a");
  auto task = [&](const std::string& source, uint32_t cursor) {
    return make_item(
        {{"path", "pkg/mod.py"}, {"source", source}, {"cursor", {{"offset", cursor}}}});
  };
  auto stage = h.make();  // cache_mb defaults to 64
  const auto* anchor_stage = dynamic_cast<const ast::AnchorStage*>(stage.get());
  REQUIRE(anchor_stage != nullptr);
  REQUIRE(anchor_stage->cache() != nullptr);
  CHECK(anchor_stage->cache()->max_bytes() == std::size_t{64} << 20);

  graph::Item first = task(s.source, at);
  REQUIRE(stage->process(first) == 0u);
  graph::Item second = task(s.source, at);
  REQUIRE(stage->process(second) == 0u);
  const auto& f1 = first.get<ast::AnchorFacet>();
  const auto& f2 = second.get<ast::AnchorFacet>();
  CHECK(f1.parse() == "miss");
  CHECK(f2.parse() == "hit");
  CHECK(f1.share_file() == f2.share_file());  // one tree, shared
  // How the file was obtained depends on what ran before: never part of the record.
  CHECK_FALSE(f2.to_json().contains("parse"));
  CHECK(f2.anchor().byte == at);
  CHECK(f2.anchor().function->name == f1.anchor().function->name);

  // The user typed at the cursor: the next request parses afresh (edits are off by default:
  // an incremental tree is not always a fresh parse's) ...
  std::string typed = s.source;
  typed.insert(at, "q");
  graph::Item fresh = task(typed, at + 1);
  REQUIRE(stage->process(fresh) == 0u);
  CHECK(fresh.get<ast::AnchorFacet>().parse() == "miss");
  CHECK_FALSE(anchor_stage->cache()->edits());
  // ... and with cache_edits: true, edits the cached tree.
  auto editing = h.make(graph::Params({{"cache_edits", true}}));
  graph::Item base = task(s.source, at);
  REQUIRE(editing->process(base) == 0u);
  graph::Item third = task(typed, at + 1);
  REQUIRE(editing->process(third) == 0u);
  const auto& f3 = third.get<ast::AnchorFacet>();
  CHECK(f3.parse() == "edit");
  CHECK(f3.file().source() == typed);
  CHECK(f3.anchor().function->name == f1.anchor().function->name);
  CHECK(ast::test::dump_tree(f3.file().root()) ==
        ast::test::dump_tree(ast::ParsedFile::from_path(s.path, typed).root()));
  // The first request's file is unchanged.
  CHECK(f1.file().source() == s.source);
  const ast::ParseCache::Stats st = anchor_stage->cache()->stats();
  CHECK((st.misses == 2 && st.hits == 1 && st.edits == 0 && st.entries == 2));
  const ast::ParseCache::Stats est =
      dynamic_cast<const ast::AnchorStage*>(editing.get())->cache()->stats();
  CHECK((est.misses == 1 && est.hits == 0 && est.edits == 1 && est.entries == 2));

  // cache_mb: 0 turns it off: every request parses.
  auto uncached = h.make(graph::Params({{"cache_mb", int64_t{0}}}));
  CHECK(dynamic_cast<const ast::AnchorStage*>(uncached.get())->cache() == nullptr);
  graph::Item a = task(s.source, at), b = task(s.source, at);
  REQUIRE(uncached->process(a) == 0u);
  REQUIRE(uncached->process(b) == 0u);
  CHECK(a.get<ast::AnchorFacet>().parse() == "parsed");
  CHECK(a.get<ast::AnchorFacet>().share_file() != b.get<ast::AnchorFacet>().share_file());
}

TEST_CASE("ast.anchor: a task without a file name is the cursor's file, its language found",
          "[ast][stage][unnamed]") {
  Harness h;
  auto stage = h.make();
  const std::string py = "def f(a):\n    return a + 1\n\ndef g():\n    pass\n";
  const nlohmann::json cursor = {{"offset", 20}};
  struct Case {
    nlohmann::json data;
    std::string language, from, path;
  };
  const std::vector<Case> cases = {
      // The task's language (an editor's id) decides.
      {{{"source", "int x;\n"}, {"cursor", {{"offset", 3}}}, {"language", "c++"}},
       "cpp",
       "task",
       "untitled.cc"},
      // Else the names of the files it sends.
      {{{"source", "x := 1\n"},
        {"cursor", {{"offset", 2}}},
        {"files",
         {{{"path", "a/b.go"}, {"source", "package b\n"}},
          {{"path", "c.go"}, {"source", "package c\n"}},
          {{"path", "README.md"}, {"source", "hi"}}}}},
       "go",
       "files",
       "untitled.go"},
      // Else the text.
      {{{"source", py}, {"cursor", cursor}}, "python", "text", "untitled.py"},
      // A language the task names but no grammar knows falls through to the text.
      {{{"source", py}, {"cursor", cursor}, {"language", "vimscript"}},
       "python",
       "text",
       "untitled.py"},
  };
  for (const Case& c : cases) {
    INFO(c.data.dump());
    graph::Item item = make_item(c.data);
    CHECK(stage->process(item) == 0u);
    const auto* tf = item.find<vsynth::stages::facets::TaskFileFacet>();
    REQUIRE(tf != nullptr);
    CHECK(tf->language == c.language);
    CHECK(tf->language_from == c.from);
    CHECK(tf->path == c.path);
    CHECK_FALSE(tf->named);
    const auto* a = item.find<ast::AnchorFacet>();
    REQUIRE(a != nullptr);
    CHECK(a->file().language().name() == c.language);
    CHECK(a->file().path() == c.path);
  }
}

TEST_CASE("ast.anchor: an unnamed text of no known language is an anonymous buffer, not a failure",
          "[ast][stage][unnamed]") {
  Harness h;
  auto stage = h.make();
  graph::Item item = make_item({{"source", "hello there\nplain words\n"},
                                {"cursor", {{"offset", 5}}},
                                {"language", "markdown"}});
  CHECK(stage->process(item) == 0u);
  CHECK(item.find<ast::AnchorFacet>() == nullptr);
  CHECK(vsynth::stages::facets::anonymous_buffer(item));
  const auto* tf = item.find<vsynth::stages::facets::TaskFileFacet>();
  REQUIRE(tf != nullptr);
  CHECK(tf->language_from == "none");
  CHECK(tf->to_json()["language"].is_null());
  // A named file keeps its rules: its extension decides, an unknown one fails.
  graph::Item named =
      make_item({{"path", "x.py"}, {"source", "x = 1\n"}, {"cursor", {{"offset", 1}}}});
  CHECK(stage->process(named) == 0u);
  CHECK(named.get<vsynth::stages::facets::TaskFileFacet>().language_from == "path");
  CHECK(named.get<vsynth::stages::facets::TaskFileFacet>().named);
}
