// Where a suggestion ends by its lines (stages/generation/line_stops.h): llama.cpp's n_indent
// rule, single-line mode, the time limit, and the hook that applies them token by token.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "stages/generation/line_stops.h"

namespace gen = vsynth::stages::generation;
using vsynth::kernels::DecodeView;
using vsynth::kernels::HookVerdict;

namespace {

// Feeds `pieces` to the hook one token at a time, committing each it accepts, as the decoding
// loop does; returns the committed text and whether a piece was refused with a stop.
struct Fed {
  std::string text;
  bool stopped = false;
  std::size_t kept = 0;  // hook.cut(text)
};
Fed feed(gen::LineStopHook& hook, const std::vector<std::string>& pieces) {
  Fed f;
  std::vector<std::size_t> ends;
  for (const std::string& p : pieces) {
    const DecodeView view{{}, {}, f.text, ends, nullptr};
    const HookVerdict v = hook.after_sample(view, 0, p);
    if (v.kind == HookVerdict::Kind::Stop) {
      f.stopped = true;
      break;
    }
    REQUIRE(v.kind == HookVerdict::Kind::Accept);
    f.text += p;
    ends.push_back(f.text.size());
  }
  f.kept = hook.cut(f.text);
  return f;
}

}  // namespace

TEST_CASE("indent_cut follows llama.cpp's n_indent: the first later line indented below it",
          "[generation][stops]") {
  // The first line is never judged (it starts at the cursor).
  CHECK_FALSE(gen::indent_cut("x = 1", 4));
  CHECK_FALSE(gen::indent_cut("x = 1\n    y = 2\n        z", 4));
  CHECK(gen::indent_cut("x = 1\n    y = 2\nreturn z", 4) == std::size_t{15});
  CHECK(gen::indent_cut("a\n\t\tb\n c", 2) == std::size_t{5});  // a tab counts one column
  CHECK(gen::indent_cut("a\n\tb", 2) == std::size_t{1});
  // An empty line ends it too (indentation 0 and a character, the line break, after it).
  CHECK(gen::indent_cut("a\n    b\n\n    c", 4) == std::size_t{7});
  // A line is judged once a character other than space or tab is there.
  CHECK_FALSE(gen::indent_cut("a\n  ", 4));
  CHECK_FALSE(gen::indent_cut("a\n}", 0));  // 0: off
  CHECK(gen::indent_cut("a\n}", 1) == std::size_t{1});
}

TEST_CASE("single_line_cut ends at the first line break after non-blank text",
          "[generation][stops]") {
  CHECK(gen::single_line_cut("foo(x)\nbar") == std::size_t{6});
  CHECK(gen::single_line_cut("\n    return x\n") == std::size_t{13});
  CHECK_FALSE(gen::single_line_cut("  \n  "));
  CHECK_FALSE(gen::single_line_cut("foo"));
}

TEST_CASE("cursor_line_indent counts the cursor line's leading spaces and tabs",
          "[generation][stops]") {
  CHECK(gen::cursor_line_indent("def f():\n    x = g(") == 4);
  CHECK(gen::cursor_line_indent("\t\tif (a) {") == 2);
  CHECK(gen::cursor_line_indent("def f():\n") == 0);
  CHECK(gen::cursor_line_indent("") == 0);
}

TEST_CASE("the line-stop hook ends a suggestion before the line that leaves the block",
          "[generation][stops]") {
  const auto now = gen::LineStopHook::Clock::now();
  SECTION("the stopping line's first character arrives in its own token: refused, cut back") {
    gen::LineStopHook h({.n_indent = 4}, now);
    const Fed f = feed(h, {"x)", "\n", "    y = 2", "\n", "return", " z"});
    CHECK(f.stopped);
    CHECK(f.text == "x)\n    y = 2\n");  // "return" never committed
    CHECK(f.text.substr(0, f.kept) == "x)\n    y = 2");
    CHECK(h.fired() == gen::LineStopHook::Fired::Indent);
    CHECK(std::string(gen::LineStopHook::finish(h.fired())) == "stop");
    CHECK(h.detail() == "n_indent 4");
  }
  SECTION("a token that starts with the line break is refused whole") {
    gen::LineStopHook h({.n_indent = 4}, now);
    const Fed f = feed(h, {"x)", "\n}", "\n", "more"});
    CHECK(f.stopped);
    CHECK(f.text == "x)");
    CHECK(f.kept == 2);
  }
  SECTION("text, the line break and the next line in one token: kept, stopped at the next step") {
    gen::LineStopHook h({.n_indent = 4}, now);
    const Fed f = feed(h, {"x", ")\n}", "\n", "more"});
    CHECK(f.stopped);
    CHECK(f.text == "x)\n}");
    CHECK(f.text.substr(0, f.kept) == "x)");
  }
  SECTION("single line") {
    gen::LineStopHook h({.single_line = true}, now);
    const Fed f = feed(h, {"foo", "(x", ")\n", "bar"});
    CHECK(f.text.substr(0, f.kept) == "foo(x)");
    CHECK(h.fired() == gen::LineStopHook::Fired::Line);
    CHECK(h.detail() == "single_line");
  }
  SECTION("nothing to stop: every piece accepted, nothing cut") {
    gen::LineStopHook h({.n_indent = 2, .single_line = false}, now);
    const Fed f = feed(h, {"a", "\n  b", "\n  c"});
    CHECK_FALSE(f.stopped);
    CHECK(f.kept == f.text.size());
    CHECK(h.fired() == gen::LineStopHook::Fired::None);
  }
}

TEST_CASE("max_predict_ms ends the suggestion once the time is spent, at its last whole line",
          "[generation][stops]") {
  // A clock that started long ago: the limit is already spent at the first check after the
  // text below, so the outcome does not depend on this machine's speed.
  const auto long_ago = gen::LineStopHook::Clock::now() - std::chrono::seconds(10);
  gen::LineStopHook h({.max_predict_ms = 5}, long_ago);
  const DecodeView view{{}, {}, "a = 1\nb = f(", {}, nullptr};
  CHECK(h.after_sample(view, 0, "x").kind == HookVerdict::Kind::Stop);
  CHECK(h.fired() == gen::LineStopHook::Fired::Time);
  CHECK(h.cut("a = 1\nb = f(") == 5);
  CHECK(std::string(gen::LineStopHook::finish(h.fired())) == "time");
  CHECK(h.detail() == "max_predict_ms 5");
  // Without a line break the partial line is what there is.
  gen::LineStopHook h2({.max_predict_ms = 5}, long_ago);
  const DecodeView one{{}, {}, "b = f(", {}, nullptr};
  CHECK(h2.after_sample(one, 0, "x").kind == HookVerdict::Kind::Stop);
  CHECK(h2.cut("b = f(") == 6);
  // A line break with nothing before it is no whole line: what there is stays.
  gen::LineStopHook h4({.max_predict_ms = 5}, long_ago);
  const DecodeView lead{{}, {}, "\n    b = f(", {}, nullptr};
  CHECK(h4.after_sample(lead, 0, "x").kind == HookVerdict::Kind::Stop);
  CHECK(h4.cut("\n    b = f(") == 11);
  // A limit not yet reached stops nothing.
  gen::LineStopHook h3({.max_predict_ms = 3600000}, gen::LineStopHook::Clock::now());
  CHECK(h3.after_sample(one, 0, "x").kind == HookVerdict::Kind::Accept);
}
