// Byte-level BPE tokenizer on small hand-made vocabularies.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernels/tokenizer/tokenizer.h"
#include "tests/kernels/tokenizer_test_util.h"

using namespace vsynth::kernels;
using vsynth::kernels::test::bpe_vocab;
using vsynth::kernels::test::g2;
using vsynth::kernels::test::texts;
using Strings = std::vector<std::string>;

namespace {
const EncodeOptions kPlain{false, true};
}

TEST_CASE("bpe: the pair with the lowest merge rank merges first", "[tokenizer][bpe]") {
  SECTION("rank order, not text order") {
    Tokenizer tok(bpe_vocab({{"b", "c"}, {"a", "b"}}));
    CHECK(texts(tok, tok.encode("abc", kPlain)) == Strings{"a", "bc"});
  }
  SECTION("merges of merges") {
    Tokenizer tok(bpe_vocab({{"b", "c"}, {"a", "bc"}}));
    CHECK(texts(tok, tok.encode("abc", kPlain)) == Strings{"abc"});
  }
  SECTION("the same pair twice merges leftmost first") {
    Tokenizer tok(bpe_vocab({{"a", "a"}}));
    CHECK(texts(tok, tok.encode("aaa", kPlain)) == Strings{"aa", "a"});
  }
  SECTION("spaces are part of the word in the GPT-2 alphabet") {
    Tokenizer tok(bpe_vocab({{g2(" "), "h"}, {g2(" h"), "i"}}));
    CHECK(texts(tok, tok.encode("hi hi", kPlain)) == Strings{"h", "i", g2(" hi")});
    CHECK(tok.decode(tok.encode("hi hi", kPlain)) == "hi hi");
  }
}

TEST_CASE("bpe: merges never cross pre-tokenizer words", "[tokenizer][bpe]") {
  // "a1" would merge if digits and letters shared a word.
  Tokenizer tok(bpe_vocab({{"a", "1"}, {"1", "2"}}));
  CHECK(texts(tok, tok.encode("a12", kPlain)) ==
        Strings{"a", "1", "2"});  // qwen2: one digit per word
  Tokenizer l3(bpe_vocab({{"a", "1"}, {"1", "2"}}, "llama-bpe"));
  CHECK(texts(l3, l3.encode("a12", {false, true})) == Strings{"a", "12"});
}

TEST_CASE("bpe: llama3 emits a word that is a token whole (ignore_merges)", "[tokenizer][bpe]") {
  // "abc" is a token but no merge sequence reaches it ("a b" is missing).
  auto v = bpe_vocab({{"b", "c"}}, "llama-bpe");
  v.tokens.push_back("abc");
  v.types.push_back(TokenType::Normal);
  Tokenizer l3(v);
  CHECK(texts(l3, l3.encode("abc", kPlain)) == Strings{"abc"});
  v.pre = "qwen2";
  Tokenizer q(v);
  CHECK(texts(q, q.encode("abc", kPlain)) == Strings{"a", "bc"});
}

TEST_CASE("bpe: special tokens and BOS", "[tokenizer][bpe]") {
  auto v = bpe_vocab({{"h", "i"}}, "qwen2", {"<|im_start|>", "<|im_end|>", "<|endoftext|>"});
  const TokenId start = 257, end = 258, eot = 259;
  v.eos = eot;
  Tokenizer tok(v);
  CHECK_FALSE(tok.add_bos());
  CHECK(tok.encode("<|im_start|>hi<|im_end|>") == std::vector<TokenId>{start, 256, end});
  CHECK(texts(tok, tok.encode("<|im_end|>", {false, false})).size() > 1);
  CHECK(tok.is_eog(end));
  CHECK(tok.is_eog(eot));
  CHECK_FALSE(tok.is_eog(256));
  CHECK(tok.decode(std::vector<TokenId>{start, 256, end}) == "hi");
  CHECK(tok.decode(std::vector<TokenId>{start, 256, end}, {true, false, true}) ==
        "<|im_start|>hi<|im_end|>");
  SECTION("llama3 adds BOS by default") {
    auto w = bpe_vocab({}, "llama-bpe", {"<|begin_of_text|>"});
    w.bos = 256;
    w.add_bos.reset();  // the pre-tokenizer's default
    Tokenizer l3(w);
    CHECK(l3.add_bos());
    CHECK(l3.encode("x").front() == 256);
  }
}

TEST_CASE("bpe: decode(encode(s)) == s", "[tokenizer][bpe]") {
  for (const std::string pre : {"qwen2", "llama-bpe", "gpt-2"}) {
    Tokenizer tok(
        bpe_vocab({{g2(" "), "t"}, {"h", "e"}, {g2(" t"), "he"}, {g2("\xC3"), g2("\xA9")}}, pre));
    const std::vector<std::string> samples = {
        "the cat ate the hat",
        "  leading and trailing  ",
        "tabs\tand\nnewlines\r\n\r\n",
        "\xE4\xB8\xAD\xE6\x96\x87 CJK 123456789",
        "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB emoji ZWJ",
        "e\xCC\x81 combining",
        "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D RTL",
        "int main() {\n    return 0;\n}\n",
    };
    for (const auto& s : samples) {
      CAPTURE(pre, s);
      CHECK(tok.decode(tok.encode(s, kPlain), {false, false, false}) == s);
    }
  }
}

TEST_CASE("bpe: invalid UTF-8 becomes U+FFFD before merging", "[tokenizer][bpe]") {
  Tokenizer tok(bpe_vocab({}));
  CHECK(tok.decode(tok.encode("a\xFFz", kPlain)) == "a\xEF\xBF\xBDz");
  CHECK(tok.decode(tok.encode("\xE4\xB8", kPlain)) == "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("bpe: llama3 and gpt-2 decoding cleans spaces, qwen2 does not", "[tokenizer][bpe]") {
  const std::string s = "Hi , there . It 's";
  Tokenizer l3(bpe_vocab({}, "llama-bpe"));
  CHECK(l3.decode(l3.encode(s, kPlain)) == "Hi, there. It's");
  CHECK(l3.decode(l3.encode(s, kPlain), {false, false, false}) == s);
  Tokenizer q(bpe_vocab({}, "qwen2"));
  CHECK(q.decode(q.encode(s, kPlain)) == s);
}

TEST_CASE("bpe: malformed vocabularies give errors", "[tokenizer][bpe]") {
  auto message = [](const Vocab& v) {
    try {
      Tokenizer tok(v);
    } catch (const TokenizerError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  auto v = bpe_vocab({{"a", "b"}});
  v.pre = "tekken";
  CHECK_THAT(message(v), Catch::Contains("tekken") && Catch::Contains("qwen2"));
  v = bpe_vocab({{"a", "b"}});
  v.merges.push_back("nospace");
  CHECK_THAT(message(v), Catch::Contains("merges[1]"));
  v = bpe_vocab({{"a", "b"}});
  v.unk = 100000;
  CHECK_THAT(message(v), Catch::Contains("unknown_token_id"));
}
