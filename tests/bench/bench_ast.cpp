// tree-sitter costs that ast.anchor and later context pruning pay per file: a full parse, a
// one-line incremental re-parse, and one anchor query, per language. Each language's sample
// (tests/ast/data, cursor markers removed) is repeated to about --kb KiB. Prints a table and
// writes JSON.
//
//   bench_ast [--kb 256] [--reps 20] [--json bench_ast.json]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "stages/ast/anchor.h"
#include "stages/ast/parsed_file.h"

namespace ast = vsynth::stages::ast;
using Clock = std::chrono::steady_clock;

namespace {

double micros_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The sample's text with its `<@name>` markers removed, and the offset of marker `a` (a cursor
// inside a method).
std::pair<std::string, uint32_t> read_sample(const std::string& name) {
  std::ifstream in(std::string(VSYNTH_SOURCE_DIR) + "/tests/ast/data/" + name, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str(), out;
  uint32_t cursor = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 4, "<@a>") == 0) cursor = static_cast<uint32_t>(out.size());
    if (text.compare(i, 2, "<@") == 0) {
      i = text.find('>', i) + 1;
    } else {
      out.push_back(text[i++]);
    }
  }
  return {out, cursor};
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t kb = 256, reps = 20;
  std::string json_path = "bench_ast.json";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--kb"))
      kb = std::stoul(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps"))
      reps = std::stoul(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--json"))
      json_path = argv[i + 1];
    else {
      fmt::print(stderr, "unknown option {} (valid: --kb N, --reps N, --json FILE)\n", argv[i]);
      return 2;
    }
  }
  const char* files[] = {"sample.py", "sample.c",  "sample.cpp", "sample.go", "sample.java",
                         "sample.js", "sample.ts", "sample.tsx", "sample.rs"};
  nlohmann::json results = nlohmann::json::array();
  fmt::print("{:<11} {:>8} {:>7} {:>10} {:>8} {:>12} {:>11}\n", "language", "KiB", "errors",
             "parse ms", "MB/s", "reparse us", "anchor us");
  for (const char* name : files) {
    const auto [one, one_cursor] = read_sample(name);
    std::string text;
    std::size_t copies = 0;
    while (text.size() < kb * 1024) {
      text += one;
      ++copies;
    }
    // The cursor in the middle copy's method; edits go on that line's start.
    const auto cursor = static_cast<uint32_t>(copies / 2 * one.size() + one_cursor);
    const ast::Language& lang = ast::Language::for_path(name);

    std::vector<double> parse_us;
    for (std::size_t r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      ast::ParsedFile f(name, lang, text);
      parse_us.push_back(micros_since(t0));
    }
    ast::ParsedFile file(name, lang, text);
    // A one-line edit in the middle copy: insert a blank line above the cursor's line, then
    // remove it again.
    const auto mid = static_cast<uint32_t>(text.rfind('\n', cursor) + 1);
    std::vector<double> reparse_us;
    for (std::size_t r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      file.apply_edit(mid, mid, "\n");
      reparse_us.push_back(micros_since(t0));
      t0 = Clock::now();
      file.apply_edit(mid, mid + 1, "");
      reparse_us.push_back(micros_since(t0));
    }
    // Anchor at the cursor (imports are collected over the file's top level).
    std::vector<double> anchor_us;
    for (std::size_t r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      const ast::Anchor a = ast::anchor(file, ast::Cursor::at_byte(cursor));
      anchor_us.push_back(micros_since(t0));
      if (!a.function) return 1;  // the cursor is in a method
    }
    const double parse_ms = median(parse_us) / 1000;
    const double mbps = static_cast<double>(text.size()) / (median(parse_us) * 1e-6) / 1e6;
    fmt::print("{:<11} {:>8.0f} {:>7} {:>10.2f} {:>8.1f} {:>12.0f} {:>11.0f}\n", lang.name(),
               static_cast<double>(text.size()) / 1024, file.has_errors() ? "yes" : "no", parse_ms,
               mbps, median(reparse_us), median(anchor_us));
    results.push_back({{"language", lang.name()},
                       {"bytes", text.size()},
                       {"has_errors", file.has_errors()},
                       {"parse_ms", parse_ms},
                       {"parse_mb_per_s", mbps},
                       {"reparse_one_line_us", median(reparse_us)},
                       {"anchor_us", median(anchor_us)}});
  }
  std::ofstream(json_path) << results.dump(2) << "\n";
  fmt::print("wrote {}\n", json_path);
  return 0;
}
