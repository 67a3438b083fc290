// Prompt assembly and code extraction for generate.llm, without a model.
#include <catch2/catch.hpp>

#include "stages/facets/context.h"
#include "stages/generation/answer_program.h"
#include "stages/generation/generate_stage.h"
#include "stages/generation/prompt.h"
#include "tests/generation/gen_test_util.h"

namespace gen = vsynth::stages::generation;
namespace graph = vsynth::graph;
using vsynth::kernels::Tokenizer;

namespace {

graph::Item item(nlohmann::json data) {
  return graph::Item(graph::Task{"t", std::move(data)}, 0);
}

// A facet that only calls itself `context`: not context.prune's (stages/facets/context.h).
struct ForeignContextFacet : graph::Facet {
  static constexpr std::string_view kName = "context";
  nlohmann::json to_json() const override { return {{"text", "def stranger():\n    pass\n"}}; }
};

// context.prune's facet over `text` (stored in the item's arena), the cursor at `cursor`.
void add_context(graph::Item& it, std::string_view text, int64_t cursor = -1) {
  it.emplace<vsynth::stages::facets::ContextFacet>().set_text(it.arena().store(text), cursor);
}

Tokenizer chat_tok(std::vector<std::string> control) {
  return Tokenizer(
      vsynth::gentest::spm_vocab({"a", "b", "user", "model", "\xE2\x96\x81"}, control));
}

}  // namespace

TEST_CASE("prompt parts: auto picks complete for a prefix, instruct for a prompt",
          "[generation][prompt]") {
  gen::PromptSettings s;
  auto he = item({{"prompt", "def f(x):\n"}, {"entry_point", "f"}});
  gen::PromptParts p = gen::gather_prompt_parts(he, s);
  CHECK(p.mode == gen::PromptMode::Instruct);
  CHECK(p.code == "def f(x):\n");
  CHECK(p.entry_point == "f");
  CHECK(p.language == "python");

  auto pre = item({{"prefix", "int main() {"}, {"suffix", "}"}, {"language", "c"}});
  p = gen::gather_prompt_parts(pre, s);
  CHECK(p.mode == gen::PromptMode::Complete);
  CHECK(p.prefix == "int main() {");
  CHECK(p.suffix == "}");
  CHECK(p.language == "c");

  s.mode = "complete";  // a HumanEval prompt continued as plain text
  p = gen::gather_prompt_parts(he, s);
  CHECK(p.mode == gen::PromptMode::Complete);
  CHECK(p.prefix == "def f(x):\n");
  s.mode = "instruct";  // a prefix task asked for in words
  p = gen::gather_prompt_parts(pre, s);
  CHECK(p.mode == gen::PromptMode::Instruct);
  CHECK(p.code == "int main() {");

  auto nothing = item({{"id", "x"}});
  s.mode = "auto";
  CHECK_THROWS_WITH(gen::gather_prompt_parts(nothing, s), Catch::Contains("/instruction"));
}

TEST_CASE("prompt parts: feedback (latest, tail-trimmed) and the context facet",
          "[generation][prompt]") {
  auto it = item({{"instruction", "Sort a list."}});
  it.add_feedback("validate", "fail", "first");
  it.add_feedback("validate", "fail", "second");
  it.add_feedback("validate", "fail", std::string(100, 'x') + "TAIL");
  add_context(it, "def helper():\n    pass\n");
  gen::PromptSettings s;
  s.feedback_max_bytes = 10;
  const gen::PromptParts p = gen::gather_prompt_parts(it, s);
  REQUIRE(p.feedback.size() == 2);
  CHECK(p.feedback[0] == "second");
  CHECK(p.feedback[1] == "...xxxxxxTAIL");
  CHECK(p.context == "def helper():\n    pass\n");

  const std::string m = gen::instruct_message(p);
  CHECK(m.find("Sort a list.") != std::string::npos);
  CHECK(m.find("def helper()") < m.find("Sort a list."));
  CHECK(m.find("second") != std::string::npos);
  CHECK(m.find("```python") != std::string::npos);

  gen::PromptParts c;
  c.mode = gen::PromptMode::Complete;
  c.prefix = "x = ";
  c.feedback = {"NameError: y\nline 2"};
  Tokenizer tok = chat_tok({"<start_of_turn>", "<end_of_turn>"});
  const gen::Prompt r = gen::render_prompt(c, tok, 1000);
  CHECK(r.format == "prefix");
  CHECK(r.text.find("# NameError: y\n# line 2\n") != std::string::npos);
  CHECK(r.text.ends_with("x = "));
}

TEST_CASE("a context holding the cursor replaces the text around it", "[generation][prompt]") {
  auto it = item({{"prefix", "def f():\n    "}, {"suffix", "\n"}});
  add_context(it, "# file: b.py\ndef g(): ...\n# file: a.py\ndef f():\n    \n", 52);
  const gen::PromptParts p = gen::gather_prompt_parts(it, {});
  CHECK(p.mode == gen::PromptMode::Complete);
  CHECK(p.prefix == "# file: b.py\ndef g(): ...\n# file: a.py\ndef f():\n    ");
  CHECK(p.suffix == "\n");
  CHECK(p.context.empty());
}

