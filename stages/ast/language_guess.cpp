#include "stages/ast/language_guess.h"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "base/strings.h"

namespace vsynth::stages::ast {

namespace {

struct Alias {
  std::string_view alias, name;
};
constexpr std::array kAliases = {
    Alias{"py", "python"},
    Alias{"python3", "python"},
    Alias{"c++", "cpp"},
    Alias{"cxx", "cpp"},
    Alias{"cc", "cpp"},
    Alias{"objective-c", "c"},
    Alias{"golang", "go"},
    Alias{"js", "javascript"},
    Alias{"javascriptreact", "javascript"},
    Alias{"jsx", "javascript"},
    Alias{"node", "javascript"},
    Alias{"ts", "typescript"},
    Alias{"typescriptreact", "tsx"},
    Alias{"rs", "rust"},
};

// Line-start markers per language (after the line's indentation).
struct Markers {
  std::string_view language;
  std::array<std::string_view, 8> starts;
};
constexpr std::array kMarkers = {
    Markers{"python", {"def ", "import ", "from ", "class ", "elif ", "self.", "async def ", "@"}},
    Markers{"go", {"package ", "func ", "import (", "type ", "defer ", "go func", ":= ", "var ("}},
    Markers{"rust", {"fn ", "pub fn ", "let mut ", "impl ", "use ", "mod ", "pub struct ", "#["}},
    Markers{"c",
            {"#include <", "#include \"", "#define ", "typedef ", "struct ", "static ", "#ifdef ",
             "#ifndef "}},
    Markers{"cpp",
            {"namespace ", "template <", "template<", "std::", "using namespace ", "class ",
             "#include <iostream>", "public:"}},
    Markers{"java",
            {"public class ", "package ", "import java.", "private ", "public static ", "@Override",
             "protected ", "System.out"}},
    Markers{"javascript",
            {"function ", "const ", "let ", "module.exports", "export default ", "require(",
             "console.", "var "}},
    Markers{"typescript",
            {"interface ", "export interface ", "type ", "export type ", "import type ",
             "private readonly ", "public constructor", "enum "}},
};

const Language* shebang_language(std::string_view line) {
  if (!line.starts_with("#!")) return nullptr;
  const auto has = [&](std::string_view w) { return line.find(w) != std::string_view::npos; };
  if (has("python")) return Language::find("python");
  if (has("ts-node") || has("deno") || has("bun")) return Language::find("typescript");
  if (has("node")) return Language::find("javascript");
  return nullptr;
}

}  // namespace

const Language* language_for_name(std::string_view name) {
  const std::string n = base::ascii_lower(name);
  if (const Language* l = Language::find(n)) return l;
  for (const Alias& a : kAliases) {
    if (a.alias == n) return Language::find(a.name);
  }
  return nullptr;
}

const Language* language_from_paths(std::span<const std::string> paths) {
  std::vector<std::pair<const Language*, int>> counts;  // in order first seen
  for (const std::string& p : paths) {
    const Language* l = Language::find_for_path(p);
    if (!l) continue;
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == l; });
    if (it == counts.end()) {
      counts.emplace_back(l, 1);
    } else {
      ++it->second;
    }
  }
  const Language* best = nullptr;
  int most = 0;
  for (const auto& [l, n] : counts) {
    if (n > most) {
      best = l;
      most = n;
    }
  }
  return best;
}

const Language* detect_language(std::string_view text) {
  const std::size_t first_end = text.find('\n');
  if (const Language* l = shebang_language(text.substr(0, first_end))) return l;
  std::array<int, kMarkers.size()> score{};
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    const std::size_t indent = line.find_first_not_of(" \t");
    line = indent == std::string_view::npos ? std::string_view() : line.substr(indent);
    for (std::size_t i = 0; i < kMarkers.size(); ++i) {
      for (std::string_view m : kMarkers[i].starts) {
        if (!m.empty() && line.starts_with(m)) {
          ++score[i];
          break;
        }
      }
    }
    // Python's block opener: a line ending in ':' that is not a C label or case.
    if (!line.empty() && line.back() == ':' && !line.starts_with("case ") &&
        !line.starts_with("default") && line.find(' ') != std::string_view::npos) {
      ++score[0];
    }
    at = end + 1;
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < score.size(); ++i) {
    if (score[i] > score[best]) best = i;
  }
  for (std::size_t i = 0; i < score.size(); ++i) {
    if (i != best && score[i] == score[best]) return nullptr;  // undecided
  }
  return score[best] >= 2 ? Language::find(kMarkers[best].language) : nullptr;
}

}  // namespace vsynth::stages::ast
