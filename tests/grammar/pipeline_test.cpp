// hook.grammar inside generate.llm on a tiny random GGUF: a test hook lets the model write only
// a handful of Python pieces (some of which make syntax errors) and the end of generation. With
// the grammar hook every candidate is a viable prefix and every one that ended parses with
// tree-sitter; without it some do not. With hooks [two, grammar, z3] both constraints act in
// list order. A `languages` entry it does not support is a validation error naming the
// supported ones; a task in another language ends its candidate with a verdict, not the run.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>

#include "graph/pipeline.h"
#include "graph/spec.h"
#include "stages/facets/hook.h"
#include "stages/validation/checks.h"
#include "tests/generation/gen_test_util.h"
#include "tests/grammar/util.h"
#include "tests/graph/test_kinds.h"

namespace fs = std::filesystem;
namespace graph = vsynth::graph;
namespace facets = vsynth::stages::facets;
namespace val = vsynth::stages::validation;
using vsynth::kernels::TokenId;

namespace {

const std::string kSp = "\xE2\x96\x81";
std::string spm(const std::string& s) {
  std::string out;
  for (char c : s) out += c == ' ' ? kSp : std::string(1, c);
  return out;
}

// The pieces the model may write after `x = `, and two return lines for the spec task.
const std::vector<std::string> kPieces = {"(", ")", " 1", " +", "]", "\n", ":", " x", "'"};
const std::string kBadLine = "    return x\n";
const std::string kGoodLine = "    return max(lo, min(x, hi))\n";
const std::string kBrokenLine = "    return )\n";

const fs::path& tiny_model() {
  static const fs::path path = [] {
    fs::path d = fs::path(VSYNTH_BINARY_DIR) / "grammar_test";
    fs::create_directories(d);
    std::vector<std::string> pieces;
    for (const auto& p : kPieces) pieces.push_back(spm(p));
    for (const auto& p : {kBadLine, kGoodLine, kBrokenLine}) pieces.push_back(spm(p));
    vsynth::gentest::write_tiny_model(d / "tiny.gguf", vsynth::gentest::spm_vocab(pieces), 5, 1024);
    return d / "tiny.gguf";
  }();
  return path;
}

// Lets the model write only the listed pieces and the end of generation.
class OnlyResource : public facets::DecodingHook {
 public:
  explicit OnlyResource(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {}
  std::unique_ptr<vsynth::kernels::MaskHook> make(graph::Item&,
                                                  const facets::HookContext& ctx) override {
    std::vector<TokenId> ids{ctx.tokenizer.eos()};
    for (const auto& p : pieces_) ids.push_back(*ctx.tokenizer.find(spm(p)));
    return std::make_unique<vsynth::gentest::AllowOnly>(ids);
  }

 private:
  std::vector<std::string> pieces_;
};

std::vector<nlohmann::json> run(const std::string& yaml, std::vector<nlohmann::json> tasks) {
  graph::Registry reg = vsynth::test::full_registry();
  reg.add_resource(
      {"hook.pieces", "hook", "test: the expression pieces", {}},
      [](const graph::ResourceContext&) { return std::make_shared<OnlyResource>(kPieces); });
  reg.add_resource({"hook.lines", "hook", "test: three return lines", {}},
                   [](const graph::ResourceContext&) {
                     return std::make_shared<OnlyResource>(
                         std::vector<std::string>{kBadLine, kGoodLine, kBrokenLine});
                   });
  graph::Pipeline p(vsynth::test::load_text(yaml, reg), reg);
  vsynth::test::JsonTaskSource src(std::move(tasks));
  vsynth::test::VectorSink sink;
  graph::RunControl control;
  const graph::RunResult r = p.run(src, sink, control);
  CHECK(r.errors == 0);
  return sink.records;
}

std::string pipeline(const std::string& hooks, const std::string& grammar_with = "{}", int n = 16) {
  return "resources:\n  m: { use: model.gguf, with: { path: \"" + tiny_model().string() +
         "\", threads: 1, context_length: 512 } }\n"
         "  pieces: { use: hook.pieces }\n"
         "  lines: { use: hook.lines }\n"
         "  grammar: { use: hook.grammar, with: " +
         grammar_with +
         " }\n"
         "  z3: { use: hook.z3_forward, with: { max_backtracks: 4, timeout_ms: 20000 } }\n"
         "stages:\n"
         "  gen: { use: generate.llm, with: { model: m, hooks: [" +
         hooks + "], max_new_tokens: 10, n_candidates: " + std::to_string(n) +
         ", temperature: 1.0, top_k: 0, min_p: 0.0, seed: 3, max_hook_retries: 1000 } }\n"
         "edges: [ gen -> out ]\n";
}

nlohmann::json expr_task(const std::string& id, const std::string& language = "python") {
  return {{"task_id", id}, {"language", language}, {"prefix", "x = "}, {"suffix", ""}};
}

struct Tally {
  int candidates = 0, ended = 0, not_viable = 0, ended_unparsed = 0;
};

Tally tally(const nlohmann::json& record) {
  const val::Checker checker(val::CheckerConfig{});
  Tally t;
  for (const auto& c : record["facets"]["candidates"]["candidates"]) {
    ++t.candidates;
    const std::string code = c["code"].get<std::string>();
    if (!vsynth::gramtest::viable(vsynth::stages::grammar::Language::Python, code)) ++t.not_viable;
    if (c["finish"] != "eog") continue;
    ++t.ended;
    val::Program program;
    program.pieces = {code};
    if (checker.syntax(program, "python").status == val::Status::Fail) ++t.ended_unparsed;
  }
  return t;
}

}  // namespace

TEST_CASE("hook.grammar in generate.llm: candidates stay parseable, without it they do not",
          "[grammar][pipeline]") {
  const auto with = run(pipeline("pieces, grammar"), {expr_task("a"), expr_task("b")});
  REQUIRE(with.size() == 2);
  Tally w;
  for (const auto& r : with) {
    INFO(r.dump(1));
    const Tally t = tally(r);
    w.candidates += t.candidates;
    w.ended += t.ended;
    w.not_viable += t.not_viable;
    w.ended_unparsed += t.ended_unparsed;
    const auto& stats = r["facets"]["grammar_stats"];
    CHECK(stats["candidates"].size() == 16);
    CHECK(stats["rejections"].get<int>() >= 1);
    CHECK(stats["p99_token_us"].get<double>() >= stats["p50_token_us"].get<double>());
  }
  CHECK(w.candidates == 32);
  CHECK(w.not_viable == 0);
  CHECK(w.ended >= 4);
  CHECK(w.ended_unparsed == 0);

  const auto without = run(pipeline("pieces"), {expr_task("a"), expr_task("b")});
  Tally wo;
  for (const auto& r : without) {
    const Tally t = tally(r);
    wo.not_viable += t.not_viable;
    wo.ended_unparsed += t.ended_unparsed;
    CHECK_FALSE(r["facets"].contains("grammar_stats"));
  }
  CHECK(wo.not_viable >= 8);
  CHECK(wo.ended_unparsed >= 1);
}

TEST_CASE("hook.grammar: the same run gives the same candidates, alone or among others",
          "[grammar][pipeline]") {
  auto texts = [](const std::vector<nlohmann::json>& records, const std::string& id) {
    std::vector<std::string> out;
    for (const auto& r : records) {
      if (r["id"] != id) continue;
      for (const auto& c : r["facets"]["candidates"]["candidates"]) out.push_back(c["text"]);
    }
    return out;
  };
  const auto alone = run(pipeline("pieces, grammar", "{}", 4), {expr_task("a")});
  std::vector<nlohmann::json> many_tasks;
  for (int i = 0; i < 6; ++i)
    many_tasks.push_back(expr_task(i == 3 ? "a" : "m" + std::to_string(i)));
  const auto many = run(pipeline("pieces, grammar", "{}", 4), many_tasks);
  CHECK(texts(alone, "a") == texts(many, "a"));
  CHECK(texts(alone, "a").size() == 4);
}

TEST_CASE("hook.grammar with hook.z3_forward: syntax first, then the spec", "[grammar][pipeline]") {
  const nlohmann::json task = {
      {"task_id", "clamp"},
      {"language", "python"},
      {"entry_point", "clamp"},
      {"signature", "def clamp(x: int, lo: int, hi: int) -> int:"},
      {"prompt", "def clamp(x: int, lo: int, hi: int) -> int:\n"},
      {"prefix", "def clamp(x: int, lo: int, hi: int) -> int:\n"},
      {"spec",
       {{"requires", {"lo <= hi"}},
        {"ensures", {"lo <= result <= hi", "x < lo or x > hi or result == x"}}}}};
  const auto records = run(pipeline("lines, grammar, z3", "{}", 8), {task});
  REQUIRE(records.size() == 1);
  INFO(records[0].dump(1));
  const auto& f = records[0]["facets"];
  for (const auto& c : f["candidates"]["candidates"]) {
    CHECK(c["text"].get<std::string>().starts_with(kGoodLine));
  }
  CHECK(f["grammar_stats"]["rejections"].get<int>() >= 1);  // `return )` refused
  CHECK(f["constraint_stats"]["rollbacks"].get<int>() +
            f["constraint_stats"]["rejections"].get<int>() >=
        1);  // `return x` refuted
}

TEST_CASE("hook.grammar: unsupported languages, at load and per task", "[grammar][pipeline]") {
  graph::Registry reg = vsynth::test::full_registry();
  const std::string yaml =
      "resources:\n  g: { use: hook.grammar, with: { languages: [python, rust] } }\n"
      "stages:\n  s: { use: core.select }\nedges: [ s -> out ]\n";
  try {
    vsynth::test::load_text(yaml, reg);
    FAIL("a grammar hook for rust validated");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("rust") != std::string::npos);
    CHECK(what.find("python") != std::string::npos);
    CHECK(what.find("test.yaml:2:") != std::string::npos);
  }
  // A task in another language: its candidates stop with a verdict, the run goes on.
  const auto records = run(pipeline("pieces, grammar", "{ languages: [python] }", 2),
                           {expr_task("c-task", "c"), expr_task("py-task")});
  REQUIRE(records.size() == 2);
  for (const auto& r : records) {
    const auto& c = r["facets"]["candidates"]["candidates"][0];
    if (r["id"] == "c-task") {
      CHECK(c["finish"] == "hook");
      CHECK(c["finish_detail"] == "grammar: language `c` is not supported (supported: python)");
    } else {
      CHECK(c["finish"] != "hook");
    }
  }
}

