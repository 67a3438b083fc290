#include "stages/context/lang_style.h"

#include <fmt/format.h>

namespace vsynth::stages::context {

namespace {
constexpr LangStyle kPython{"#", "#", "...", true, "..."};
constexpr LangStyle kC{"//", "//", ";", false, "/* ... */"};
constexpr LangStyle kBraces{"//", "//", " { /* ... */ }", false, "/* ... */"};
constexpr LangStyle kRust{"//", "///", " { /* ... */ }", false, "/* ... */"};
}  // namespace

const LangStyle& style_for(std::string_view language) {
  if (language == "python") return kPython;
  if (language == "c" || language == "cpp") return kC;
  if (language == "rust") return kRust;
  return kBraces;  // go, java, javascript, typescript, tsx
}

std::string elision_marker(const LangStyle& style, std::string_view indent, uint32_t rows) {
  return fmt::format("{}{} ... {} line{} elided ...\n", indent, style.comment, rows,
                     rows == 1 ? "" : "s");
}

std::string file_header(const LangStyle& style, std::string_view path) {
  return fmt::format("{} file: {}\n", style.comment, path);
}

}  // namespace vsynth::stages::context
