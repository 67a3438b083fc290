#include "stages/retrieval/terms.h"

#include <algorithm>
#include <array>
#include <span>

#include "base/strings.h"

namespace vsynth::stages::retrieval {
namespace {

// Keywords (and the literals and builtin type names that read like them) per language: words
// every chunk of that language holds, which BM25 would weigh as noise. Sorted, for
// binary_search. Terms of one character are dropped anyway, so none appear here.
constexpr std::array<std::string_view, 37> kPython = {
    "and",    "as",   "assert", "async",  "await", "break",    "class", "cls",  "continue", "def",
    "del",    "elif", "else",   "except", "false", "finally",  "for",   "from", "global",   "if",
    "import", "in",   "is",     "lambda", "none",  "nonlocal", "not",   "or",   "pass",     "raise",
    "return", "self", "true",   "try",    "while", "with",     "yield"};
static_assert(std::is_sorted(kPython.begin(), kPython.end()));
constexpr std::array<std::string_view, 44> kC = {
    "auto",     "bool",   "break",    "case",   "char",     "const",    "continue", "default",
    "define",   "do",     "double",   "elif",   "else",     "endif",    "enum",     "extern",
    "false",    "float",  "for",      "goto",   "if",       "ifdef",    "ifndef",   "include",
    "inline",   "int",    "long",     "null",   "register", "restrict", "return",   "short",
    "signed",   "sizeof", "static",   "struct", "switch",   "true",     "typedef",  "union",
    "unsigned", "void",   "volatile", "while"};
static_assert(std::is_sorted(kC.begin(), kC.end()));
constexpr std::array<std::string_view, 40> kCppExtra = {
    "alignas",          "alignof",   "catch",         "class",       "const_cast",
    "consteval",        "constexpr", "constinit",     "decltype",    "delete",
    "dynamic_cast",     "explicit",  "final",         "friend",      "int64_t",
    "mutable",          "namespace", "new",           "noexcept",    "nullptr",
    "operator",         "override",  "private",       "protected",   "public",
    "reinterpret_cast", "size_t",    "static_assert", "static_cast", "std",
    "template",         "this",      "throw",         "try",         "typename",
    "uint32_t",         "uint64_t",  "uint8_t",       "using",       "virtual"};
static_assert(std::is_sorted(kCppExtra.begin(), kCppExtra.end()));
constexpr std::array<std::string_view, 50> kJava = {
    "abstract",   "assert",  "boolean",      "break",     "byte",      "case",   "catch",  "char",
    "class",      "const",   "continue",     "default",   "do",        "double", "else",   "enum",
    "extends",    "false",   "final",        "finally",   "float",     "for",    "goto",   "if",
    "implements", "import",  "instanceof",   "int",       "interface", "long",   "native", "new",
    "null",       "package", "private",      "protected", "public",    "return", "short",  "static",
    "super",      "switch",  "synchronized", "this",      "throw",     "throws", "true",   "try",
    "void",       "while"};
static_assert(std::is_sorted(kJava.begin(), kJava.end()));
constexpr std::array<std::string_view, 47> kJs = {
    "as",       "async",    "await",      "break",   "case",    "catch",      "class",
    "const",    "continue", "debugger",   "default", "delete",  "do",         "else",
    "enum",     "export",   "extends",    "false",   "finally", "for",        "from",
    "function", "if",       "implements", "import",  "in",      "instanceof", "interface",
    "let",      "new",      "null",       "of",      "private", "protected",  "public",
    "return",   "static",   "super",      "switch",  "this",    "throw",      "true",
    "try",      "typeof",   "undefined",  "var",     "void"};
static_assert(std::is_sorted(kJs.begin(), kJs.end()));
constexpr std::array<std::string_view, 14> kTsExtra = {
    "any",    "boolean",  "declare", "keyof", "module",  "namespace", "never",
    "number", "readonly", "string",  "type",  "unknown", "while",     "yield"};
static_assert(std::is_sorted(kTsExtra.begin(), kTsExtra.end()));
constexpr std::array<std::string_view, 32> kGo = {
    "bool",   "break",  "case",        "chan",      "const",  "continue", "default", "defer",
    "else",   "error",  "fallthrough", "false",     "for",    "func",     "go",      "goto",
    "if",     "import", "int",         "interface", "map",    "nil",      "package", "range",
    "return", "select", "string",      "struct",    "switch", "true",     "type",    "var"};
static_assert(std::is_sorted(kGo.begin(), kGo.end()));
constexpr std::array<std::string_view, 48> kRust = {
    "as",    "async",  "await",  "bool", "break", "const",  "continue", "crate",  "dyn",    "else",
    "enum",  "extern", "false",  "fn",   "for",   "i32",    "i64",      "if",     "impl",   "in",
    "let",   "loop",   "match",  "mod",  "move",  "mut",    "none",     "ok",     "option", "pub",
    "ref",   "result", "return", "self", "some",  "static", "str",      "string", "struct", "super",
    "trait", "true",   "type",   "u32",  "u64",   "unsafe", "use",      "where"};
static_assert(std::is_sorted(kRust.begin(), kRust.end()));

bool in(std::span<const std::string_view> sorted, std::string_view word) {
  return std::binary_search(sorted.begin(), sorted.end(), word);
}

bool is_word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c >= 0x80;
}
bool is_upper(unsigned char c) {
  return c >= 'A' && c <= 'Z';
}
bool is_lower(unsigned char c) {
  return (c >= 'a' && c <= 'z') || c >= 0x80;
}
bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

// The parts of one underscore-free run: a new part starts at lower->Upper, at the last Upper
// of a run of capitals followed by a lowercase letter (HTTPServer: HTTP|Server), and between
// letters and digits.
template <typename Emit>
void split_humps(std::string_view run, Emit&& emit) {
  std::size_t start = 0;
  for (std::size_t i = 1; i < run.size(); ++i) {
    const auto p = static_cast<unsigned char>(run[i - 1]);
    const auto c = static_cast<unsigned char>(run[i]);
    const bool next_lower = i + 1 < run.size() && is_lower(static_cast<unsigned char>(run[i + 1]));
    const bool cut = (is_lower(p) && is_upper(c)) || (is_upper(p) && is_upper(c) && next_lower) ||
                     (is_digit(p) != is_digit(c));
    if (cut) {
      emit(run.substr(start, i - start));
      start = i;
    }
  }
  emit(run.substr(start));
}

bool keep(std::string_view term, std::string_view language) {
  if (term.size() < 2) return false;
  if (std::all_of(term.begin(), term.end(), [](char c) { return is_digit(c); })) return false;
  return language.empty() || !is_keyword(language, term);
}

}  // namespace

