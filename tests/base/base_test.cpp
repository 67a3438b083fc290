// base/: FNV-1a 64 against the published values, the mixers and the other helpers against the
// values the project's copies of them gave before they moved here (seeds, shard numbers and
// cache keys are made from them, so a change would be a silent break).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "base/hash.h"
#include "base/mix.h"
#include "base/stats.h"
#include "base/strings.h"

namespace base = vsynth::base;

TEST_CASE("fnv1a64 gives the published FNV-1a 64 values", "[base][hash]") {
  CHECK(base::fnv1a64("") == 0xcbf29ce484222325ULL);
  CHECK(base::fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(base::fnv1a64("foobar") == 0x85944171f73967e8ULL);
  static_assert(base::fnv1a64("a") == 0xaf63dc4c8601ec8cULL, "usable at compile time");
}

TEST_CASE("fnv1a64 extends a hash byte by byte, from either form", "[base][hash]") {
  const std::string s = "src/a.py";
  CHECK(base::fnv1a64(s) == 0xd1dab5149ce8f522ULL);
  CHECK(base::fnv1a64_bytes(s.data(), s.size()) == 0xd1dab5149ce8f522ULL);
  CHECK(base::fnv1a64("a.py", base::fnv1a64("src/")) == base::fnv1a64(s));
  CHECK(base::fnv1a64_bytes(s.data() + 4, 4, base::fnv1a64_bytes(s.data(), 4)) == base::fnv1a64(s));
  const uint64_t n = 3;  // bytes of a word, as the vocabulary hash feeds lengths
  CHECK(base::fnv1a64_bytes(&n, sizeof n) ==
        base::fnv1a64(std::string_view(reinterpret_cast<const char*>(&n), sizeof n)));
}

TEST_CASE("fnv1a64 from other starting values, as its callers use them", "[base][hash]") {
  // The embedder's second key (retrieval/bert_embedder.cpp).
  CHECK(base::fnv1a64("", 0x84222325cbf29ce4ULL) == 0x84222325cbf29ce4ULL);
  CHECK(base::fnv1a64("a", 0x84222325cbf29ce4ULL) == 0x789e3e398d3ff5ffULL);
  CHECK(base::fnv1a64("task/17", 0x84222325cbf29ce4ULL) == 0x57d1d906ce48a202ULL);
  // The short offset (context fingerprints, the vocabulary index, the report's id filter).
  CHECK(base::fnv1a64("", base::kFnv1a64ShortOffset) == 0x14650fb0739d0383ULL);
  CHECK(base::fnv1a64("a", base::kFnv1a64ShortOffset) == 0x44bd8ad473cd9906ULL);
  CHECK(base::fnv1a64("foobar", base::kFnv1a64ShortOffset) == 0x88fad7c0a8ff07f2ULL);
}

TEST_CASE("splitmix64 and its finaliser", "[base][mix]") {
  // splitmix64(x): the first output of the generator at state x.
  CHECK(base::splitmix64(0) == 0xe220a8397b1dcdafULL);
  CHECK(base::splitmix64(1) == 0x910a2dec89025cc1ULL);
  CHECK(base::splitmix64(42) == 0xbdd732262feb6e95ULL);
  CHECK(base::splitmix64(~uint64_t{0}) == 0xe4d971771b652c20ULL);
  CHECK(base::splitmix64_finalize(0) == 0);
  CHECK(base::splitmix64_finalize(1) == 0x5692161d100b05e5ULL);
  CHECK(base::splitmix64_finalize(42) == 0xa759ea27d4727622ULL);
  CHECK(base::splitmix64_finalize(~uint64_t{0}) == 0xb4d055fcf2cbbd7bULL);
}

TEST_CASE("splitmix64_next steps a stream", "[base][mix]") {
  uint64_t state = 0;
  CHECK(base::splitmix64_next(state) == 0xe220a8397b1dcdafULL);
  CHECK(state == base::kGoldenGamma);
  CHECK(base::splitmix64_next(state) == base::splitmix64(base::kGoldenGamma));
}

TEST_CASE("fmix64_half after the short-offset FNV is the vocabulary's hash", "[base][mix]") {
  CHECK(base::fmix64_half(base::fnv1a64("", base::kFnv1a64ShortOffset)) == 0xe36f5519ee926a53ULL);
  CHECK(base::fmix64_half(base::fnv1a64("a", base::kFnv1a64ShortOffset)) == 0x6cd53dd3a3028c95ULL);
  CHECK(base::fmix64_half(base::fnv1a64("foobar", base::kFnv1a64ShortOffset)) ==
        0x05fa9d4d41792cccULL);
}

TEST_CASE("percentile by nearest rank, and round1", "[base][stats]") {
  CHECK(base::percentile({}, 50) == 0);
  CHECK(base::percentile({3, 1, 2, 4}, 50) == 2);
  CHECK(base::percentile({3, 1, 2, 4}, 99) == 4);
  CHECK(base::percentile({3, 1, 2, 4}, 0) == 1);
  CHECK(base::percentile({3, 1, 2, 4}, 100) == 4);
  CHECK(base::percentile({5}, 50) == 5);
  CHECK(base::round1(1.25) == Approx(1.3));
  CHECK(base::round1(-1.25) == Approx(-1.3));
  CHECK(base::round1(0.04) == 0.0);
  CHECK(base::round1(12.0) == 12.0);
}

TEST_CASE("trim, trim_right, is_space and ascii_lower", "[base][strings]") {
  CHECK(base::trim(" \t\r\n\f\vx y\v\f\n\r\t ") == "x y");
  CHECK(base::trim("   ").empty());
  CHECK(base::trim_right("  x  ") == "  x");
  CHECK(base::is_space('\v'));
  CHECK_FALSE(base::is_space('x'));
  CHECK(base::ascii_lower("HTTPServer_Ä9") == "httpserver_Ä9");
}
