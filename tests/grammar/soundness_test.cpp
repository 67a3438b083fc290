// Soundness token by token through the default model's tokenizer (Gemma 3, 262,144 tokens):
// for every shipped piece of real code, as the hook sees it in complete mode (after the task's
// prompt) and in instruct mode (a fenced block in a chat answer), at every token position the
// full mask never bans the token the real code continues with, the hook accepts that token,
// and the program may end where the code ends. Also: the word-class shortcut of the vocabulary
// walk agrees with trying every token one by one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "stages/grammar/program.h"
#include "stages/grammar/vocab_table.h"
#include "tests/grammar/util.h"

namespace g = vsynth::stages::grammar;
namespace k = vsynth::kernels;

namespace {

// Walks `text` token by token from `p`'s start; returns the first token the mask or the
// recogniser refused (text.size() for none), checking the end too.
std::string first_refusal(const g::Program& p, const g::VocabTable& table, const k::Tokenizer& tok,
                          const std::string& text) {
  k::EncodeOptions eo;
  eo.add_special = false;
  eo.parse_special = false;
  const std::vector<k::TokenId> ids = tok.encode(text, eo);
  g::ProgramState s = p.start();
  std::vector<g::ProgramState> scratch;
  std::vector<k::TokenId> dead;
  std::string done;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string piece = tok.piece(ids[i]);
    dead.clear();
    table.walk(p, s, scratch, dead);
    if (std::find(dead.begin(), dead.end(), ids[i]) != dead.end()) {
      return "masked token " + std::to_string(i) + " [" + piece + "] after: " + done;
    }
    if (!p.feed(s, piece)) return "refused token " + std::to_string(i) + " [" + piece + "]";
    done += piece;
  }
  if (!p.can_end(s)) return "cannot end after: " + done;
  return "";
}

}  // namespace

// ~10 s unloaded (a full-vocabulary walk per token of every piece of code, twice): [slow].
TEST_CASE("no shipped code is ever masked, token by token through the real tokenizer",
          "[grammar][soundness][slow]") {
  const k::Tokenizer* tok = vsynth::gramtest::gemma_tokenizer();
  if (!vsynth::test::have_default_model()) return;
  REQUIRE(tok);
  const g::VocabTable table(*tok);
  int checked = 0;
  for (const auto& rc : vsynth::gramtest::real_code()) {
    INFO(rc.name);
    // Complete mode: the prompt before the cursor, the code generated.
    g::Program::Shape cs;
    cs.language = rc.language;
    cs.prefix = rc.given;
    const g::Program complete(cs);
    REQUIRE_FALSE(complete.start_dead());
    CHECK(first_refusal(complete, table, *tok, rc.code) == "");
    // Instruct mode: a chat answer with the code in a fenced block, prose around it.
    g::Program::Shape is;
    is.language = rc.language;
    is.instruct = true;
    is.given_code = rc.given;
    const g::Program instruct(is);
    const std::string fence = rc.language == g::Language::C ? "```c\n" : "```python\n";
    std::string answer = "Here is the code (it works):\n\n" + fence + rc.code;
    if (!answer.ends_with('\n')) answer += '\n';
    answer += "```\n\nIt returns `x` when (x > 0.";
    CHECK(first_refusal(instruct, table, *tok, answer) == "");
    ++checked;
  }
  CHECK(checked >= 90);
}

TEST_CASE("the word-class walk equals trying every token", "[grammar][vocab]") {
  const k::Tokenizer* tok = vsynth::gramtest::gemma_tokenizer();
  if (!vsynth::test::have_default_model()) return;
  REQUIRE(tok);
  const g::VocabTable table(*tok);
  CHECK(table.vocab_size() == 262144);
  CHECK(table.classed_tokens() > 240000);  // most of the vocabulary is words
  CHECK(table.classes() < 100);
  const std::vector<std::pair<g::Language, std::string>> prefixes = {
      {g::Language::Python, "def f(x):\n    return (x"},
      {g::Language::Python, "def f(x):\n"},
      {g::Language::Python, "def f(x):\n    if x:\n        return 1\n    "},
      {g::Language::Python, "x = 'ab"},
      {g::Language::Python, "x = f\"{a:"},
      {g::Language::Python, "def"},
      {g::Language::Python, "x = 1 \\"},
      {g::Language::Python, "x = ''"},
      {g::Language::C, "int f(int x) {\n  return x"},
      {g::Language::C, "int f() { /* a"},
      {g::Language::C, "#define X"},
  };
  std::vector<g::ProgramState> scratch;
  for (const auto& [lang, prefix] : prefixes) {
    INFO(prefix);
    g::Program::Shape sh;
    sh.language = lang;
    sh.prefix = prefix;
    const g::Program p(sh);
    std::vector<k::TokenId> dead;
    table.walk(p, p.start(), scratch, dead);
    std::set<k::TokenId> walked(dead.begin(), dead.end());
    std::set<k::TokenId> each;
    for (std::size_t t = 0; t < tok->size(); ++t) {
      const auto id = static_cast<k::TokenId>(t);
      if (tok->is_eog(id)) continue;
      g::ProgramState s = p.start();
      if (!p.feed(s, tok->piece(id))) each.insert(id);
    }
    CHECK(walked == each);
    CHECK(walked.size() == dead.size());  // no token listed twice
  }
}