TEST_CASE("the context is read as context.prune's typed facet, never through its JSON",
          "[generation][prompt]") {
  auto it = item({{"instruction", "Sort a list."}});
  it.emplace<ForeignContextFacet>();
  CHECK(gen::gather_prompt_parts(it, {}).context.empty());
}

TEST_CASE("chat templates follow the vocabulary, and task text never becomes control tokens",
          "[generation][prompt]") {
  Tokenizer gemma = chat_tok({"<start_of_turn>", "<end_of_turn>"});
  CHECK(gen::detect_chat_template(gemma) == gen::ChatTemplate::Gemma);
  const auto ids = gen::render_chat(gemma, "ab", gen::ChatTemplate::Gemma);
  // Same as encoding the whole template text with special tokens parsed.
  CHECK(ids == gemma.encode("<start_of_turn>user\nab<end_of_turn>\n<start_of_turn>model\n"));
  CHECK(ids.front() == gemma.bos());
  // An injected marker in the message stays text.
  const auto inj = gen::render_chat(gemma, "<end_of_turn>", gen::ChatTemplate::Gemma);
  const auto end_of_turn = *gemma.find("<end_of_turn>");
  CHECK(std::count(inj.begin(), inj.end(), end_of_turn) == 1);

  CHECK(gen::detect_chat_template(chat_tok({"<|im_start|>", "<|im_end|>"})) ==
        gen::ChatTemplate::ChatML);
  CHECK(gen::detect_chat_template(chat_tok({"<|start_header_id|>", "<|eot_id|>"})) ==
        gen::ChatTemplate::Llama3);
  CHECK(gen::detect_chat_template(chat_tok({})) == gen::ChatTemplate::Llama2);

  gen::PromptParts p;
  p.instruction = "ab";
  const gen::Prompt r = gen::render_prompt(p, gemma, 1000);
  CHECK(r.format == "gemma");
  CHECK(r.text.starts_with("<s><start_of_turn>user\nab"));
  CHECK_THROWS_WITH(gen::render_prompt(p, gemma, 5), Catch::Contains("context_length"));
}

TEST_CASE("fill-in-the-middle when the vocabulary has FIM tokens, and left truncation",
          "[generation][prompt]") {
  Tokenizer fim = chat_tok({"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"});
  gen::PromptParts p;
  p.mode = gen::PromptMode::Complete;
  p.prefix = "ab";
  p.suffix = "ba";
  gen::Prompt r = gen::render_prompt(p, fim, 100);
  CHECK(r.format == "fim");
  CHECK(r.text == "<s><|fim_prefix|>ab<|fim_suffix|>ba<|fim_middle|>");

  p.suffix.clear();
  p.prefix = std::string(50, 'a');
  r = gen::render_prompt(p, fim, 10);  // keeps BOS and the 9 tokens nearest the cursor
  CHECK(r.tokens.size() == 10);
  CHECK(r.tokens.front() == fim.bos());
}

TEST_CASE("code extraction from chat answers", "[generation][extract]") {
  CHECK(gen::extract_code("Sure!\n```python\ndef f():\n    return 1\n```\nDone.", "python") ==
        "def f():\n    return 1\n");
  // The block naming the language wins over an earlier one.
  CHECK(gen::extract_code("```text\nout\n```\n```py\nx = 1\n```\n", "python") == "x = 1\n");
  // No language match: the first block.
  CHECK(gen::extract_code("```\ny = 2\n```", "python") == "y = 2\n");
  // Unterminated (the budget ran out): to the end.
  CHECK(gen::extract_code("```python\ndef g():\n    pa", "python") == "def g():\n    pa");
  // No fence: the whole answer.
  CHECK(gen::extract_code("return 3", "python") == "return 3");
  CHECK(gen::extract_code("~~~cpp\nint x;\n~~~", "cpp") == "int x;\n");
}

TEST_CASE("program assembly", "[generation][extract]") {
  gen::PromptParts c;
  c.mode = gen::PromptMode::Complete;
  c.prefix = "a = ";
  c.suffix = "\nb = 2\n";
  CHECK(gen::assemble_program(c, "1") == "a = 1\nb = 2\n");

  gen::PromptParts i;
  i.mode = gen::PromptMode::Instruct;
  i.code = "from typing import List\n\ndef f(xs: List[int]) -> int:\n    \"\"\"Sum.\"\"\"\n";
  i.entry_point = "f";
  // The whole function: missing imports go in front.
  CHECK(gen::assemble_program(i, "def f(xs):\n    return sum(xs)\n") ==
        "from typing import List\n\ndef f(xs):\n    return sum(xs)\n");
  // Only a body: appended to the given code.
  CHECK(gen::assemble_program(i, "    return sum(xs)\n") == i.code + "    return sum(xs)\n");
}

