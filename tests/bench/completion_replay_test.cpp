// The completion benchmark's pure pieces (completion_replay.h): the quality proxy and the
// replay it generates from a file, deterministic for a seed.
#include "tests/bench/completion_replay.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

using namespace vsynth::bench;

namespace {

const std::string kFile =
    "import os\n"                // 0
    "\n"                         // 1
    "\n"                         // 2
    "def total(xs):\n"           // 3
    "    \"\"\"Sum of xs.\n"     // 4
    "\n"                         // 5
    "    return nothing here\n"  // 6: inside the docstring
    "    \"\"\"\n"               // 7
    "    # running sum\n"        // 8
    "    acc = 0\n"              // 9
    "    for x in xs:\n"         // 10
    "        acc += x\n"         // 11
    "    return acc\n"           // 12
    "\n"                         // 13
    "    )\n"                    // 14
    "print(total([1, 2]))\n";    // 15

}  // namespace

TEST_CASE("edit similarity is one minus normalized Levenshtein distance") {
  CHECK(edit_similarity("", "") == 1.0);
  CHECK(edit_similarity("abc", "abc") == 1.0);
  CHECK(edit_similarity("abc", "") == 0.0);
  CHECK(edit_similarity("", "xy") == 0.0);
  CHECK(edit_similarity("kitten", "sitting") == Approx(1.0 - 3.0 / 7.0));
  CHECK(edit_similarity("flaw", "lawn") == Approx(0.5));
  CHECK(edit_similarity("return acc", "return acc + 1") == Approx(1.0 - 4.0 / 14.0));
  CHECK(edit_similarity("ab", "ba") == edit_similarity("ba", "ab"));
}

TEST_CASE("the first line of a completion stops at the newline and drops trailing space") {
  CHECK(first_line("acc += x  \n    return acc\n") == "acc += x");
  CHECK(first_line("x = 1\r\n") == "x = 1");
  CHECK(first_line("no newline\t") == "no newline");
  CHECK(first_line("\nsecond") == "");
}

TEST_CASE("statement lines skip comments, docstrings, closers and short lines") {
  CHECK(statement_lines(kFile, "#", 5) == std::vector<uint32_t>{0, 3, 9, 10, 11, 12, 15});
  // A longer minimum leaves out the short statements.
  CHECK(statement_lines(kFile, "#", 10) == std::vector<uint32_t>{3, 10, 12, 15});
  CHECK(statement_lines("// note\nint x = 1;\n/* a\n * b\n */\n", "//", 3) ==
        std::vector<uint32_t>{1});
}

TEST_CASE("pick_lines is deterministic for a seed and distinct") {
  const std::vector<uint32_t> lines = {2, 5, 8, 13, 21, 34, 55, 89};
  const auto a = pick_lines(lines, 3, 7);
  CHECK(a == pick_lines(lines, 3, 7));
  REQUIRE(a.size() == 3);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(std::adjacent_find(a.begin(), a.end()) == a.end());
  for (uint32_t l : a) CHECK(std::find(lines.begin(), lines.end(), l) != lines.end());
  // Another seed gives another pick (for this input: checked once, fixed since).
  bool differs = false;
  for (uint64_t s = 8; s < 16 && !differs; ++s) differs = pick_lines(lines, 3, s) != a;
  CHECK(differs);
  CHECK(pick_lines(lines, 20, 1) == lines);
  CHECK(pick_lines({}, 3, 1).empty());
}

TEST_CASE("a replay request is the file as the user sees it after the keystrokes") {
  const ReplayRequest r = make_request(kFile, 10, 3);
  CHECK(r.line == 10);
  CHECK(r.typed == 3);
  CHECK(r.column == 7);  // four spaces of indentation and "for"
  CHECK(r.target == " x in xs:");
  CHECK(r.lines_in_file == 16);
  CHECK(r.visible.substr(r.cursor - 11, 11) == "= 0\n    for");
  // The rest of the cursor's line is gone; the next line follows the cursor directly.
  CHECK(r.visible.substr(r.cursor).starts_with("\n        acc += x\n"));
  CHECK(r.visible.size() == kFile.size() - r.target.size());

  const ReplayRequest none = make_request(kFile, 12, 0);
  CHECK(none.target == "return acc");
  CHECK(none.visible.substr(none.cursor).starts_with("\n\n    )\n"));

  CHECK_THROWS_AS(make_request(kFile, 16, 1), std::out_of_range);
  CHECK_THROWS_AS(make_request(kFile, 14, 2), std::out_of_range);  // ")" has one character
}

TEST_CASE("the naive window keeps radius lines on each side of the cursor's line") {
  const ReplayRequest r = make_request(kFile, 10, 3);
  const Window w = line_window(r.visible, r.cursor, 2);
  CHECK(w.prefix == "    # running sum\n    acc = 0\n    for");
  CHECK(w.suffix == "\n        acc += x\n    return acc");
  // Near the file's ends the window stops there.
  const ReplayRequest top = make_request(kFile, 0, 2);
  CHECK(line_window(top.visible, top.cursor, 3).prefix == "im");
  const Window all = line_window(r.visible, r.cursor, 100);
  CHECK(all.prefix + all.suffix == r.visible);
}
