// BM25 terms of a text: every identifier or word, lowercased, and the parts it splits into
// at snake_case underscores, camelCase / PascalCase humps (HTTPServer -> http, server) and
// letter/digit boundaries (utf8 -> utf). An identifier that splits keeps its whole form too
// (get_user_name -> get_user_name, get, user, name), so an exact name matches better than
// its parts. Dropped: terms of one character, terms of digits only, and, when `language` is
// given (an ast language name), that language's keywords. Non-ASCII bytes count as letters
// (words of comments in other scripts stay whole).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vsynth::stages::retrieval {

// The terms in text order, repeated as often as they occur.
std::vector<std::string> bm25_terms(std::string_view text, std::string_view language = {});

// Each distinct term with its count, sorted by term.
std::vector<std::pair<std::string, uint32_t>> count_terms(std::vector<std::string> terms);

// Whether `word` (lowercase) is a keyword of `language` ("python", "c", "cpp", "java",
// "javascript", "typescript", "tsx", "go", "rust"; other names have none).
bool is_keyword(std::string_view language, std::string_view word);

}  // namespace vsynth::stages::retrieval
