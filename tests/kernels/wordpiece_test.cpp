// WordPiece on hand-made vocabularies: the algorithm (longest match first, "##" continuation,
// [UNK], the per-word character limit, punctuation and CJK splitting, the BERT normalizer),
// added tokens in the text, truncation, invalid UTF-8, and the tokenizer.json checks.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/tokenizer/wordpiece.h"

using namespace vsynth::kernels;
using nlohmann::json;

namespace {

// Ids 0..4 are the special tokens, then `pieces` in order.
json make_doc(const std::vector<std::string>& pieces) {
  json vocab = json::object();
  const std::vector<std::string> specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  json added = json::array();
  for (size_t i = 0; i < specials.size(); ++i) {
    vocab[specials[i]] = i;
    added.push_back({{"id", i},
                     {"content", specials[i]},
                     {"special", true},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false}});
  }
  for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = specials.size() + i;
  return {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", json::array({{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}})}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", vocab}}},
  };
}

const std::vector<std::string> kPieces = {
    "un",  "##aff",   "##able", "unaff", "##a",          "a",     "b",     "c",   "x",   "y",
    ",",   ".",       "!",      "—",     "中",           "文",    "cafe",  "##s", "ab",  "##c",
    "##b", "é",       "[",      "]",     "mask",         "hello", "world", "ß",   "##ß", "aaaaa",
    "#",   "##aaaaa", "e",      "##e",   "x\u1b44\u08d4"};

WordPiece small(const json& doc = make_doc(kPieces)) {
  return WordPiece::from_json(doc.dump(), "small.json");
}

// The pieces' texts, to read failures easily.
std::vector<std::string> texts(const WordPiece& wp, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (const int32_t id : ids) out.push_back(wp.piece(id));
  return out;
}

using Strings = std::vector<std::string>;

std::string hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const char c : s) {
    out.push_back(digits[static_cast<uint8_t>(c) >> 4]);
    out.push_back(digits[static_cast<uint8_t>(c) & 15]);
  }
  return out;
}

}  // namespace

TEST_CASE("wordpiece: greedy longest match first, later pieces with ##", "[wordpiece]") {
  const WordPiece wp = small();
  // "unaff" beats "un" + "##aff": the longest prefix wins even where a shorter one would
  // also lead to a full cover.
  CHECK(texts(wp, wp.encode_pieces("unaffable")) == Strings{"unaff", "##able"});
  CHECK(texts(wp, wp.encode_pieces("unaffa")) == Strings{"unaff", "##a"});
  CHECK(texts(wp, wp.encode_pieces("abc")) == Strings{"ab", "##c"});
  CHECK(texts(wp, wp.encode_pieces("cafes")) == Strings{"cafe", "##s"});
  // A continuation never matches a word-initial piece: "b" is not "##b".
  CHECK(texts(wp, wp.encode_pieces("ab b")) == Strings{"ab", "b"});
}

TEST_CASE("wordpiece: a word without a full cover is one [UNK]", "[wordpiece]") {
  const WordPiece wp = small();
  // "un" matches, then nothing covers "z": the whole word is [UNK], not "un" + [UNK].
  CHECK(texts(wp, wp.encode_pieces("unz")) == Strings{"[UNK]"});
  CHECK(texts(wp, wp.encode_pieces("a unz b")) == Strings{"a", "[UNK]", "b"});
  CHECK(wp.encode_pieces("zzz") == std::vector<int32_t>{wp.unk_id()});
}

TEST_CASE("wordpiece: words over max_input_chars_per_word code points are [UNK]", "[wordpiece]") {
  json doc = make_doc(kPieces);
  doc["model"]["max_input_chars_per_word"] = 5;
  const WordPiece wp = small(doc);
  CHECK(texts(wp, wp.encode_pieces("aaaaa")) == Strings{"aaaaa"});
  CHECK(texts(wp, wp.encode_pieces("aaaaaa")) == Strings{"[UNK]"});
  // Code points, not bytes: five é (ten bytes) are within the limit, six are not.
  CHECK(texts(wp, wp.encode_pieces("ßßßßß")) == Strings{"ß", "##ß", "##ß", "##ß", "##ß"});
  CHECK(texts(wp, wp.encode_pieces("ßßßßßß")) == Strings{"[UNK]"});
  // The limit is per word: punctuation ends one.
  CHECK(texts(wp, wp.encode_pieces("aaaaa!aaaaa")) == Strings{"aaaaa", "!", "aaaaa"});
}

