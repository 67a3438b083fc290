// Every shipped pipeline that anchors a cursor (pipelines/*.yaml with ast.anchor), run through
// the graph API on editor-style requests: a named file, the same file unnamed (its language
// from the text, or from /language and the names in /files, chunks of one path included), and
// an anonymous buffer of no known language. None may fail: an unnamed file gets its context, an
// anonymous buffer passes the context stages untouched. complete.yaml needs the default model
// (tests/test_skip.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "graph/pipeline.h"
#include "graph/validate.h"
#include "stages/generation/line_stops.h"
#include "tests/graph/test_kinds.h"
#include "tests/test_skip.h"

namespace graph = vsynth::graph;
using nlohmann::json;

namespace {

const std::string kMain =
    "from util import helper\n\n\ndef run(x):\n    y = x + 1\n    return helper(y)\n\n\n"
    "def other():\n    pass\n";

std::vector<json> requests() {
  const std::size_t cursor = kMain.find("    return helper(y)") + 11;  // before "helper"
  const json base = {{"prefix", kMain.substr(0, cursor)},
                     {"suffix", kMain.substr(cursor)},
                     {"source", kMain},
                     {"cursor", {{"offset", cursor}}},
                     {"decode", {{"max_new_tokens", 8}}}};
  json named = base;
  named["id"] = "named";
  named["path"] = "main.py";
  json unnamed = base;
  unnamed["id"] = "unnamed";
  json with_files = base;
  with_files["id"] = "unnamed-files";
  with_files["language"] = "python";
  with_files["files"] = {{{"path", "util.py"}, {"source", "def helper(v):\n    return v * 2\n"}},
                         {{"path", "util.py"}, {"source", "def more(v):\n    return v\n"}}};
  const std::string text = "Dear reader,\nthe meeting is at noon.\n";
  const json anonymous = {{"id", "anonymous"},         {"prefix", text.substr(0, 5)},
                          {"suffix", text.substr(5)},  {"source", text},
                          {"cursor", {{"offset", 5}}}, {"decode", {{"max_new_tokens", 8}}}};
  return {named, unnamed, with_files, anonymous};
}

std::vector<json> run(const std::string& pipeline, std::vector<json> tasks = requests()) {
  const graph::Registry reg = vsynth::test::full_registry();
  graph::Pipeline p(
      graph::load_pipeline(std::string(VSYNTH_SOURCE_DIR) + "/pipelines/" + pipeline, reg), reg);
  vsynth::test::JsonTaskSource src(std::move(tasks), "id");
  vsynth::test::VectorSink sink;
  graph::RunControl control;
  p.run(src, sink, control);
  return sink.records;
}

std::vector<json> check(const std::string& pipeline, const std::string& last_stage) {
  std::vector<json> records = run(pipeline);
  REQUIRE(records.size() == 4);
  for (const json& rec : records) {
    const std::string id = rec["id"];
    INFO(pipeline << " " << id << ": " << rec.dump(1).substr(0, 3000));
    CHECK(rec["status"] == last_stage + ".ok");
    CHECK(rec["passed"] == true);
    CHECK_FALSE(rec.contains("error"));
    const json& tf = rec["facets"]["task_file"];
    if (id == "anonymous") {
      CHECK(tf["language"].is_null());
      CHECK_FALSE(rec["facets"].contains("anchor"));
    } else {
      CHECK(tf["language"] == "python");
      CHECK(tf["named"] == (id == "named"));
      CHECK(tf["path"] == (id == "named" ? "main.py" : "untitled.py"));
      CHECK(rec["facets"].contains("anchor"));
    }
  }
  return records;
}

}  // namespace

TEST_CASE("anchor.yaml with and without a file name", "[generation][ide]") {
  check("anchor.yaml", "anchor");
}

TEST_CASE("retrieve.yaml with and without a file name", "[generation][ide]") {
  check("retrieve.yaml", "retrieve");
}

TEST_CASE("context.yaml with and without a file name", "[generation][ide]") {
  check("context.yaml", "prune");
}

TEST_CASE("complete.yaml with and without a file name, on the default model",
          "[generation][ide][slow]") {
  if (!vsynth::test::have_default_model()) return;
  for (const json& rec : check("complete.yaml", "generate")) {
    const std::string id = rec["id"];
    INFO(id << ": " << rec.dump(1).substr(0, 3000));
    const json& c = rec["facets"]["candidates"];
    REQUIRE(c["candidates"].size() == 1);
    CHECK(c["candidates"][0]["tokens"].get<int>() >= 1);
    // Gemma 3 has no FIM tokens: the code after the cursor is shown above the unit.
    CHECK(c["format"] == "prefix");
    CHECK(c["suffix"] == "above");
    if (id != "anonymous") CHECK(c["n_indent"] == 4);  // block_stop: the cursor line's indent
  }
}

TEST_CASE("complete.yaml stops at the end of the cursor's block, as n_indent would cut it",
          "[generation][ide][stops][slow]") {
  if (!vsynth::test::have_default_model()) return;
  const std::string file =
      "def mean(values):\n    total = 0\n    for v in values:\n        total += v\n    \n"
      "\nclass Stats:\n    pass\n";
  const std::size_t cursor = file.find("    \n\nclass") + 4;
  json block = {
      {"id", "block"},  {"prefix", file.substr(0, cursor)}, {"suffix", file.substr(cursor)},
      {"source", file}, {"cursor", {{"offset", cursor}}},   {"decode", {{"max_new_tokens", 48}}}};
  json plain = block;  // the task's n_indent 0 turns block_stop's off
  plain["id"] = "plain";
  plain["decode"]["n_indent"] = 0;
  std::map<std::string, json> by_id;
  for (json& r : run("complete.yaml", {block, plain})) {
    const std::string id = r["id"];
    by_id[id] = std::move(r);
  }
  const json b = by_id["block"]["facets"]["candidates"];
  const json p = by_id["plain"]["facets"]["candidates"];
  INFO(b.dump(1) << "\n" << p.dump(1));
  CHECK(b["n_indent"] == 4);
  CHECK_FALSE(p.contains("n_indent"));
  const std::string bt = b["candidates"][0]["text"], pt = p["candidates"][0]["text"];
  CHECK_FALSE(vsynth::stages::generation::indent_cut(bt, 4));
  if (const auto at = vsynth::stages::generation::indent_cut(pt, 4)) {
    CHECK(bt == pt.substr(0, *at));
    CHECK(b["candidates"][0]["finish"] == "stop");
    CHECK(b["candidates"][0]["finish_detail"] == "n_indent 4");
  } else {
    CHECK(bt == pt);
  }
}