bool is_keyword(std::string_view language, std::string_view word) {
  if (language == "python") return in(kPython, word);
  if (language == "c") return in(kC, word);
  if (language == "cpp") return in(kC, word) || in(kCppExtra, word);
  if (language == "java") return in(kJava, word);
  if (language == "javascript") return in(kJs, word);
  if (language == "typescript" || language == "tsx") return in(kJs, word) || in(kTsExtra, word);
  if (language == "go") return in(kGo, word);
  if (language == "rust") return in(kRust, word);
  return false;
}

std::vector<std::string> bm25_terms(std::string_view text, std::string_view language) {
  std::vector<std::string> out;
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!is_word_byte(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && is_word_byte(static_cast<unsigned char>(text[end]))) ++end;
    const std::string_view word = text.substr(i, end - i);
    i = end;
    // Parts: underscore-separated runs, each split at its humps.
    parts.clear();
    std::size_t s = 0;
    while (s <= word.size()) {
      const std::size_t u = std::min(word.find('_', s), word.size());
      if (u > s) {
        split_humps(word.substr(s, u - s),
                    [&](std::string_view p) { parts.push_back(base::ascii_lower(p)); });
      }
      s = u + 1;
    }
    std::string whole = base::ascii_lower(word);
    const bool split = parts.size() > 1 || (parts.size() == 1 && parts[0] != whole);
    if (split && keep(whole, language)) out.push_back(std::move(whole));
    for (std::string& p : parts) {
      if (keep(p, language)) out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<std::pair<std::string, uint32_t>> count_terms(std::vector<std::string> terms) {
  std::sort(terms.begin(), terms.end());
  std::vector<std::pair<std::string, uint32_t>> out;
  for (std::string& t : terms) {
    if (!out.empty() && out.back().first == t) {
      ++out.back().second;
    } else {
      out.emplace_back(std::move(t), 1);
    }
  }
  return out;
}

}  // namespace vsynth::stages::retrieval
