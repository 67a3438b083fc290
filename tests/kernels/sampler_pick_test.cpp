// Sampler::pick's choices pinned: for fixed logits, seeds and parameters, with and without a
// mask, the tokens drawn are the ones recorded before pick was cut into named phases
// (kernels/sampler/sampler.cpp). Covers greedy (ties to the lowest id), the inverse-CDF walk of
// plain temperature sampling, top-k, top-p and min-p (the heap widened until the cut fits), and
// the masks: bans, an allowed set (unsorted, a duplicate, a -inf entry), both, and an allowed
// set with nothing left (kNoToken). The sampler's sums are bit-identical on every CPU path
// (tests/generation/sampler_test.cpp), so the pins hold on each (CMakeLists runs the scalar one).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/sampler/sampler.h"

using namespace vsynth::kernels;

namespace {

// Logits in [-10, 10) in steps of 0.01 from a 64-bit LCG (exact floats, no libm), every 97th
// -inf (a banned or impossible token).
std::vector<float> logits(std::size_t n, uint64_t seed) {
  std::vector<float> l(n);
  uint64_t x = seed;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    l[i] = static_cast<float>(static_cast<int>((x >> 33) % 2000) - 1000) / 100.0f;
    if (i % 97 == 13) l[i] = -std::numeric_limits<float>::infinity();
  }
  return l;
}

struct Params {
  const char* name;
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
};

const Params kParams[] = {
    {"greedy", 0.0f, 40, 0.95f, 0.05f},
    {"plain", 0.7f, 0, 1.0f, 0.0f},  // inverse CDF over the whole domain
    {"defaults", 0.8f, 40, 0.95f, 0.05f},
    {"top-p", 1.0f, 0, 0.9f, 0.0f},   // the heap grows until the nucleus fits
    {"min-p", 1.5f, 0, 1.0f, 0.02f},  // the heap grows until the min-p cut fits
    {"top-k", 1.2f, 5, 1.0f, 0.0f},
    {"top-p+min-p", 2.0f, 0, 0.5f, 0.3f},
};

struct Mask {
  const char* name;
  TokenMask mask;
};

// The masks, over logits l: bans hit the most likely tokens, so they change the draws.
std::vector<Mask> masks(const std::vector<float>& l) {
  const std::size_t n = l.size();
  std::vector<Mask> out;
  out.push_back({"none", {}});
  TokenMask banned;
  for (TokenId t = 0; t < static_cast<TokenId>(n); ++t) {
    if (t % 7 == 0 || l[static_cast<std::size_t>(t)] > 9.9f) banned.ban(t);
  }
  out.push_back({"banned", banned});
  TokenMask allowed;
  std::vector<TokenId> ids;
  for (TokenId t = static_cast<TokenId>(n) - 1; t >= 0; t -= 13) ids.push_back(t);  // unsorted
  ids.push_back(ids[3]);                                                            // a duplicate
  ids.push_back(13);                                                                // a -inf logit
  allowed.allow_only(ids);
  out.push_back({"allowed", allowed});
  TokenMask both = allowed;
  for (TokenId t : ids) {
    if (l[static_cast<std::size_t>(t)] > 8.0f) both.ban(t);
  }
  out.push_back({"allowed+banned", both});
  TokenMask nothing;
  nothing.allow_only({13, 110});  // both -inf
  out.push_back({"nothing", nothing});
  return out;
}

// One line per case: "<params> <mask> n=<vocab> seed=<seed>: <8 draws>".
std::vector<std::string> draws() {
  std::vector<std::string> lines;
  for (std::size_t n : {std::size_t{1000}, std::size_t{70000}}) {
    const std::vector<float> l = logits(n, n);
    for (const Params& p : kParams) {
      for (const Mask& m : masks(l)) {
        for (uint64_t seed : {3u, 11u}) {
          SamplerParams sp;
          sp.temperature = p.temperature;
          sp.top_k = p.top_k;
          sp.top_p = p.top_p;
          sp.min_p = p.min_p;
          sp.seed = seed;
          Sampler s(sp);
          std::string line = std::string(p.name) + " " + m.name + " n=" + std::to_string(n) +
                             " seed=" + std::to_string(seed) + ":";
          for (int i = 0; i < 8; ++i) line += " " + std::to_string(s.sample(l, {}, m.mask).token);
          lines.push_back(line);
        }
      }
    }
  }
  return lines;
}

