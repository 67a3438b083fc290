// context.prune counting with the tokenizer of a model.gguf resource (`model: m`): the budget
// is kept in that model's tokens and the facet names it; a tiny GGUF written here (the
// generation tests' writer), and the default model (tests/test_skip.h). Contradictory settings
// are clear errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "graph/pipeline.h"
#include "stages/context/token_counter.h"
#include "tests/generation/gen_test_util.h"
#include "tests/graph/test_kinds.h"
#include "tests/test_skip.h"

namespace graph = vsynth::graph;
namespace fs = std::filesystem;
using vsynth::stages::context::TokenizerCounter;

namespace {

// A few code pieces; everything else falls back to byte tokens, so this tokenizer counts far
// more tokens than the estimate does (a budget kept in the wrong unit would show).
const fs::path& tiny_model() {
  static const fs::path path = [] {
    const fs::path d = fs::path(VSYNTH_BINARY_DIR) / "context_test";
    fs::create_directories(d);
    const auto vocab = vsynth::gentest::spm_vocab(
        {"def", "return", "self", "\xe2\x96\x81", "(", ")", ":", "\n", "    ", "value", "x"});
    vsynth::gentest::write_tiny_model(d / "tiny_tok.gguf", vocab, 3, 512);
    return d / "tiny_tok.gguf";
  }();
  return path;
}

class OneTask : public graph::Source {
 public:
  explicit OneTask(nlohmann::json t) : task_{"t", std::move(t)} {}
  std::optional<graph::Task> next() override {
    if (done_) return std::nullopt;
    done_ = true;
    return task_;
  }

 private:
  graph::Task task_;
  bool done_ = false;
};

// A Python file of `n` small functions; the cursor in the middle one.
nlohmann::json task(int n) {
  std::string src;
  for (int i = 0; i < n; ++i) {
    src += "def helper_" + std::to_string(i) + "(value):\n    total = value * " +
           std::to_string(i) + " + helper_" + std::to_string(i > 0 ? i - 1 : 0) +
           "(value)\n    return total\n\n\n";
  }
  return {
      {"path", "m.py"}, {"source", src}, {"cursor", {{"line", 5 * (n / 2) + 2}, {"column", 5}}}};
}

nlohmann::json run_one(const std::string& yaml, nlohmann::json t) {
  const graph::Registry reg = vsynth::test::full_registry();
  graph::Pipeline p(vsynth::test::load_text(yaml, reg), reg);
  OneTask src(std::move(t));
  vsynth::test::VectorSink sink;
  graph::RunControl control;
  p.run(src, sink, control);
  REQUIRE(sink.records.size() == 1);
  return sink.records[0];
}

std::string pipeline(const fs::path& model, const std::string& prune_with) {
  return "resources:\n  m: { use: model.gguf, with: { path: \"" + model.string() +
         "\", threads: 1, context_length: 512 } }\n"
         "stages:\n  anchor: { use: ast.anchor }\n"
         "  prune: { use: context.prune, with: { " +
         prune_with + " } }\nedges:\n  - anchor -> prune -> out\n";
}

// The budget holds in the model's tokens: used_tokens is the model tokenizer's count of the
// text, within the budget, and the facet names the model.
void check_counts_with(const fs::path& model, uint32_t budget, const std::string& with) {
  const nlohmann::json rec =
      run_one(pipeline(model, "budget_tokens: " + std::to_string(budget) + with), task(40));
  INFO(rec.dump(2));
  REQUIRE(rec["status"] == "prune.ok");
  const nlohmann::json& ctx = rec["facets"]["context"];
  CHECK(ctx["tokenizer"] == "model:" + model.string());
  const std::string text = ctx["text"];
  const auto real = TokenizerCounter::from_gguf(model.string());
  CHECK(ctx["used_tokens"].get<uint32_t>() == real->count(text));
  CHECK(ctx["used_tokens"].get<uint32_t>() <= budget);
  CHECK(ctx["over_budget"] == false);
  CHECK(text.find("def helper_20(value):") != std::string::npos);  // the focus, whole
  // Pruned: the whole file would not fit.
  CHECK(real->count(task(40)["source"].get<std::string>()) > budget);
}

}  // namespace

TEST_CASE("context.prune counts with a model resource's tokenizer (tiny GGUF)",
          "[context][stage][tokens]") {
  check_counts_with(tiny_model(), 400, ", model: m");
  check_counts_with(tiny_model(), 400, ", model: m, tokenizer: model");
  // The tiny tokenizer spends far more tokens than the estimate on the same text, so the
  // context it allows is shorter than the estimate's at the same budget.
  const nlohmann::json est =
      run_one(pipeline(tiny_model(), "budget_tokens: 400"), task(40))["facets"]["context"];
  const nlohmann::json tiny = run_one(pipeline(tiny_model(), "budget_tokens: 400, model: m"),
                                      task(40))["facets"]["context"];
  CHECK(est["tokenizer"] == "estimate");  // auto without `model`
  CHECK(tiny["text"].get<std::string>().size() < est["text"].get<std::string>().size());
}

TEST_CASE("context.prune counts with the default model's tokenizer", "[context][stage][tokens]") {
  if (!vsynth::test::have_default_model()) return;
  const fs::path model = vsynth::test::default_model();
  check_counts_with(model, 256, ", model: m");
}

TEST_CASE("context.prune: contradictory tokenizer settings are clear errors",
          "[context][stage][tokens]") {
  const graph::Registry reg = vsynth::test::full_registry();
  auto build_error = [&](const std::string& yaml) {
    try {
      graph::Pipeline p(vsynth::test::load_text(yaml, reg), reg);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(build_error(pipeline(tiny_model(), "model: m, tokenizer: estimate")),
             Catch::Contains("`model: m` and `tokenizer: estimate` disagree"));
  CHECK_THAT(build_error(pipeline(tiny_model(), "model: m, tokenizer: gguf, gguf_path: x.gguf")),
             Catch::Contains("`model: m` and `tokenizer: gguf` disagree"));
  CHECK_THAT(build_error(pipeline(tiny_model(), "tokenizer: model")),
             Catch::Contains("`tokenizer: model` needs `model`"));
  CHECK_THAT(build_error(pipeline(tiny_model(), "model: nosuch")), Catch::Contains("nosuch"));
}