TEST_CASE("wordpiece: punctuation is a word of its own, whitespace splits", "[wordpiece]") {
  const WordPiece wp = small();
  CHECK(texts(wp, wp.encode_pieces("a,b")) == Strings{"a", ",", "b"});
  CHECK(texts(wp, wp.encode_pieces("a.!b")) == Strings{"a", ".", "!", "b"});
  CHECK(texts(wp, wp.encode_pieces("a—b")) == Strings{"a", "—", "b"});  // U+2014, Pd
  // ASCII symbols count as punctuation for BERT even where Unicode says Sm/Sk: "#" splits.
  CHECK(texts(wp, wp.encode_pieces("a#b")) == Strings{"a", "#", "b"});
  CHECK(texts(wp, wp.encode_pieces(" a \t b\r\nc\u3000x ")) == Strings{"a", "b", "c", "x"});
}

TEST_CASE("wordpiece: CJK ideographs are words of their own, kana is not", "[wordpiece]") {
  const WordPiece wp = small();
  CHECK(texts(wp, wp.encode_pieces("中文")) == Strings{"中", "文"});
  CHECK(texts(wp, wp.encode_pieces("a中b")) == Strings{"a", "中", "b"});
  // Hiragana is not in the CJK blocks: "aかb" stays one word, which nothing covers.
  CHECK(texts(wp, wp.encode_pieces("aかb")) == Strings{"[UNK]"});
}

TEST_CASE("wordpiece: the BERT normalizer lowercases, strips accents, drops controls",
          "[wordpiece]") {
  const WordPiece wp = small();
  CHECK(texts(wp, wp.encode_pieces("CAFÉS")) == Strings{"cafe", "##s"});
  CHECK(texts(wp, wp.encode_pieces("Cafe\u0301")) == Strings{"cafe"});  // combining acute
  // NUL, U+FFFD, controls and format characters vanish inside the word, not between words.
  CHECK(texts(wp, wp.encode_pieces(std::string("a\0b", 3))) == Strings{"ab"});
  CHECK(texts(wp, wp.encode_pieces("a\u200bb\ufffdc\x7f")) == Strings{"ab", "##c"});
  // ß is kept (no full case folding); ẞ lowercases to ß.
  CHECK(texts(wp, wp.encode_pieces("ẞß")) == Strings{"ß", "##ß"});
  // İ: NFD gives I + U+0307, the dot is stripped, then I lowercases.
  CHECK(texts(wp, wp.encode_pieces("İ")) == texts(wp, wp.encode_pieces("i")));
  // Counted after normalization: five é are five e.
  CHECK(texts(wp, wp.encode_pieces("ÉÉé")) == Strings{"e", "##e", "##e"});
}

TEST_CASE("wordpiece: accent stripping puts the kept marks in canonical order", "[wordpiece]") {
  const WordPiece wp = small();
  // U+08D4 (class 230) and U+1B44 (class 9) are marks HF's strip_accents keeps; NFD sorts them
  // by class, also across a dropped acute (230) between them, as HF does.
  CHECK(texts(wp, wp.encode_pieces("X\u08d4\u1b44")) == Strings{"x\u1b44\u08d4"});
  CHECK(texts(wp, wp.encode_pieces("X\u08d4\u0301\u1b44")) == Strings{"x\u1b44\u08d4"});
  CHECK(texts(wp, wp.encode_pieces("X\u1b44\u08d4")) == Strings{"x\u1b44\u08d4"});
  // A starter between them ends the run: no reordering across "y".
  CHECK(texts(wp, wp.encode_pieces("x\u08d4y\u1b44")) == Strings{"[UNK]"});
}

