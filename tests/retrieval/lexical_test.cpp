// BM25 against numbers worked out by hand (k1 1.2, b 0.75, idf ln(1 + (N - df + 0.5) /
// (df + 0.5))), and incremental removal.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "stages/retrieval/lexical.h"

namespace vsynth::stages::retrieval {
namespace {

using Counts = std::vector<std::pair<std::string, uint32_t>>;

std::map<uint32_t, double> scores(const LexicalIndex& index, std::vector<std::string> query) {
  std::map<uint32_t, double> out;
  for (const auto& [c, s] : index.score(query)) out[c] = s;
  return out;
}

// d0 = apple apple banana, d1 = apple cherry, d2 = banana cherry cherry cherry date:
// N = 3, avgdl = 10 / 3.
void add_three(LexicalIndex& index) {
  index.add(0, Counts{{"apple", 2}, {"banana", 1}});
  index.add(1, Counts{{"apple", 1}, {"cherry", 1}});
  index.add(2, Counts{{"banana", 1}, {"cherry", 3}, {"date", 1}});
}

TEST_CASE("BM25 scores match a hand computation", "[retrieval]") {
  LexicalIndex index;
  add_three(index);
  CHECK(index.chunk_count() == 3);
  CHECK(index.average_length() == Approx(10.0 / 3.0));
  CHECK(index.document_frequency("apple") == 2);

  // apple, df 2: idf = ln(1 + 1.5 / 2.5) = ln 1.6 = 0.470004.
  // d0: tf 2, dl 3: 0.470004 * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / (10/3))) = 0.664957
  // d1: tf 1, dl 2: 0.470004 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 0.6)) = 0.561961
  auto s = scores(index, {"apple"});
  REQUIRE(s.size() == 2);
  CHECK(s[0] == Approx(0.664956903112938).epsilon(1e-12));
  CHECK(s[1] == Approx(0.561960861054684).epsilon(1e-12));

  // cherry + date on d2 (tf 3 and 1, dl 5; df 2 and 1): 1.481375; d1 has cherry only.
  // A term repeated in the query counts once; a term the index lacks adds nothing.
  s = scores(index, {"cherry", "date", "cherry", "zebra"});
  REQUIRE(s.size() == 2);
  CHECK(s[2] == Approx(1.4813752675039868).epsilon(1e-12));
  CHECK(s[1] == Approx(0.561960861054684).epsilon(1e-12));
  CHECK(scores(index, {"zebra"}).empty());
}

TEST_CASE("removing a chunk gives the scores of an index that never had it", "[retrieval]") {
  LexicalIndex index;
  add_three(index);
  index.remove(1);
  index.remove(1);  // twice: no-op
  CHECK_FALSE(index.contains(1));
  CHECK(index.chunk_count() == 2);
  // N = 2, avgdl = 4: apple (df 1) on d0 = 1.025159, cherry (df 1) on d2 = 1.033847.
  auto s = scores(index, {"apple", "cherry"});
  REQUIRE(s.size() == 2);
  CHECK(s[0] == Approx(1.025158855281936).epsilon(1e-12));
  CHECK(s[2] == Approx(1.0338466421911048).epsilon(1e-12));

  LexicalIndex fresh;
  fresh.add(0, Counts{{"apple", 2}, {"banana", 1}});
  fresh.add(2, Counts{{"banana", 1}, {"cherry", 3}, {"date", 1}});
  for (const char* q : {"apple", "banana", "cherry", "date"}) {
    CHECK(scores(index, {q}) == scores(fresh, {q}));
  }
  // The chunk's id is free again; its terms are its own.
  index.add(1, Counts{{"elder", 1}});
  CHECK(index.terms_of(1) == Counts{{"elder", 1}});
  CHECK(index.terms_of(2) == Counts{{"banana", 1}, {"cherry", 3}, {"date", 1}});
  CHECK(scores(index, {"apple"}).size() == 1);
}

TEST_CASE("postings stay consistent under many adds and removes", "[retrieval]") {
  // Each chunk c holds term t%5 for t in [0, c%7]; remove and re-add in a churning order and
  // compare with a fresh index of the survivors.
  const auto doc = [](uint32_t c) {
    Counts out;
    for (uint32_t t = 0; t <= c % 7; ++t) out.emplace_back("t" + std::to_string(t), c % 3 + 1);
    return out;
  };
  LexicalIndex index;
  std::vector<bool> in(100, false);
  for (uint32_t round = 0; round < 5; ++round) {
    for (uint32_t c = 0; c < 100; ++c) {
      const uint32_t id = (c * 37 + round * 11) % 100;
      if (in[id] && (id + round) % 3 == 0) {
        index.remove(id);
        in[id] = false;
      } else if (!in[id]) {
        index.add(id, doc(id));
        in[id] = true;
      }
    }
  }
  LexicalIndex fresh;
  for (uint32_t id = 0; id < 100; ++id) {
    if (in[id]) fresh.add(id, doc(id));
    if (in[id]) CHECK(index.terms_of(id) == doc(id));
  }
  for (int t = 0; t < 7; ++t) {
    const std::string q = "t" + std::to_string(t);
    const auto a = scores(index, {q}), b = scores(fresh, {q});
    REQUIRE(a.size() == b.size());
    for (const auto& [c, s] : a) CHECK(s == Approx(b.at(c)).epsilon(1e-12));
  }
}

}  // namespace
}  // namespace vsynth::stages::retrieval
