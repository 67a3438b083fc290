// SentencePiece-style tokenizer on small hand-made vocabularies.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernels/tokenizer/tokenizer.h"
#include "tests/kernels/tokenizer_test_util.h"

using namespace vsynth::kernels;
using vsynth::kernels::test::spm_vocab;
using vsynth::kernels::test::texts;
using Strings = std::vector<std::string>;

namespace {
const EncodeOptions kPlain{false, true};  // no BOS/EOS
const std::string kSp = "\xE2\x96\x81";   // U+2581
}  // namespace

TEST_CASE("spm: the pair with the highest score merges first", "[tokenizer][spm]") {
  SECTION("bc scores higher") {
    Tokenizer tok(spm_vocab({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -2}, {"bc", -1}}));
    CHECK(texts(tok, tok.encode("abc", kPlain)) == Strings{"a", "bc"});
  }
  SECTION("ab scores higher") {
    Tokenizer tok(spm_vocab({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -1}, {"bc", -2}}));
    CHECK(texts(tok, tok.encode("abc", kPlain)) == Strings{"ab", "c"});
  }
  SECTION("merges build on merges") {
    Tokenizer tok(spm_vocab({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -1}, {"abc", -3}}));
    CHECK(texts(tok, tok.encode("abc", kPlain)) == Strings{"abc"});
  }
  SECTION("pairs that lost a symbol to a better merge are dropped") {
    // "bc" (-1) takes b; "ab" can no longer form; then nothing joins a + bc.
    Tokenizer tok(spm_vocab(
        {{"a", -5}, {"b", -5}, {"c", -5}, {"d", -5}, {"ab", -2}, {"bc", -1}, {"cd", -3}}));
    CHECK(texts(tok, tok.encode("abcd", kPlain)) == Strings{"a", "bc", "d"});
  }
}

TEST_CASE("spm: equal scores merge the leftmost pair first", "[tokenizer][spm]") {
  SECTION("overlapping pairs") {
    Tokenizer tok(spm_vocab({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -1}, {"bc", -1}}));
    CHECK(texts(tok, tok.encode("abc", kPlain)) == Strings{"ab", "c"});
  }
  SECTION("runs of one character") {
    Tokenizer tok(spm_vocab({{"a", -5}, {"aa", -1}}));
    CHECK(texts(tok, tok.encode("aaa", kPlain)) == Strings{"aa", "a"});
    CHECK(texts(tok, tok.encode("aaaaa", kPlain)) == Strings{"aa", "aa", "a"});
  }
}

TEST_CASE("spm: long inputs merge completely", "[tokenizer][spm]") {
  // 100000 'a' with pieces up to 8 characters: every piece is "aaaaaaaa".
  Tokenizer tok(spm_vocab({{"a", -9}, {"aa", -3}, {"aaaa", -2}, {"aaaaaaaa", -1}}));
  const auto ids = tok.encode(std::string(100000, 'a'), kPlain);
  REQUIRE(ids.size() == 12500);
  CHECK(tok.text(ids.front()) == "aaaaaaaa");
  CHECK(tok.text(ids.back()) == "aaaaaaaa");
}

TEST_CASE("spm: spaces become U+2581 and the space prefix follows add_space_prefix",
          "[tokenizer][spm]") {
  auto v = spm_vocab({{"h", -5}, {"i", -5}, {kSp, -5}, {"hi", -1}, {kSp + "hi", -0.5f}});
  SECTION("without prefix") {
    Tokenizer tok(v);
    CHECK(texts(tok, tok.encode("hi hi", kPlain)) == Strings{"hi", kSp + "hi"});
    CHECK(tok.decode(tok.encode("hi hi", kPlain)) == "hi hi");
  }
  SECTION("with prefix, also after a special token") {
    v.add_space_prefix = true;
    Tokenizer tok(v);
    CHECK(texts(tok, tok.encode("hi hi", kPlain)) == Strings{kSp + "hi", kSp + "hi"});
    CHECK(texts(tok, tok.encode("hi</s>hi", kPlain)) == Strings{kSp + "hi", "</s>", kSp + "hi"});
    // The decoder drops the one space it added.
    CHECK(tok.decode(tok.encode("hi hi", kPlain)) == "hi hi");
  }
}

TEST_CASE("spm: characters outside the vocabulary fall back to byte tokens", "[tokenizer][spm]") {
  Tokenizer tok(spm_vocab({{"a", -1}}));
  // U+00E9 is C3 A9.
  CHECK(texts(tok, tok.encode("a\xC3\xA9", kPlain)) == Strings{"a", "<0xC3>", "<0xA9>"});
  CHECK(tok.decode(tok.encode("a\xC3\xA9", kPlain)) == "a\xC3\xA9");
  SECTION("without byte tokens, unk") {
    Tokenizer nobytes(spm_vocab({{"a", -1}}, {}, false));
    CHECK(texts(nobytes, nobytes.encode("a\xC3\xA9", kPlain)) == Strings{"a", "<unk>", "<unk>"});
  }
}

