// Golden test: WordPiece on all-MiniLM-L6-v2's tokenizer.json against the ids HF tokenizers
// produced (tests/data/golden/wordpiece_minilm.json, scripts/golden/make_wordpiece_golden.py),
// and the same ids from two threads at once. Needs the encoder (tests/test_skip.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/tokenizer/wordpiece.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
using nlohmann::json;

namespace {

const std::filesystem::path kGolden =
    std::filesystem::path(VSYNTH_SOURCE_DIR) / "tests/data/golden";

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

struct GoldenCase {
  std::string name, text;
  int max_tokens;  // 0: no truncation
  std::vector<int32_t> ids;
};

std::vector<GoldenCase> load_cases() {
  const json doc = json::parse(read_file(kGolden / "wordpiece_minilm.json"));
  std::vector<GoldenCase> out;
  for (const json& c : doc.at("cases")) {
    GoldenCase g;
    g.name = c.at("name").get<std::string>();
    if (c.contains("file")) {
      g.text = read_file(kGolden / c["file"].get<std::string>());
    } else if (c.contains("text_hex")) {
      g.text = from_hex(c["text_hex"].get<std::string>());
    } else {
      g.text = c.at("text").get<std::string>();
    }
    g.max_tokens = c.at("max_tokens").is_null() ? 0 : c["max_tokens"].get<int>();
    g.ids = c.at("ids").get<std::vector<int32_t>>();
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<int32_t> encode_case(const WordPiece& wp, const GoldenCase& c) {
  if (c.max_tokens > 0) return wp.encode(c.text, c.max_tokens);
  std::vector<int32_t> ids{wp.cls_id()};
  const std::vector<int32_t> pieces = wp.encode_pieces(c.text);
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  ids.push_back(wp.sep_id());
  return ids;
}

std::string show(const std::vector<int32_t>& ids) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < ids.size(); ++i) os << (i ? ", " : "") << ids[i];
  os << "] (" << ids.size() << ")";
  return os.str();
}

}  // namespace

TEST_CASE("wordpiece golden: every snippet's ids equal HF tokenizers'", "[wordpiece]") {
  if (!vsynth::test::have_default_encoder()) return;
  const WordPiece wp = WordPiece::from_file(vsynth::test::default_encoder() / "tokenizer.json");
  REQUIRE(wp.vocab_size() == 30522);
  const std::vector<GoldenCase> cases = load_cases();
  REQUIRE(cases.size() >= 200);
  size_t mismatches = 0;
  for (const GoldenCase& c : cases) {
    const std::vector<int32_t> got = encode_case(wp, c);
    if (got == c.ids) continue;
    if (mismatches++ == 0) {
      size_t at = 0;
      while (at < got.size() && at < c.ids.size() && got[at] == c.ids[at]) ++at;
      UNSCOPED_INFO("first mismatch: case " << c.name << " at id " << at << "\n  expected "
                                            << show(c.ids) << "\n  got      " << show(got));
    }
  }
  INFO(mismatches << " of " << cases.size() << " cases differ");
  CHECK(mismatches == 0);
}

TEST_CASE("wordpiece golden: two threads encode the same ids as one", "[wordpiece]") {
  if (!vsynth::test::have_default_encoder()) return;
  const WordPiece wp = WordPiece::from_file(vsynth::test::default_encoder() / "tokenizer.json");
  const std::vector<GoldenCase> cases = load_cases();
  std::vector<std::vector<int32_t>> serial;
  for (const GoldenCase& c : cases) serial.push_back(encode_case(wp, c));
  // Each thread encodes every case three times, in opposite orders, while the other runs.
  std::vector<std::vector<int32_t>> a(cases.size()), b(cases.size());
  std::thread t1([&] {
    for (int r = 0; r < 3; ++r)
      for (size_t i = 0; i < cases.size(); ++i) a[i] = encode_case(wp, cases[i]);
  });
  std::thread t2([&] {
    for (int r = 0; r < 3; ++r)
      for (size_t i = cases.size(); i-- > 0;) b[i] = encode_case(wp, cases[i]);
  });
  t1.join();
  t2.join();
  CHECK(a == serial);
  CHECK(b == serial);
}