TEST_CASE("wordpiece: strip_accents false keeps the marks", "[wordpiece]") {
  json doc = make_doc(kPieces);
  doc["normalizer"]["strip_accents"] = false;
  const WordPiece wp = small(doc);
  CHECK(texts(wp, wp.encode_pieces("É")) == Strings{"é"});
  // And leaves their order alone.
  CHECK(texts(wp, wp.encode_pieces("x\u08d4\u1b44")) == Strings{"[UNK]"});
}

TEST_CASE("wordpiece: no normalizer leaves the text as it is", "[wordpiece]") {
  json doc = make_doc(kPieces);
  doc["normalizer"] = nullptr;
  const WordPiece wp = small(doc);
  CHECK(texts(wp, wp.encode_pieces("cafe CAFE")) == Strings{"cafe", "[UNK]"});
  CHECK(texts(wp, wp.encode_pieces("é")) == Strings{"é"});
  // Without clean_text a NUL stays in the word, which nothing then covers.
  CHECK(texts(wp, wp.encode_pieces(std::string("a\0b", 3))) == Strings{"[UNK]"});
}

TEST_CASE("wordpiece: BertProcessing and another continuation prefix", "[wordpiece]") {
  json doc = make_doc({"un", "@@aff", "@@able", "##able", "@@n"});
  doc["post_processor"] = {
      {"type", "BertProcessing"}, {"cls", {"[SEP]", 3}}, {"sep", {"[CLS]", 2}}};
  doc["model"]["continuing_subword_prefix"] = "@@";
  doc["model"].erase("max_input_chars_per_word");  // default 100
  const WordPiece wp = small(doc);
  CHECK(wp.cls_id() == 3);
  CHECK(wp.sep_id() == 2);
  CHECK(texts(wp, wp.encode("unaffable", 8)) == Strings{"[SEP]", "un", "@@aff", "@@able", "[CLS]"});
  CHECK(wp.encode_pieces("u" + std::string(99, 'n')).size() == 99);  // un, 98 x @@n
  CHECK(texts(wp, wp.encode_pieces("u" + std::string(100, 'n'))) == Strings{"[UNK]"});
}

TEST_CASE("wordpiece: added tokens in the text are matched before normalization", "[wordpiece]") {
  const WordPiece wp = small();
  CHECK(texts(wp, wp.encode_pieces("hello [MASK] world")) == Strings{"hello", "[MASK]", "world"});
  CHECK(texts(wp, wp.encode_pieces("a[CLS]b")) == Strings{"a", "[CLS]", "b"});
  // Not matched once normalized: "[mask]" is three words.
  CHECK(texts(wp, wp.encode_pieces("[mask]")) == Strings{"[", "mask", "]"});
  CHECK(wp.encode("[SEP]", 8) == std::vector<int32_t>{wp.cls_id(), wp.sep_id(), wp.sep_id()});
}

TEST_CASE("wordpiece: encode wraps in [CLS] [SEP] and truncates to max_tokens", "[wordpiece]") {
  const WordPiece wp = small();
  CHECK(wp.cls_id() == 2);
  CHECK(wp.sep_id() == 3);
  CHECK(wp.pad_id() == 0);
  CHECK(wp.unk_id() == 1);
  CHECK(wp.encode("", 16) == std::vector<int32_t>{2, 3});
  const std::vector<int32_t> all = wp.encode("a b c x y", 16);
  CHECK(texts(wp, all) == Strings{"[CLS]", "a", "b", "c", "x", "y", "[SEP]"});
  CHECK(texts(wp, wp.encode("a b c x y", 4)) == Strings{"[CLS]", "a", "b", "[SEP]"});
  // A cut may fall inside a word's pieces, as in HF.
  CHECK(texts(wp, wp.encode("unaffable", 3)) == Strings{"[CLS]", "unaff", "[SEP]"});
  CHECK(wp.encode("a b", 2) == std::vector<int32_t>{2, 3});
  CHECK_THROWS_WITH(wp.encode("a", 1), Catch::Contains("max_tokens 1"));
  CHECK(wp.piece(5 + 2) == "##able");
  CHECK_THROWS_AS(wp.piece(wp.vocab_size()), WordPieceError);
  CHECK_THROWS_AS(wp.piece(-1), WordPieceError);
}

