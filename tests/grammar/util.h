// Shared by the grammar tests: the recognisers driven over whole texts, the real code they must
// never reject (the shipped tasks' prompts and reference solutions, the example and test
// sources), and the default model's tokenizer.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/gguf/reader.h"
#include "kernels/tokenizer/gguf_vocab.h"
#include "kernels/tokenizer/tokenizer.h"
#include "stages/grammar/recognizer.h"
#include "tests/test_skip.h"

namespace vsynth::gramtest {

namespace fs = std::filesystem;
using stages::grammar::Language;

// The byte offset where `text` stops being a viable prefix (text.size() when it never does).
inline std::size_t dies_at(Language l, std::string_view text) {
  stages::grammar::SyntaxState s(l);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!stages::grammar::feed(s, text[i])) return i;
  }
  return text.size();
}
inline bool viable(Language l, std::string_view text) {
  return dies_at(l, text) == text.size();
}
inline bool whole(Language l, std::string_view text) {
  stages::grammar::SyntaxState s(l);
  return stages::grammar::feed(s, text) && stages::grammar::complete(s);
}

inline std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// One piece of real code: `given` (a task's prompt: "" for a whole file) followed by `code`.
struct RealCode {
  std::string name;
  Language language = Language::Python;
  std::string given, code;
};

// Every task with a reference solution in examples/tasks (prompt + solution, and prompt +
// solution + its test code), every source file in examples/ and tests/*/data (except those
// holding cursor markers), and completion tasks' sources.
inline std::vector<RealCode> real_code() {
  const fs::path root(VSYNTH_SOURCE_DIR);
  std::vector<RealCode> out;
  for (const auto& e : fs::directory_iterator(root / "examples/tasks")) {
    if (e.path().extension() != ".jsonl") continue;
    std::ifstream f(e.path());
    int line = 0;
    for (std::string l; std::getline(f, l);) {
      ++line;
      if (l.empty()) continue;
      const nlohmann::json t = nlohmann::json::parse(l);
      const std::string lang = t.value("language", "python");
      const std::optional<Language> L = stages::grammar::language_from_name(lang);
      if (!L) continue;
      const std::string name = e.path().filename().string() + ":" + std::to_string(line);
      if (t.contains("reference")) {
        out.push_back({name + " reference", *L, "", t["reference"].get<std::string>()});
      }
      if (t.contains("canonical_solution")) {
        out.push_back({name + " prompt+solution", *L, t.value("prompt", ""),
                       t["canonical_solution"].get<std::string>() + t.value("test", "")});
      }
      if (t.contains("source") && t.contains("path")) {
        const std::string path = t["path"].get<std::string>();
        const bool c = path.ends_with(".c") || path.ends_with(".h");
        if (c || path.ends_with(".py")) {
          out.push_back({name + " source", c ? Language::C : Language::Python, "",
                         t["source"].get<std::string>()});
        }
      }
    }
  }
  for (const fs::path& dir : {root / "examples", root / "tests"}) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const auto ext = e.path().extension();
      if (ext != ".py" && ext != ".c") continue;
      std::string text = read_file(e.path());
      if (text.find("<@") != std::string::npos) continue;  // a cursor-marked test input
      out.push_back({fs::relative(e.path(), root).string(),
                     ext == ".c" ? Language::C : Language::Python, "", std::move(text)});
    }
  }
  return out;
}

// The default model's tokenizer (Gemma 3: 262,144 tokens), loaded once; null when the model
// is absent and VSYNTH_ALLOW_MISSING_MODEL=1 (the test case then skips).
inline const kernels::Tokenizer* gemma_tokenizer() {
  static const std::unique_ptr<kernels::Tokenizer> tok =
      []() -> std::unique_ptr<kernels::Tokenizer> {
    if (!fs::exists(test::default_model())) return nullptr;
    const auto f = kernels::GgufFile::open(test::default_model());
    return std::make_unique<kernels::Tokenizer>(kernels::load_vocab(f));
  }();
  return tok.get();
}

}  // namespace vsynth::gramtest