// Recorded from the sampler before the refactor (commit 4fecef6).
const char* const kPinned[] = {
    "greedy none n=1000 seed=3: 374 374 374 374 374 374 374 374",
    "greedy none n=1000 seed=11: 374 374 374 374 374 374 374 374",
    "greedy banned n=1000 seed=3: 526 526 526 526 526 526 526 526",
    "greedy banned n=1000 seed=11: 526 526 526 526 526 526 526 526",
    "greedy allowed n=1000 seed=3: 219 219 219 219 219 219 219 219",
    "greedy allowed n=1000 seed=11: 219 219 219 219 219 219 219 219",
    "greedy allowed+banned n=1000 seed=3: 830 830 830 830 830 830 830 830",
    "greedy allowed+banned n=1000 seed=11: 830 830 830 830 830 830 830 830",
    "greedy nothing n=1000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "greedy nothing n=1000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "plain none n=1000 seed=3: 600 567 219 501 395 374 219 603",
    "plain none n=1000 seed=11: 219 115 249 395 115 275 495 975",
    "plain banned n=1000 seed=3: 563 529 206 485 293 292 206 597",
    "plain banned n=1000 seed=11: 215 125 219 395 124 267 461 975",
    "plain allowed n=1000 seed=3: 271 271 219 271 219 219 219 388",
    "plain allowed n=1000 seed=11: 219 115 219 219 115 219 271 947",
    "plain allowed+banned n=1000 seed=3: 830 661 245 661 505 466 245 830",
    "plain allowed+banned n=1000 seed=11: 245 63 245 661 63 245 661 908",
    "plain nothing n=1000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "plain nothing n=1000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "defaults none n=1000 seed=3: 600 567 249 173 73 772 219 700",
    "defaults none n=1000 seed=11: 249 955 249 275 955 138 529 728",
    "defaults banned n=1000 seed=3: 597 615 395 156 485 485 395 846",
    "defaults banned n=1000 seed=11: 395 249 395 529 249 772 156 541",
    "defaults allowed n=1000 seed=3: 115 115 219 700 271 271 219 115",
    "defaults allowed n=1000 seed=11: 219 219 271 271 219 271 700 830",
    "defaults allowed+banned n=1000 seed=3: 245 63 830 63 661 661 830 245",
    "defaults allowed+banned n=1000 seed=11: 830 830 830 661 830 661 63 375",
    "defaults nothing n=1000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "defaults nothing n=1000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-p none n=1000 seed=3: 0 930 271 65 700 600 271 410",
    "top-p none n=1000 seed=11: 772 526 73 615 526 529 689 717",
    "top-p banned n=1000 seed=3: 463 206 73 844 615 125 73 942",
    "top-p banned n=1000 seed=11: 73 292 275 597 292 173 115 709",
    "top-p allowed n=1000 seed=3: 115 115 219 700 271 271 219 115",
    "top-p allowed n=1000 seed=11: 271 219 271 700 219 271 700 830",
    "top-p allowed+banned n=1000 seed=3: 245 63 830 63 661 661 830 245",
    "top-p allowed+banned n=1000 seed=11: 830 830 830 661 830 661 63 778",
    "top-p nothing n=1000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-p nothing n=1000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "min-p none n=1000 seed=3: 388 510 156 757 530 21 173 233",
    "min-p none n=1000 seed=11: 156 249 567 930 249 597 410 194",
    "min-p banned n=1000 seed=3: 858 576 156 442 947 930 156 788",
    "min-p banned n=1000 seed=11: 495 395 600 814 395 689 456 321",
    "min-p allowed n=1000 seed=3: 206 947 271 115 700 700 271 206",
    "min-p allowed n=1000 seed=11: 271 219 271 115 219 700 115 804",
    "min-p allowed+banned n=1000 seed=3: 505 466 661 245 63 63 661 505",
    "min-p allowed+banned n=1000 seed=11: 661 830 661 63 830 661 245 258",
    "min-p nothing n=1000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "min-p nothing n=1000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-k none n=1000 seed=3: 603 603 539 955 955 539 539 603",
    "top-k none n=1000 seed=11: 539 374 539 955 374 539 955 526",
    "top-k banned n=1000 seed=3: 292 292 219 249 249 219 219 292",
    "top-k banned n=1000 seed=11: 219 526 219 249 526 219 249 138",
    "top-k allowed n=1000 seed=3: 700 700 219 700 271 271 219 115",
    "top-k allowed n=1000 seed=11: 219 219 219 271 219 271 700 947",
    "top-k allowed+banned n=1000 seed=3: 63 63 830 63 661 661 830 63",
    "top-k allowed+banned n=1000 seed=11: 830 830 830 661 830 661 63 466",
    "top-k nothing n=1000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-k nothing n=1000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-p+min-p none n=1000 seed=3: 930 728 772 689 700 600 271 690",
    "top-p+min-p none n=1000 seed=11: 772 526 73 125 526 173 846 746",
    "top-p+min-p banned n=1000 seed=3: 814 947 275 129 597 615 73 541",
    "top-p+min-p banned n=1000 seed=11: 275 292 485 846 292 156 844 975",
    "top-p+min-p allowed n=1000 seed=3: 115 700 219 700 271 271 219 115",
    "top-p+min-p allowed n=1000 seed=11: 219 219 271 271 219 271 700 947",
    "top-p+min-p allowed+banned n=1000 seed=3: 245 63 830 63 661 661 830 245",
    "top-p+min-p allowed+banned n=1000 seed=11: 830 830 830 661 830 661 63 466",
    "top-p+min-p nothing n=1000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-p+min-p nothing n=1000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "greedy none n=70000 seed=3: 566 566 566 566 566 566 566 566",
    "greedy none n=70000 seed=11: 566 566 566 566 566 566 566 566",
    "greedy banned n=70000 seed=3: 1257 1257 1257 1257 1257 1257 1257 1257",
    "greedy banned n=70000 seed=11: 1257 1257 1257 1257 1257 1257 1257 1257",
    "greedy allowed n=70000 seed=3: 566 566 566 566 566 566 566 566",
    "greedy allowed n=70000 seed=11: 566 566 566 566 566 566 566 566",
    "greedy allowed+banned n=70000 seed=3: 20079 20079 20079 20079 20079 20079 20079 20079",
    "greedy allowed+banned n=70000 seed=11: 20079 20079 20079 20079 20079 20079 20079 20079",
    "greedy nothing n=70000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "greedy nothing n=70000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "plain none n=70000 seed=3: 48329 44728 15394 37334 29772 28111 14841 50130",
    "plain none n=70000 seed=11: 15725 6193 17248 31158 6089 21577 36084 69716",
    "plain banned n=70000 seed=3: 48331 44609 15802 37274 29902 28502 15325 50028",
    "plain banned n=70000 seed=11: 16027 6141 17720 31187 6021 22102 35975 69627",
    "plain allowed n=70000 seed=3: 46963 43102 15269 36004 26735 26280 14697 47691",
    "plain allowed n=70000 seed=11: 15386 7001 16452 27450 7001 20495 34392 69596",
    "plain allowed+banned n=70000 seed=3: 49043 45624 17986 38721 30973 28412 17349 50512",
    "plain allowed+banned n=70000 seed=11: 18064 7508 19585 32195 7040 23511 38305 69739",
    "plain nothing n=70000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "plain nothing n=70000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "defaults none n=70000 seed=3: 65448 58564 12023 55096 32376 30775 11999 67868",
    "defaults none n=70000 seed=11: 12023 5312 16977 32376 5312 21486 47375 11998",
    "defaults banned n=70000 seed=3: 60545 55899 17201 45225 36030 34929 16168 64668",
    "defaults banned n=70000 seed=11: 17201 5707 22430 36030 5707 24988 44577 7768",
    "defaults allowed n=70000 seed=3: 26436 13111 51682 5038 12253 27177 51682 37148",
    "defaults allowed n=70000 seed=11: 51682 53164 39306 12253 14697 47262 66788 53125",
    "defaults allowed+banned n=70000 seed=3: 25214 67178 8314 31558 67828 25968 8314 40593",
    "defaults allowed+banned n=70000 seed=11: 8314 43024 38305 27684 43024 7027 69193 23745",
    "defaults nothing n=70000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "defaults nothing n=70000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-p none n=70000 seed=3: 38421 15840 54417 1701 9023 69018 55232 50445",
    "top-p none n=70000 seed=11: 26851 35671 67103 54916 17046 36913 15796 45780",
    "top-p banned n=70000 seed=3: 15656 24496 39986 52669 54884 34855 28089 6127",
    "top-p banned n=70000 seed=11: 68450 65026 49640 34627 49529 65049 6344 53159",
    "top-p allowed n=70000 seed=3: 30310 1528 15386 61224 44558 42829 15802 69622",
    "top-p allowed n=70000 seed=11: 53281 7768 4492 45923 7768 8704 40710 9770",
    "top-p allowed+banned n=70000 seed=3: 58117 64695 8912 25461 55881 9770 42738 59833",
    "top-p allowed+banned n=70000 seed=11: 52384 21483 57701 38422 67178 6897 34600 50499",
    "top-p nothing n=70000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-p nothing n=70000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "min-p none n=70000 seed=3: 56080 45208 39412 59697 66010 13343 5128 64106",
    "min-p none n=70000 seed=11: 53871 69415 51953 3806 35331 38239 68643 17099",
    "min-p banned n=70000 seed=3: 34497 18779 66741 206 57786 17868 40073 18304",
    "min-p banned n=70000 seed=11: 12706 34618 31505 61282 6095 17506 29042 69856",
    "min-p allowed n=70000 seed=3: 47080 17284 18025 32221 53268 11993 58169 22679",
    "min-p allowed n=70000 seed=11: 38760 15087 57246 11304 7235 58728 9666 58637",
    "min-p allowed+banned n=70000 seed=3: 60522 5207 2477 53983 34314 24265 22211 62940",
    "min-p allowed+banned n=70000 seed=11: 46417 34171 21158 57532 33742 19130 23212 52969",
    "min-p nothing n=70000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "min-p nothing n=70000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-k none n=70000 seed=3: 5312 5312 1993 4002 4002 1993 1993 5312",
    "top-k none n=70000 seed=11: 1993 566 1993 4002 566 1993 4002 6765",
    "top-k banned n=70000 seed=3: 5707 5707 1805 2991 2991 1805 1805 5707",
    "top-k banned n=70000 seed=11: 1805 1257 1805 2991 1257 1805 2991 8569",
    "top-k allowed n=70000 seed=3: 53164 53164 11694 14697 14697 11694 11694 53164",
    "top-k allowed n=70000 seed=11: 11694 566 11694 14697 566 11694 14697 12812",
    "top-k allowed+banned n=70000 seed=3: 43024 43024 5662 22679 22679 5662 5662 43024",
    "top-k allowed+banned n=70000 seed=11: 5662 20079 5662 22679 20079 5662 22679 61289",
    "top-k nothing n=70000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-k nothing n=70000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-p+min-p none n=70000 seed=3: 14784 65110 22410 37384 46249 10619 6095 22052",
    "top-p+min-p none n=70000 seed=11: 59786 20604 23101 5526 6373 31568 22729 4601",
    "top-p+min-p banned n=70000 seed=3: 62134 36287 42907 15713 25408 37888 60482 60546",
    "top-p+min-p banned n=70000 seed=11: 18271 38875 7685 42220 26514 17720 15810 4836",
    "top-p+min-p allowed n=70000 seed=3: 11304 54724 9965 39397 19962 6507 68985 42491",
    "top-p+min-p allowed n=70000 seed=11: 4492 13111 41022 63109 13111 53463 9445 17661",
    "top-p+min-p allowed+banned n=70000 seed=3: 22913 47015 19858 42543 62381 54282 2100 64695",
    "top-p+min-p allowed+banned n=70000 seed=11: 67815 25214 30687 57350 25214 6325 49940 6585",
    "top-p+min-p nothing n=70000 seed=3: -1 -1 -1 -1 -1 -1 -1 -1",
    "top-p+min-p nothing n=70000 seed=11: -1 -1 -1 -1 -1 -1 -1 -1",
};

}  // namespace

TEST_CASE("sampler: pick draws the pinned tokens with and without a mask", "[sampler]") {
  const std::vector<std::string> got = draws();
  REQUIRE(got.size() == std::size(kPinned));
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == kPinned[i]);
}
