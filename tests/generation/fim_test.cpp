// Fill-in-the-middle prompts (stages/generation/prompt.h fim_format): the FIM tokens of each
// model family, found in synthetic GGUF vocabularies written here (the GGUF's
// tokenizer.ggml.fim_*_token_id keys first, then the known spellings), PSM and SPM order,
// repository-level packing of the task's files, and a model without FIM that shows the code
// after the cursor above the unit.
#include <catch2/catch.hpp>

#include <filesystem>

#include "kernels/gguf/reader.h"
#include "kernels/gguf/writer.h"
#include "kernels/tokenizer/gguf_vocab.h"
#include "stages/generation/prompt.h"
#include "tests/generation/gen_test_util.h"

namespace fs = std::filesystem;
namespace gen = vsynth::stages::generation;
namespace kernels = vsynth::kernels;
using kernels::Tokenizer;

namespace {

// A GGUF holding only a tokenizer: the test vocabulary plus `control` tokens, and the
// fim_*_token_id keys named in `keys` (key suffix -> token text).
struct Vocabulary {
  Tokenizer tok;
  gen::GgufFimIds fim;  // read from the file
};
Vocabulary gguf_vocabulary(const std::string& name, const std::vector<std::string>& control,
                           const std::vector<std::pair<std::string, std::string>>& keys = {}) {
  const kernels::Vocab v = vsynth::gentest::spm_vocab(
      {"a", "b", "c", "\n", "x", ".", "p", "y", "/", "#", " ", "\xE2\x96\x81"}, control);
  kernels::GgufWriter w;
  w.add("general.architecture", "llama");
  vsynth::gentest::add_vocab(w, v);
  for (const auto& [key, text] : keys) {
    const auto it = std::find(v.tokens.begin(), v.tokens.end(), text);
    REQUIRE(it != v.tokens.end());
    w.add("tokenizer.ggml.fim_" + key + "_token_id", static_cast<uint32_t>(it - v.tokens.begin()));
  }
  const fs::path dir = fs::path(VSYNTH_BINARY_DIR) / "fim_test";
  fs::create_directories(dir);
  const fs::path path = dir / (name + ".gguf");
  w.write(path);
  const kernels::GgufFile f = kernels::GgufFile::open(path);
  Tokenizer tok(kernels::load_vocab(f));
  const gen::GgufFimIds fim = gen::read_gguf_fim(f, tok.size());
  return {std::move(tok), fim};
}

Tokenizer gguf_tokenizer(const std::string& name, const std::vector<std::string>& control) {
  return gguf_vocabulary(name, control).tok;
}

gen::PromptParts parts(std::string prefix, std::string suffix) {
  gen::PromptParts p;
  p.mode = gen::PromptMode::Complete;
  p.prefix = std::move(prefix);
  p.suffix = std::move(suffix);
  return p;
}

}  // namespace

