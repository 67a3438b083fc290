// Synthetic repositories for the index tests: Python files of small functions whose names
// and bodies use words of their own, so lexical and dense queries have clear answers.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "stages/retrieval/index.h"

namespace vsynth::stages::retrieval::test {

inline const std::vector<std::string>& vocabulary() {
  static const std::vector<std::string> words = {
      "invoice", "ledger",  "parser",  "socket", "buffer", "render",  "shader", "cache",
      "token",   "matrix",  "vector",  "string", "stream", "thread",  "mutex",  "queue",
      "graph",   "node",    "edge",    "weight", "budget", "price",   "tax",    "cart",
      "user",    "account", "session", "cookie", "header", "payload", "schema", "column",
      "table",   "index",   "query",   "filter", "sort",   "merge",   "split",  "join",
      "image",   "pixel",   "color",   "font",   "glyph",  "layout",  "window", "event"};
  return words;
}

// Function `i` of file `f`: name and body from words picked by (f, i); `variant` changes the
// body (an edit) without changing the name.
inline std::string function_text(int f, int i, int variant = 0) {
  const auto& w = vocabulary();
  const std::string& a = w[(f * 7 + i * 3) % w.size()];
  const std::string& b = w[(f * 5 + i * 11 + 1) % w.size()];
  const std::string& c = w[(f * 13 + i * 17 + variant * 5 + 2) % w.size()];
  return "def " + a + "_" + b + "_" + std::to_string(f) + "_" + std::to_string(i) + "(" + a + ", " +
         b + "):\n    result = " + a + ".apply_" + c + "(" + b + ")\n    return " + c +
         "_total(result, " + std::to_string(variant) + ")\n";
}

inline std::string file_path(int f) {
  return "pkg/module_" + std::to_string(f) + ".py";
}

inline std::string file_text(int f, int functions, int edited = -1, int variant = 0) {
  std::string out = "import os\n\n";
  for (int i = 0; i < functions; ++i) {
    out += function_text(f, i, i == edited ? variant : 0) + "\n";
  }
  return out;
}

// A result list as what it names: (path, first line, part, score), comparable across indexes.
inline std::vector<std::tuple<std::string, uint32_t, uint32_t, double>> described(
    const std::vector<Hit>& hits) {
  std::vector<std::tuple<std::string, uint32_t, uint32_t, double>> out;
  for (const Hit& h : hits)
    out.emplace_back(h.data->path, h.data->first_line, h.data->part, h.score);
  return out;
}

}  // namespace vsynth::stages::retrieval::test