TEST_CASE("candidate seeds and the best candidate", "[generation]") {
  CHECK(gen::candidate_seed(1, "a", 1, 0) == gen::candidate_seed(1, "a", 1, 0));
  CHECK(gen::candidate_seed(1, "a", 1, 0) != gen::candidate_seed(1, "a", 1, 1));
  CHECK(gen::candidate_seed(1, "a", 1, 0) != gen::candidate_seed(1, "a", 2, 0));
  CHECK(gen::candidate_seed(1, "a", 1, 0) != gen::candidate_seed(1, "b", 1, 0));
  CHECK(gen::candidate_seed(1, "a", 1, 0) != gen::candidate_seed(2, "a", 1, 0));

  gen::CandidatesFacet f;
  CHECK(f.best() == nullptr);
  f.candidates.resize(2);
  f.candidates[0].tokens = 10;
  f.candidates[0].logprob_sum = -5;  // -0.5 per token
  f.candidates[1].tokens = 2;
  f.candidates[1].logprob_sum = -2;  // -1 per token
  CHECK(f.best() == &f.candidates[0]);
  const auto j = f.to_json();
  CHECK(j["candidates"].size() == 2);
  CHECK_FALSE(j.contains("prompt"));
}

TEST_CASE("the unit enclosing the cursor starts at its top-level line", "[generation][prompt]") {
  CHECK(gen::top_level_line("import os\n\ndef f():\n    x = 1\n    # c\n    ", "# ") ==
        std::string("import os\n\n").size());
  CHECK(gen::top_level_line("int g() {\n}\n// note\nint main() {\n  int x;\n", "// ") ==
        std::string("int g() {\n}\n// note\n").size());
  CHECK(gen::top_level_line("    indented only\n", "# ") == 0);
  CHECK(gen::top_level_line("", "# ") == 0);
}

TEST_CASE(
    "a retry's completion prompt keeps the first attempt's start: feedback goes above "
    "the unit",
    "[generation][prompt]") {
  const std::string file =
      "import a\n\ndef helper():\n    return 1\n\ndef target(x):\n    y = helper()\n    return ";
  auto first = item({{"prefix", file}, {"language", "python"}});
  auto retry = item({{"prefix", file}, {"language", "python"}});
  retry.add_feedback("validate", "fail", "AssertionError: target(2) == 3");
  add_context(first, "# file: b.py\ndef b():\n    pass\n");
  add_context(retry, "# file: b.py\ndef b():\n    pass\n");
  gen::PromptSettings s;
  const gen::PromptParts p1 = gen::gather_prompt_parts(first, s);
  const gen::PromptParts p2 = gen::gather_prompt_parts(retry, s);
  CHECK(p1.unit_start == file.find("def target"));
  Tokenizer tok = chat_tok({"<start_of_turn>", "<end_of_turn>"});
  const gen::Prompt r1 = gen::render_prompt(p1, tok, 4000);
  const gen::Prompt r2 = gen::render_prompt(p2, tok, 4000);
  // The feedback sits right above `def target`, after the context and the rest of the file.
  const std::size_t fb = r2.text.find(
      "# A previous attempt at the code below failed:\n"
      "# AssertionError: target(2) == 3\ndef target(x):");
  REQUIRE(fb != std::string::npos);
  CHECK(r2.text.find("def b()") < r2.text.find("def helper()"));
  CHECK(r2.text.find("def helper()") < fb);
  // Token for token, attempt 2 starts with everything attempt 1 has before the unit.
  const gen::Prompt head = gen::render_prompt(
      [&] {
        gen::PromptParts h = p1;
        h.prefix = file.substr(0, p1.unit_start);
        return h;
      }(),
      tok, 4000);
  REQUIRE(r1.tokens.size() > head.tokens.size());
  CHECK(std::equal(head.tokens.begin(), head.tokens.end(), r1.tokens.begin()));
  CHECK(std::equal(head.tokens.begin(), head.tokens.end(), r2.tokens.begin()));
  CHECK(r1.text.ends_with("return "));
  CHECK(r2.text.ends_with("return "));
}

TEST_CASE("completion truncation drops whole KV blocks, so a growing prefix keeps its start",
          "[generation][prompt]") {
  Tokenizer tok = chat_tok({});
  gen::PromptParts p;
  p.mode = gen::PromptMode::Complete;
  p.prefix = std::string(200, 'a');  // 200 tokens
  const gen::Prompt r1 = gen::render_prompt(p, tok, 100);
  CHECK(r1.tokens.size() == 1 + 200 - 128);  // 101 over: 4 blocks (128 tokens) dropped
  p.prefix += "b";                           // one more token typed
  const gen::Prompt r2 = gen::render_prompt(p, tok, 100);
  CHECK(r2.tokens.size() == r1.tokens.size() + 1);
  CHECK(std::equal(r1.tokens.begin(), r1.tokens.end(), r2.tokens.begin()));
}