TEST_CASE("FIM tokens of each family, from the GGUF's keys first, then by spelling",
          "[generation][prompt][fim]") {
  struct Case {
    std::string family;
    std::vector<std::string> control;
    std::string expect;  // the prompt for prefix "ab", suffix "ba"
  };
  const std::vector<Case> cases = {
      {"qwen",
       {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|repo_name|>", "<|file_sep|>"},
       "<s><|fim_prefix|>ab<|fim_suffix|>ba<|fim_middle|>"},
      {"qwen",
       {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|file_separator|>"},
       "<s><|fim_prefix|>ab<|fim_suffix|>ba<|fim_middle|>"},
      {"starcoder",
       {"<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<file_sep>"},
       "<s><fim_prefix>ab<fim_suffix>ba<fim_middle>"},
      {"codellama",
       {"\xE2\x96\x81<PRE>", "\xE2\x96\x81<SUF>", "\xE2\x96\x81<MID>"},
       "<s>\xE2\x96\x81<PRE>ab\xE2\x96\x81<SUF>ba\xE2\x96\x81<MID>"},
      {"deepseek",
       {"<\xEF\xBD\x9C"
        "fim\xE2\x96\x81"
        "begin\xEF\xBD\x9C>",
        "<\xEF\xBD\x9C"
        "fim\xE2\x96\x81"
        "hole\xEF\xBD\x9C>",
        "<\xEF\xBD\x9C"
        "fim\xE2\x96\x81"
        "end\xEF\xBD\x9C>"},
       "<s><\xEF\xBD\x9C"
       "fim\xE2\x96\x81"
       "begin\xEF\xBD\x9C>ab<\xEF\xBD\x9C"
       "fim\xE2\x96\x81"
       "hole\xEF\xBD\x9C>ba<\xEF\xBD\x9C"
       "fim\xE2\x96\x81"
       "end\xEF\xBD\x9C>"},
  };
  int n = 0;
  for (const Case& c : cases) {
    INFO(c.family);
    const Tokenizer tok = gguf_tokenizer(c.family + std::to_string(n++), c.control);
    const auto f = gen::fim_format(tok);
    REQUIRE(f);
    CHECK(f->family == c.family);
    CHECK_FALSE(f->suffix_first);
    const gen::Prompt r = gen::render_prompt(parts("ab", "ba"), tok, 100);
    CHECK(r.format == "fim");
    CHECK(r.suffix == "fim");
    CHECK(r.text == c.expect);
    if (c.family == "qwen" || c.family == "starcoder") CHECK(f->sep != kernels::kNoToken);
  }

  // The GGUF's keys win over any spelling: here they name tokens no family spells so.
  const Vocabulary keyed = gguf_vocabulary(
      "keys",
      {"<P>", "<S>", "<M>", "<R>", "<F>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
      {{"pre", "<P>"}, {"suf", "<S>"}, {"mid", "<M>"}, {"rep", "<R>"}, {"sep", "<F>"}});
  const auto f = gen::fim_format(keyed.tok, keyed.fim);
  REQUIRE(f);
  CHECK(f->family == "gguf");
  CHECK(keyed.tok.text(f->sep) == "<F>");
  CHECK(keyed.tok.text(f->repo) == "<R>");
  CHECK(gen::render_prompt(parts("ab", "ba"), keyed.tok, 100, {}, keyed.fim).text ==
        "<s><P>ab<S>ba<M>");
  // Without the keys the same vocabulary is the qwen family by its spellings.
  CHECK(gen::fim_format(keyed.tok)->family == "qwen");

  // Gemma 3's case: no FIM tokens at all.
  CHECK_FALSE(gen::fim_format(gguf_tokenizer("none", {"<start_of_turn>", "<end_of_turn>"})));
}

TEST_CASE("SPM order puts the suffix first", "[generation][prompt][fim]") {
  const Tokenizer tok = gguf_tokenizer("spm", {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"});
  gen::PromptParts p = parts("ab", "ba");
  p.fim_order = "spm";
  const gen::Prompt r = gen::render_prompt(p, tok, 100);
  CHECK(r.format == "fim-spm");
  CHECK(r.text == "<s><fim_suffix>ba<fim_prefix>ab<fim_middle>");
}

TEST_CASE("repository-level packing of the task's files with the file separator",
          "[generation][prompt][fim]") {
  const Tokenizer tok = gguf_tokenizer("repo", {"<|fim_prefix|>", "<|fim_suffix|>",
                                                "<|fim_middle|>", "<|repo_name|>", "<|file_sep|>"});
  gen::PromptParts p = parts("ab", "ba");
  p.path = "a.py";
  p.files = {{"b.py", "x.y\n"}, {"a.py", "ignored: the cursor's file"}, {"c.py", "cc"}};
  gen::Prompt r = gen::render_prompt(p, tok, 100);
  CHECK(r.text ==
        "<s><|file_sep|>b.py\nx.y\n<|file_sep|>c.py\ncc\n<|file_sep|>a.py\n"
        "<|fim_prefix|>ab<|fim_suffix|>ba<|fim_middle|>");
  CHECK(r.packed_files == 2);
  // A short budget drops whole files, the first listed first.
  const std::size_t full = r.tokens.size();
  r = gen::render_prompt(p, tok, full - 1);
  CHECK(r.packed_files == 1);
  CHECK(r.text.starts_with("<s><|file_sep|>c.py\ncc\n<|file_sep|>a.py\n"));
  // A vocabulary without a file separator packs nothing.
  const Tokenizer plain = gguf_tokenizer("nosep", {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"});
  r = gen::render_prompt(p, plain, 100);
  CHECK(r.packed_files == 0);
  CHECK(r.text == "<s><fim_prefix>ab<fim_suffix>ba<fim_middle>");
}

TEST_CASE("a model without FIM sees the rest of the unit after the cursor above it",
          "[generation][prompt][fim]") {
  const Tokenizer tok = gguf_tokenizer("nofim", {});
  gen::PromptParts p =
      parts("x = 1\ndef f(a):\n    b = a.", "c\n    return b\n\ndef g():\n    pass\n");
  p.language = "python";
  p.unit_start = 6;  // "def f"
  gen::Prompt r = gen::render_prompt(p, tok, 1000);
  CHECK(r.format == "prefix");
  CHECK(r.suffix == "above");
  CHECK(r.text ==
        "<s>x = 1\n# The code after the cursor:\n# c\n#     return b\ndef f(a):\n    b = a.");
  p.suffix_without_fim = "drop";
  r = gen::render_prompt(p, tok, 1000);
  CHECK(r.suffix == "dropped");
  CHECK(r.text == "<s>x = 1\ndef f(a):\n    b = a.");
  p.suffix = "";
  CHECK(gen::render_prompt(p, tok, 1000).suffix == "none");
  // The remainder: up to the next line at column 0, through a closing bracket there.
  CHECK(gen::suffix_remainder(") {\n  return 1;\n}\nint g() {}\n") == ") {\n  return 1;\n}\n");
  CHECK(gen::suffix_remainder("c\n    return b\n\ndef g():\n") == "c\n    return b\n\n");
}
