// BM25 terms: identifier splitting, lowercasing, keyword and short-term removal.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "stages/retrieval/terms.h"

namespace vsynth::stages::retrieval {
namespace {

using Terms = std::vector<std::string>;

TEST_CASE("terms split snake_case, camelCase, PascalCase and digits, keeping the whole",
          "[retrieval]") {
  CHECK(bm25_terms("get_user_name") == Terms{"get_user_name", "get", "user", "name"});
  CHECK(bm25_terms("parseHTTPResponse") == Terms{"parsehttpresponse", "parse", "http", "response"});
  CHECK(bm25_terms("HTTPServer") == Terms{"httpserver", "http", "server"});
  CHECK(bm25_terms("utf8Decode") == Terms{"utf8decode", "utf", "decode"});
  CHECK(bm25_terms("Cart") == Terms{"cart"});
  CHECK(bm25_terms("__init__") == Terms{"__init__", "init"});
  // One-character and all-digit terms are dropped; punctuation separates words.
  CHECK(bm25_terms("x = a.b + 42 * total_x") == Terms{"total_x", "total"});
}

TEST_CASE("each language's keywords are dropped from its chunks, not from queries", "[retrieval]") {
  CHECK(bm25_terms("def total(self): return self.items", "python") == Terms{"total", "items"});
  CHECK(bm25_terms("def total(self): return self.items") ==
        Terms{"def", "total", "self", "return", "self", "items"});
  CHECK(bm25_terms("pub fn new() -> Self { Self { items: vec![] } }", "rust") ==
        Terms{"new", "items", "vec"});
  CHECK(bm25_terms("static const int count = 0;", "c") == Terms{"count"});
  CHECK(bm25_terms("for (const x of items) { yield x; }", "javascript") == Terms{"items", "yield"});
  CHECK(bm25_terms("for (const x of items) { yield x; }", "typescript") == Terms{"items"});
  CHECK(bm25_terms("func (s *Server) Run() error { return nil }", "go") == Terms{"server", "run"});
  CHECK(bm25_terms("public static void main(String[] args)", "java") ==
        Terms{"main", "string", "args"});
  CHECK(bm25_terms("template <typename T> class Box", "cpp") == Terms{"box"});
  CHECK(is_keyword("cpp", "int"));  // C's keywords are C++'s
  CHECK_FALSE(is_keyword("python", "print"));
  CHECK_FALSE(is_keyword("cobol", "if"));
}

TEST_CASE("count_terms gives each distinct term its count, sorted", "[retrieval]") {
  using Counts = std::vector<std::pair<std::string, uint32_t>>;
  CHECK(count_terms({"b", "a", "b", "c", "b"}) == Counts{{"a", 1}, {"b", 3}, {"c", 1}});
  CHECK(count_terms({}).empty());
}

}  // namespace
}  // namespace vsynth::stages::retrieval