TEST_CASE(
    "hook.grammar: a budget cut returns the last complete program, trim_incomplete: false "
    "the cut text",
    "[grammar][pipeline][trim]") {
  const std::vector<nlohmann::json> tasks{expr_task("a"), expr_task("b"), expr_task("c"),
                                          expr_task("d")};
  const auto trimmed = run(pipeline("pieces, grammar"), tasks);
  const auto cut = run(pipeline("pieces, grammar", "{ trim_incomplete: false }"), tasks);
  REQUIRE(trimmed.size() == 4);
  REQUIRE(cut.size() == 4);
  std::map<std::string, nlohmann::json> cut_by_id;
  for (const auto& r : cut) cut_by_id[r["id"]] = r;
  const val::Checker checker(val::CheckerConfig{});
  auto parses = [&](const nlohmann::json& c) {
    // Program holds views: the code string must outlive the check.
    const std::string code = c["code"].get<std::string>();
    val::Program program;
    program.pieces = {code};
    return checker.syntax(program, "python").status != val::Status::Fail;
  };
  int n_trimmed = 0, unparsed_with = 0, unparsed_without = 0;
  for (const auto& rec : trimmed) {
    const auto& with = rec["facets"]["candidates"]["candidates"];
    const auto& without = cut_by_id.at(rec["id"])["facets"]["candidates"]["candidates"];
    REQUIRE(with.size() == without.size());
    for (std::size_t i = 0; i < with.size(); ++i) {
      const auto& w = with[i];
      const auto& o = without[i];
      INFO(w.dump() << "\n" << o.dump());
      // The same generation: the trimmed text is a prefix of the cut one.
      CHECK(o["text"].get<std::string>().starts_with(w["text"].get<std::string>()));
      CHECK(w["finish"] == o["finish"]);
      CHECK_FALSE(o.contains("trimmed"));
      if (w["finish"] == "length") {
        unparsed_with += !parses(w);
        unparsed_without += !parses(o);
      }
      if (!w.contains("trimmed")) {
        CHECK(w["text"] == o["text"]);
        continue;
      }
      ++n_trimmed;
      CHECK(w["finish"] == "length");
      CHECK(w["trimmed"]["by"] == "grammar");
      CHECK(w["trimmed"]["tokens"].get<int>() == o["tokens"].get<int>() - w["tokens"].get<int>());
      CHECK(w["finish_detail"].get<std::string>().find("trimmed") != std::string::npos);
      CHECK(parses(w));  // tree-sitter: the whole program
      CHECK_FALSE(parses(o));
    }
    CHECK(rec["facets"]["grammar_stats"]["candidates"].size() == 16);
  }
  CHECK(n_trimmed >= 2);
  CHECK(unparsed_with < unparsed_without);
}
