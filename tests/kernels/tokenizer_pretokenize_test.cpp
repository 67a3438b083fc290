// Pre-tokenizer state machines and the Unicode helpers under them.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernels/tokenizer/pretokenize.h"
#include "kernels/tokenizer/unicode.h"

using namespace vsynth::kernels;
using Strings = std::vector<std::string>;

namespace {
Strings split(PreTokenizer kind, const std::string& text) {
  const auto cps = unicode::decode_utf8(text);
  std::vector<size_t> lens;
  pre_tokenize(kind, cps, lens);
  Strings out;
  size_t at = 0;
  for (size_t n : lens) {
    std::string w;
    for (size_t i = at; i < at + n; ++i) unicode::append_utf8(w, cps[i]);
    out.push_back(w);
    at += n;
  }
  REQUIRE(at == cps.size());
  return out;
}
}  // namespace

TEST_CASE("unicode: classes, whitespace and UTF-8", "[tokenizer][unicode]") {
  using unicode::CpClass;
  CHECK(unicode::cp_class('a') == CpClass::Letter);
  CHECK(unicode::cp_class(0x4E2D) == CpClass::Letter);  // 中
  CHECK(unicode::cp_class('7') == CpClass::Number);
  CHECK(unicode::cp_class(0x0663) == CpClass::Number);  // Arabic-Indic 3
  CHECK(unicode::cp_class(0x2163) == CpClass::Number);  // Roman numeral IV (Nl)
  CHECK(unicode::cp_class(0x0301) == CpClass::Mark);
  CHECK(unicode::cp_class('{') == CpClass::Punctuation);
  CHECK(unicode::cp_class('+') == CpClass::Symbol);
  CHECK(unicode::cp_class(0x1F600) == CpClass::Symbol);  // 😀
  CHECK(unicode::cp_class(0x200D) == CpClass::Control);  // ZWJ (Cf)
  CHECK(unicode::cp_class(0x0378) == CpClass::Unassigned);
  CHECK(unicode::cp_class(0x110000) == CpClass::Unassigned);
  CHECK(unicode::is_whitespace(' '));
  CHECK(unicode::is_whitespace(0x3000));
  CHECK(unicode::is_whitespace(0x85));
  CHECK_FALSE(unicode::is_whitespace(0x200B));  // zero-width space is not White_Space
  CHECK_FALSE(unicode::is_whitespace(0x1C));

  CHECK(unicode::decode_utf8("a\xC3\xA9\xF0\x9F\x98\x80") ==
        std::vector<char32_t>{'a', 0xE9, 0x1F600});
  CHECK(unicode::decode_utf8("\xFF") == std::vector<char32_t>{0xFFFD});
  CHECK(unicode::decode_utf8("\xE4\xB8") == std::vector<char32_t>{0xFFFD, 0xFFFD});
  CHECK(unicode::decode_utf8("\xF4\x90\x80\x80").front() == 0xFFFD);  // above U+10FFFF
  CHECK(unicode::to_utf8(0x1F600) == "\xF0\x9F\x98\x80");
}

TEST_CASE("unicode: the GPT-2 byte alphabet is a bijection", "[tokenizer][unicode]") {
  CHECK(unicode::byte_to_gpt2(' ') == 0x120);   // Ġ
  CHECK(unicode::byte_to_gpt2('\n') == 0x10A);  // Ċ
  CHECK(unicode::byte_to_gpt2('A') == 'A');
  CHECK(unicode::byte_to_gpt2(0xAD) == 0x143);  // the soft hyphen is not printable
  for (int b = 0; b < 256; ++b) {
    CHECK(unicode::gpt2_to_byte(unicode::byte_to_gpt2(static_cast<uint8_t>(b))) == b);
  }
  CHECK(unicode::gpt2_to_byte(0x4E2D) == -1);
}

TEST_CASE("pretokenize: llama3 expression", "[tokenizer][pretokenize]") {
  const auto k = PreTokenizer::Llama3;
  CHECK(split(k, "Hello world") == Strings{"Hello", " world"});
  CHECK(split(k, "1234567") == Strings{"123", "456", "7"});
  CHECK(split(k, "I'M here, they'll") == Strings{"I", "'M", " here", ",", " they", "'ll"});
  CHECK(split(k, "   x") == Strings{"  ", " x"});
  CHECK(split(k, "x   ") == Strings{"x", "   "});
  CHECK(split(k, "a\n\n  b") == Strings{"a", "\n\n", " ", " b"});
  CHECK(split(k, "};\n\treturn") == Strings{"};\n", "\treturn"});
  CHECK(split(k, " {}") == Strings{" {}"});
  CHECK(split(k, "\t(") == Strings{"\t", "("});
  CHECK(split(k, "x \r\n y") == Strings{"x", " \r\n", " y"});
  CHECK(split(k,
              "\xE4\xB8\xAD\xE6\x96\x87"
              "abc") == Strings{"\xE4\xB8\xAD\xE6\x96\x87"
                                "abc"});
  CHECK(split(k, "e\xCC\x81t") == Strings{"e", "\xCC\x81t"});  // a mark is not a letter
  CHECK(split(k, "a \xF0\x9F\x98\x80!") == Strings{"a", " \xF0\x9F\x98\x80!"});
}

TEST_CASE("pretokenize: qwen2 splits every digit", "[tokenizer][pretokenize]") {
  CHECK(split(PreTokenizer::Qwen2, "x=1024;") == Strings{"x", "=", "1", "0", "2", "4", ";"});
  CHECK(split(PreTokenizer::Qwen2, "It's") == Strings{"It", "'s"});
}

TEST_CASE("pretokenize: gpt-2 expression", "[tokenizer][pretokenize]") {
  const auto k = PreTokenizer::Gpt2;
  CHECK(split(k, "Hello world 2024!") == Strings{"Hello", " world", " 2024", "!"});
  CHECK(split(k, "it's IT'S") == Strings{"it", "'s", " IT", "'", "S"});
  CHECK(split(k, "a\n\n  b") == Strings{"a", "\n\n ", " b"});
}

TEST_CASE("pretokenize: names map as llama.cpp maps them", "[tokenizer][pretokenize]") {
  REQUIRE(pre_tokenizer_spec("qwen2"));
  CHECK(pre_tokenizer_spec("qwen2")->kind == PreTokenizer::Qwen2);
  CHECK_FALSE(pre_tokenizer_spec("qwen2")->clean_spaces);
  REQUIRE(pre_tokenizer_spec("llama-bpe"));
  CHECK(pre_tokenizer_spec("llama-bpe")->kind == PreTokenizer::Llama3);
  CHECK(pre_tokenizer_spec("llama-bpe")->ignore_merges);
  CHECK_FALSE(pre_tokenizer_spec("default"));
}