TEST_CASE("spm: special tokens are split out before merging", "[tokenizer][spm]") {
  auto v =
      spm_vocab({{"a", -1}, {"<", -1}, {">", -1}, {"/", -1}, {"s", -1}}, {"<tab>", "<tab><tab>"});
  v.tokens.push_back("<start_of_turn>");
  v.scores.push_back(0);
  v.types.push_back(TokenType::Control);
  Tokenizer tok(v);
  SECTION("control tokens when parse_special") {
    CHECK(texts(tok, tok.encode("a<start_of_turn>a", kPlain)) ==
          Strings{"a", "<start_of_turn>", "a"});
    CHECK(texts(tok, tok.encode("<s>a</s>", kPlain)) == Strings{"<s>", "a", "</s>"});
  }
  SECTION("control tokens are plain text otherwise") {
    const auto ids = tok.encode("a</s>", {false, false});
    CHECK(texts(tok, ids) == Strings{"a", "<", "/", "s", ">"});
  }
  SECTION("user-defined tokens always, longest first") {
    CHECK(texts(tok, tok.encode("a<tab><tab><tab>a", {false, false})) ==
          Strings{"a", "<tab><tab>", "<tab>", "a"});
  }
}

TEST_CASE("spm: a longer special token wins over an earlier overlapping shorter one",
          "[tokenizer][spm]") {
  // llama.cpp splits special tokens longest first over the whole text, not leftmost first:
  // in "abcd", "bcd" is taken before "ab" is looked for.
  Tokenizer tok(spm_vocab({{"a", -1}, {"c", -1}, {"d", -1}}, {"ab", "bcd"}));
  CHECK(texts(tok, tok.encode("abcd", kPlain)) == Strings{"a", "bcd"});
  CHECK(texts(tok, tok.encode("abab", kPlain)) == Strings{"ab", "ab"});
}

TEST_CASE("spm: end-of-turn tokens are control tokens, whatever their stored type",
          "[tokenizer][spm]") {
  // Gemma 3 stores the HTML tag "</s>" as user-defined; llama.cpp treats it as end of
  // generation and control, so it is text when control tokens are not parsed.
  auto v =
      spm_vocab({{"a", -1}, {"<", -1}, {"/", -1}, {"s", -1}, {">", -1}}, {"</s>", "<end_of_turn>"});
  v.tokens[2] = "<eos>";  // the EOS
  Tokenizer tok(v);
  const TokenId slash_s = tok.find("</s>").value(), eot = tok.find("<end_of_turn>").value();
  CHECK(tok.eot() == eot);
  CHECK(tok.is_eog(eot));
  CHECK(tok.is_eog(slash_s));
  CHECK(tok.is_eog(2));
  CHECK_FALSE(tok.is_eog(1));
  CHECK(tok.is_control(slash_s));
  CHECK(texts(tok, tok.encode("a</s>", kPlain)) == Strings{"a", "</s>"});
  CHECK(texts(tok, tok.encode("a</s>", {false, false})) == Strings{"a", "<", "/", "s", ">"});
  CHECK(tok.decode(tok.encode("a</s>", kPlain)) == "a");
}

TEST_CASE("spm: BOS and EOS follow the vocabulary and add_special", "[tokenizer][spm]") {
  auto v = spm_vocab({{"a", -1}});
  SECTION("defaults: BOS only") {
    Tokenizer tok(v);
    CHECK(tok.encode("a") == std::vector<TokenId>{1, 259});
    CHECK(tok.encode("a", kPlain) == std::vector<TokenId>{259});
    CHECK(tok.encode("") == std::vector<TokenId>{1});
  }
  SECTION("add_eos") {
    v.add_bos = false;
    v.add_eos = true;
    Tokenizer tok(v);
    CHECK(tok.encode("a") == std::vector<TokenId>{259, 2});
  }
}

TEST_CASE("spm: decode renders or skips special tokens", "[tokenizer][spm]") {
  Tokenizer tok(spm_vocab({{"a", -1}}, {"<tab>"}));
  const auto ids = tok.encode("a<tab>a</s>");  // BOS added
  REQUIRE(texts(tok, ids) == Strings{"<s>", "a", "<tab>", "a", "</s>"});
  CHECK(tok.decode(ids) == "a<tab>a");
  CHECK(tok.decode(ids, {true, false, true}) == "<s>a<tab>a</s>");
  CHECK(tok.piece(1) == "");
  CHECK(tok.piece(1, true) == "<s>");
  CHECK(tok.piece(3 + 0x41) == "A");
  CHECK_THROWS_AS(tok.decode(std::vector<TokenId>{100000}), TokenizerError);
  CHECK_THROWS_AS(tok.decode(std::vector<TokenId>{-1}), TokenizerError);
}

