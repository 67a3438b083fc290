#include "stages/generation/answer_program.h"

#include <vector>

namespace vsynth::stages::generation {

namespace {

bool names_language(std::string_view info, std::string_view lang) {
  // The info string's first word, lower-cased.
  std::size_t end = info.find_first_of(" \t{");
  std::string word(info.substr(0, end));
  for (char& c : word) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (word == lang) return true;
  if (lang == "python") return word == "py" || word == "python3";
  if (lang == "cpp") return word == "c++" || word == "cc" || word == "cxx";
  if (lang == "javascript") return word == "js";
  if (lang == "typescript") return word == "ts";
  if (lang == "rust") return word == "rs";
  return false;
}

struct Block {
  std::string_view info;
  std::string_view body;
};

// Fenced blocks: a line starting (after up to 3 spaces) with ``` or ~~~ opens one; a line
// starting with the same fence closes it.
std::vector<Block> fenced_blocks(std::string_view text) {
  std::vector<Block> blocks;
  std::size_t pos = 0;
  bool open = false;
  std::string_view fence;
  Block cur;
  std::size_t body_start = 0;
  while (pos <= text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    std::size_t indent = 0;
    while (indent < line.size() && indent < 3 && line[indent] == ' ') ++indent;
    std::string_view rest = line.substr(indent);
    if (!open) {
      if (rest.starts_with("```") || rest.starts_with("~~~")) {
        fence = rest.substr(0, 3);
        std::string_view info = rest.substr(3);
        while (!info.empty() && (info.front() == ' ' || info.front() == '`')) info.remove_prefix(1);
        while (!info.empty() && (info.back() == '\r' || info.back() == ' ')) info.remove_suffix(1);
        cur.info = info;
        body_start = eol + 1 <= text.size() ? eol + 1 : text.size();
        open = true;
      }
    } else if (rest.starts_with(fence)) {
      cur.body = text.substr(body_start, pos - body_start);
      blocks.push_back(cur);
      open = false;
    }
    if (eol == text.size()) break;
    pos = eol + 1;
  }
  if (open) {  // unterminated: runs to the end
    cur.body = text.substr(std::min(body_start, text.size()));
    blocks.push_back(cur);
  }
  return blocks;
}

// Import lines ("import x", "from x import y") at the top level of Python code.
std::vector<std::string_view> python_imports(std::string_view code) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < code.size()) {
    std::size_t eol = code.find('\n', pos);
    if (eol == std::string_view::npos) eol = code.size();
    std::string_view line = code.substr(pos, eol - pos);
    if (line.starts_with("import ") || line.starts_with("from ")) out.push_back(line);
    pos = eol + 1;
  }
  return out;
}

}  // namespace

std::string_view extract_code(std::string_view answer, std::string_view language) {
  const std::vector<Block> blocks = fenced_blocks(answer);
  for (const Block& b : blocks) {
    if (names_language(b.info, language)) return b.body;
  }
  if (!blocks.empty()) return blocks.front().body;
  return answer;
}

std::string assemble_program(const PromptParts& parts, std::string_view completion) {
  if (parts.mode == PromptMode::Complete) {
    std::string s;
    s.reserve(parts.prefix.size() + completion.size() + parts.suffix.size());
    s += parts.prefix;
    s += completion;
    s += parts.suffix;
    return s;
  }
  std::string code(completion);
  if (!parts.code.empty() && !parts.entry_point.empty() && parts.language == "python" &&
      code.find("def " + parts.entry_point) == std::string::npos) {
    std::string s = parts.code;  // the answer continues the given function's body
    if (!s.empty() && s.back() != '\n') s += '\n';
    return s + code;
  }
  if (parts.language == "python" && !parts.code.empty()) {
    std::string missing;
    for (std::string_view imp : python_imports(parts.code)) {
      if (code.find(imp) == std::string::npos) {
        missing += imp;
        missing += '\n';
      }
    }
    if (!missing.empty()) code = missing + "\n" + code;
  }
  return code;
}

}  // namespace vsynth::stages::generation
