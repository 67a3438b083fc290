// Stop strings across token boundaries and the stream hold-back rules.
#include <catch2/catch.hpp>

#include "kernels/sampler/stop.h"

using namespace vsynth::kernels;

TEST_CASE("incomplete UTF-8 tails are detected", "[sampler][stop]") {
  CHECK(incomplete_utf8_tail("") == 0);
  CHECK(incomplete_utf8_tail("abc") == 0);
  CHECK(incomplete_utf8_tail("a\xE2") == 1);
  CHECK(incomplete_utf8_tail("a\xE2\x82") == 2);
  CHECK(incomplete_utf8_tail("a\xE2\x82\xAC") == 0);  // the euro sign, complete
  CHECK(incomplete_utf8_tail("\xF0\x9F\x98") == 3);
  CHECK(incomplete_utf8_tail("\xF0\x9F\x98\x80") == 0);
  CHECK(incomplete_utf8_tail("x\xC3") == 1);
  CHECK(incomplete_utf8_tail("x\xFF") == 0);  // invalid: nothing to wait for
  CHECK(incomplete_utf8_tail("\x80\x80") == 0);
}

TEST_CASE("a stop string spanning tokens is found once its last byte arrives", "[sampler][stop]") {
  StopStrings s({"\ndef ", "", "\n\n\n"});
  CHECK(s.strings().size() == 2);  // the empty string is ignored
  std::string text = "return x\n";
  CHECK_FALSE(s.find(text, 0).found());
  std::size_t old = text.size();
  text += "de";
  CHECK_FALSE(s.find(text, old).found());
  CHECK(s.partial_suffix(text) == 3);  // "\nde" may still become "\ndef "
  old = text.size();
  text += "f foo():";  // the match ends inside this piece
  const auto m = s.find(text, old);
  REQUIRE(m.found());
  CHECK(m.pos == 8);
  CHECK(s.strings()[m.which] == "\ndef ");
}

TEST_CASE("the earliest match wins, then the longest", "[sampler][stop]") {
  StopStrings s({"b", "ab", "abc"});
  auto m = s.find("xxabcd", 0);
  REQUIRE(m.found());
  CHECK(m.pos == 2);
  CHECK(s.strings()[m.which] == "abc");
  // Matches wholly inside text searched before are not reported again.
  StopStrings t({"ab"});
  CHECK_FALSE(t.find("ab--", 4).found());
  CHECK(t.find("ab--ab", 4).pos == 4);
  CHECK(t.find("a", 0).pos == std::string::npos);
}

TEST_CASE("partial_suffix holds back only what may still match", "[sampler][stop]") {
  StopStrings s({"```", "\nclass"});
  CHECK(s.partial_suffix("code ``") == 2);
  CHECK(s.partial_suffix("code `") == 1);
  CHECK(s.partial_suffix("code") == 0);
  CHECK(s.partial_suffix("x\ncla") == 4);
  CHECK(s.partial_suffix("x\nclass") == 0);  // a whole match is find()'s business
  CHECK(StopStrings().partial_suffix("anything") == 0);
}