TEST_CASE("spm: decode(encode(s)) == s", "[tokenizer][spm]") {
  const std::string sp = kSp;
  // A vocabulary with some ASCII pieces; everything else goes through byte tokens.
  Tokenizer tok(spm_vocab({{"a", -3},
                           {"e", -3},
                           {sp, -3},
                           {"t", -3},
                           {"he", -2},
                           {"the", -1},
                           {sp + "the", -0.5f},
                           {"\xE4\xB8\xAD", -2}}));
  const std::vector<std::string> samples = {
      "the cat ate the hat",
      "  leading and trailing  ",
      "tabs\tand\nnewlines\r\n",
      "\xE4\xB8\xAD\xE6\x96\x87 CJK",                            // 中文
      "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB emoji ZWJ",  // 👩‍💻
      "e\xCC\x81 combining",                                     // e + U+0301
      "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D RTL",                    // שלום
      std::string("nul\0inside", 10),
  };
  for (const auto& s : samples) {
    CAPTURE(s);
    CHECK(tok.decode(tok.encode(s, kPlain)) == s);
  }
  SECTION("invalid UTF-8 survives byte for byte") {
    for (const std::string s :
         {"\xFF\xFE", "\xE4\xB8", "a\x80z", "\xC3", "\xF0\x9F\x98", "\xED\xA0\x80"}) {
      CAPTURE(s);
      CHECK(tok.decode(tok.encode(s, kPlain)) == s);
    }
  }
}

TEST_CASE("spm: any byte string without spaces round-trips", "[tokenizer][spm]") {
  // Byte fallback makes SPM lossless for arbitrary bytes (no special token texts occur here).
  Tokenizer tok(spm_vocab({{"a", -3}, {"b", -3}, {kSp, -3}, {"ab", -1}, {kSp + "a", -2}}));
  uint32_t x = 12345;
  for (int n = 0; n < 300; ++n) {
    std::string s;
    const int len = n % 48;
    for (int i = 0; i < len; ++i) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      // Mostly a, b and high bytes, so merges and broken UTF-8 both occur.
      const char pool[] = {'a', 'b', '\xC3', '\xA9', '\xE4', '\xF0', '\x80', '\n', '\0', '\t'};
      s.push_back(pool[x % sizeof pool]);
    }
    CAPTURE(n);
    REQUIRE(tok.decode(tok.encode(s, kPlain)) == s);
  }
}

TEST_CASE("spm: a space right after a broken UTF-8 sequence comes back as U+2581",
          "[tokenizer][spm]") {
  // As in llama.cpp: spaces become U+2581 (E2 96 81) before splitting, and a lead byte whose
  // sequence is cut short claims the following bytes unchecked, so the escaped space falls into
  // byte tokens and decodes to the U+2581 bytes, not to a space.
  Tokenizer tok(spm_vocab({{"a", -1}, {kSp + "a", -1}}));
  CHECK(tok.decode(tok.encode("\xC3 a", kPlain)) ==
        "\xC3\xE2\x96\x81"
        "a");
  CHECK(tok.decode(tok.encode("\xC3\xA9 a", kPlain)) == "\xC3\xA9 a");  // whole sequence: fine
}

TEST_CASE("spm: malformed vocabularies give errors that say what is wrong", "[tokenizer][spm]") {
  auto base = spm_vocab({{"a", -1}});
  auto message = [](const Vocab& v) {
    try {
      Tokenizer tok(v);
    } catch (const TokenizerError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  SECTION("special id outside the vocabulary") {
    auto v = base;
    v.bos = static_cast<TokenId>(v.tokens.size());
    CHECK_THAT(message(v), Catch::Contains("bos_token_id") && Catch::Contains("outside"));
    v = base;
    v.eos = 1 << 30;
    CHECK_THAT(message(v), Catch::Contains("eos_token_id"));
  }
  SECTION("array lengths disagree") {
    auto v = base;
    v.scores.pop_back();
    CHECK_THAT(message(v), Catch::Contains("scores"));
    v = base;
    v.types.push_back(TokenType::Normal);
    CHECK_THAT(message(v), Catch::Contains("token_type"));
  }
  SECTION("duplicates, bad byte tokens, unknown kinds") {
    auto v = base;
    v.tokens[5] = v.tokens[4];
    CHECK_THAT(message(v), Catch::Contains("duplicate"));
    v = base;
    v.tokens[3] = "<0xZZ>";
    CHECK_THAT(message(v), Catch::Contains("<0xXX>"));
    v = base;
    v.model = "bert";
    CHECK_THAT(message(v), Catch::Contains("not supported"));
    v = base;
    v.tokens.clear();
    v.scores.clear();
    v.types.clear();
    CHECK_THAT(message(v), Catch::Contains("empty"));
  }
  SECTION("add_bos without a bos id") {
    auto v = base;
    v.bos = kNoToken;
    CHECK_THAT(message(v), Catch::Contains("add_bos_token"));
  }
}