TEST_CASE("wordpiece: invalid UTF-8 is read as U+FFFD and never throws", "[wordpiece]") {
  const WordPiece wp = small();
  // Each malformed sequence is dropped inside its word, as HF does with the text decoded
  // with errors="replace" (the golden file's text_hex cases pin that against HF itself).
  const std::vector<std::string> bad = {
      "ab\x80"
      "c",
      "ab\xff"
      "c",
      "ab\xc3",
      "ab\xc0\xaf"
      "c",
      "ab\xed\xa0\x80"
      "c",
      "ab\xf4\x90\x80\x80"
      "c",
      "ab\xe4\xb8"
      "c"};
  for (const std::string& s : bad) {
    INFO("bytes: " << hex(s));
    const std::vector<int32_t> ids = wp.encode_pieces(s);
    if (s.size() == 3) {
      CHECK(texts(wp, ids) == Strings{"ab"});
    } else {
      CHECK(texts(wp, ids) == Strings{"ab", "##c"});
    }
  }
  // Random bytes: never an exception, every id in the vocabulary.
  std::mt19937 rng(42);
  for (int n = 0; n < 2000; ++n) {
    std::string s(static_cast<size_t>(rng() % 64), '\0');
    for (char& c : s) c = static_cast<char>(rng() & 0xFF);
    std::vector<int32_t> ids;
    REQUIRE_NOTHROW(ids = wp.encode(s, 32));
    REQUIRE(ids.size() <= 32);
    for (const int32_t id : ids) REQUIRE((id >= 0 && id < wp.vocab_size()));
  }
}

TEST_CASE("wordpiece: two threads on a small vocabulary give one thread's ids", "[wordpiece]") {
  const WordPiece wp = small();
  const std::string text = "unaffable cafes, a中b [MASK] CAFÉ zzz abc";
  const std::vector<int32_t> want = wp.encode(text, 64);
  std::vector<int32_t> got1, got2;
  bool same1 = true, same2 = true;
  std::thread t1([&] {
    for (int i = 0; i < 2000; ++i) same1 = same1 && wp.encode(text, 64) == want;
  });
  std::thread t2([&] {
    for (int i = 0; i < 2000; ++i) same2 = same2 && wp.encode(text, 64) == want;
  });
  t1.join();
  t2.join();
  CHECK(same1);
  CHECK(same2);
}

// ---- tokenizer.json checks ----

namespace {

std::string error_of(const std::string& text) {
  try {
    (void)WordPiece::from_json(text, "bad/tokenizer.json");
  } catch (const WordPieceError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string error_of(const json& doc) {
  return error_of(doc.dump());
}

}  // namespace

TEST_CASE("wordpiece: bad tokenizer.json names the file and the JSON path", "[wordpiece]") {
  SECTION("not JSON") {
    const std::string e = error_of(std::string("{\"model\": "));
    CHECK_THAT(e, Catch::StartsWith("bad/tokenizer.json: not JSON"));
  }
  SECTION("not an object") {
    CHECK_THAT(error_of(std::string("[1, 2]")), Catch::Contains("bad/tokenizer.json"));
  }
  SECTION("wrong model type") {
    json doc = make_doc(kPieces);
    doc["model"]["type"] = "BPE";
    CHECK_THAT(error_of(doc),
               Catch::Contains("bad/tokenizer.json: model.type") && Catch::Contains("BPE"));
  }
  SECTION("no model") {
    json doc = make_doc(kPieces);
    doc.erase("model");
    CHECK_THAT(error_of(doc), Catch::Contains("bad/tokenizer.json: model: missing"));
  }
  SECTION("missing vocab") {
    json doc = make_doc(kPieces);
    doc["model"].erase("vocab");
    CHECK_THAT(error_of(doc), Catch::Contains("bad/tokenizer.json: model.vocab: missing"));
  }
  SECTION("empty vocab") {
    json doc = make_doc(kPieces);
    doc["model"]["vocab"] = json::object();
    CHECK_THAT(error_of(doc), Catch::Contains("model.vocab: expected a non-empty object"));
  }
  SECTION("duplicate id") {
    json doc = make_doc(kPieces);
    doc["model"]["vocab"]["##able"] = 5;  // the id of "un"
    const std::string e = error_of(doc);
    CHECK_THAT(e, Catch::Contains("bad/tokenizer.json: model.vocab[") &&
                      Catch::Contains("duplicate id 5"));
  }
  SECTION("id out of range") {
    json doc = make_doc(kPieces);
    doc["model"]["vocab"]["un"] = 100000;
    CHECK_THAT(error_of(doc), Catch::Contains("model.vocab[\"un\"]: id 100000 is not in 0.."));
  }
  SECTION("missing [CLS]") {
    json doc = make_doc(kPieces);
    doc["post_processor"]["single"][0]["SpecialToken"]["id"] = "<s>";
    CHECK_THAT(error_of(doc), Catch::Contains("post_processor.single[0]") &&
                                  Catch::Contains("\"<s>\" is not in model.vocab"));
  }
  SECTION("missing unk token") {
    json doc = make_doc(kPieces);
    doc["model"]["unk_token"] = "<unk>";
    CHECK_THAT(error_of(doc), Catch::Contains("model.unk_token: \"<unk>\" is not in"));
  }
  SECTION("missing [PAD]") {
    json doc = make_doc(kPieces);
    doc["model"]["vocab"].erase("[PAD]");
    doc["model"]["vocab"]["zz"] = 0;
    doc["added_tokens"].erase(0);
    CHECK_THAT(error_of(doc), Catch::Contains("\"[PAD]\" is not in model.vocab"));
  }
  SECTION("unsupported normalizer") {
    json doc = make_doc(kPieces);
    doc["normalizer"] = {{"type", "NFKC"}};
    CHECK_THAT(error_of(doc),
               Catch::Contains("bad/tokenizer.json: normalizer.type") && Catch::Contains("NFKC"));
  }
  SECTION("unsupported pre-tokenizer") {
    json doc = make_doc(kPieces);
    doc["pre_tokenizer"] = {{"type", "Whitespace"}};
    CHECK_THAT(error_of(doc), Catch::Contains("bad/tokenizer.json: pre_tokenizer") &&
                                  Catch::Contains("Whitespace"));
  }
  SECTION("unsupported post-processor") {
    json doc = make_doc(kPieces);
    doc["post_processor"] = {{"type", "RobertaProcessing"}};
    CHECK_THAT(error_of(doc), Catch::Contains("post_processor.type"));
  }
  SECTION("added token with another id than the vocabulary's") {
    json doc = make_doc(kPieces);
    doc["added_tokens"][4]["id"] = 7;
    CHECK_THAT(error_of(doc), Catch::Contains("added_tokens[4].id"));
  }
  SECTION("added token that is normalized") {
    json doc = make_doc(kPieces);
    doc["added_tokens"][2]["normalized"] = true;
    CHECK_THAT(error_of(doc), Catch::Contains("added_tokens[2].normalized"));
  }
  SECTION("bad normalizer flag") {
    json doc = make_doc(kPieces);
    doc["normalizer"]["lowercase"] = "yes";
    CHECK_THAT(error_of(doc), Catch::Contains("normalizer.lowercase"));
  }
  SECTION("a file that is not there") {
    CHECK_THROWS_WITH(WordPiece::from_file("/nonexistent/tokenizer.json"),
                      Catch::Contains("/nonexistent/tokenizer.json: cannot open"));
  }
  SECTION("a valid file reads") {
    const std::filesystem::path p =
        std::filesystem::temp_directory_path() / "vsynth_wordpiece_test_tokenizer.json";
    std::ofstream(p) << make_doc(kPieces).dump();
    CHECK(WordPiece::from_file(p).vocab_size() == static_cast<int32_t>(5 + kPieces.size()));
    std::filesystem::remove(p);
  }
}
