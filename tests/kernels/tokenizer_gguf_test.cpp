// load_vocab: tokenizer.ggml.* metadata of small GGUF files made with the writer.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernels/gguf/reader.h"
#include "kernels/gguf/writer.h"
#include "kernels/tokenizer/gguf_vocab.h"
#include "kernels/tokenizer/tokenizer.h"

using namespace vsynth::kernels;

namespace {

// A tiny SPM vocabulary: <unk> <s> </s> <0x41> a b ab <start_of_turn>.
GgufWriter spm_writer() {
  GgufWriter w;
  w.add("general.architecture", "llama");
  w.add("tokenizer.ggml.model", "llama");
  w.add_array("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>", "<s>", "</s>", "<0x41>",
                                                                "a", "b", "ab", "<start_of_turn>"});
  w.add_array("tokenizer.ggml.scores", std::vector<float>{0, 0, 0, 0, -2, -2, -1, 0});
  w.add_array("tokenizer.ggml.token_type", std::vector<int32_t>{2, 3, 3, 6, 1, 1, 1, 3});
  return w;
}

std::string load_error(const GgufWriter& w) {
  const GgufImage img = w.build();
  const GgufFile f = GgufFile::open_from_memory(img.bytes, "test.gguf");
  try {
    (void)load_vocab(f);
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("gguf vocab: keys fill the Vocab, defaults where absent", "[tokenizer][gguf]") {
  const GgufImage img = spm_writer().build();
  const GgufFile f = GgufFile::open_from_memory(img.bytes, "test.gguf");
  const Vocab v = load_vocab(f);
  CHECK(v.model == "llama");
  CHECK(v.tokens.size() == 8);
  CHECK(v.types[7] == TokenType::Control);
  CHECK(v.scores[6] == -1.0f);
  // llama.cpp's SPM defaults: bos 1, eos 2, unk 0.
  CHECK(v.bos == 1);
  CHECK(v.eos == 2);
  CHECK(v.unk == 0);
  CHECK_FALSE(v.add_bos.has_value());
  Tokenizer tok(v);
  // BOS, the control token, then the default space prefix: U+2581 has no piece and no byte
  // token here, so its three bytes become <unk>.
  CHECK(tok.encode("<start_of_turn>ab", {true, true}) == std::vector<TokenId>{1, 7, 0, 0, 0, 6});
}

TEST_CASE("gguf vocab: explicit ids and flags", "[tokenizer][gguf]") {
  auto w = spm_writer();
  w.add("tokenizer.ggml.bos_token_id", uint32_t{2});
  w.add("tokenizer.ggml.eos_token_id", uint32_t{1});
  w.add("tokenizer.ggml.add_bos_token", false);
  w.add("tokenizer.ggml.add_space_prefix", false);
  const GgufImage img = w.build();
  const Vocab v = load_vocab(GgufFile::open_from_memory(img.bytes, "test.gguf"));
  CHECK(v.bos == 2);
  CHECK(v.eos == 1);
  CHECK(v.add_bos == false);
  CHECK(v.add_space_prefix == false);
}

TEST_CASE("gguf vocab: wrong element types and bad ids are clean errors", "[tokenizer][gguf]") {
  SECTION("tokens as integers") {
    GgufWriter w;
    w.add("tokenizer.ggml.model", "llama");
    w.add_array("tokenizer.ggml.tokens", std::vector<int32_t>{1, 2, 3});
    CHECK_THAT(load_error(w), Catch::Contains("tokenizer.ggml.tokens") &&
                                  Catch::Contains("array of string") &&
                                  Catch::Contains("array of i32"));
  }
  SECTION("scores as strings") {
    GgufWriter w2;
    w2.add("tokenizer.ggml.model", "llama");
    w2.add_array("tokenizer.ggml.tokens", std::vector<std::string>{"a", "b"});
    w2.add_array("tokenizer.ggml.scores", std::vector<std::string>{"x", "y"});
    CHECK_THAT(load_error(w2),
               Catch::Contains("tokenizer.ggml.scores") && Catch::Contains("array of f32"));
  }
  SECTION("token_type as u8, scores too short") {
    GgufWriter w;
    w.add("tokenizer.ggml.model", "llama");
    w.add_array("tokenizer.ggml.tokens", std::vector<std::string>{"a", "b"});
    w.add_array("tokenizer.ggml.token_type", std::vector<uint8_t>{1, 1});
    CHECK_THAT(load_error(w), Catch::Contains("token_type") && Catch::Contains("i32"));
    GgufWriter w2;
    w2.add("tokenizer.ggml.model", "llama");
    w2.add_array("tokenizer.ggml.tokens", std::vector<std::string>{"a", "b"});
    w2.add_array("tokenizer.ggml.scores", std::vector<float>{1});
    CHECK_THAT(load_error(w2), Catch::Contains("scores") && Catch::Contains("1 entries for 2"));
  }
  SECTION("special id at or past the vocabulary size") {
    auto w = spm_writer();
    w.add("tokenizer.ggml.eos_token_id", uint32_t{8});
    CHECK_THAT(load_error(w),
               Catch::Contains("eos_token_id = 8") && Catch::Contains("valid: 0..7"));
    auto w2 = spm_writer();
    w2.add("tokenizer.ggml.bos_token_id", "1");
    CHECK_THAT(load_error(w2), Catch::Contains("bos_token_id") && Catch::Contains("integer"));
  }
  SECTION("missing keys") {
    GgufWriter w;
    w.add("general.architecture", "llama");
    CHECK_THAT(load_error(w),
               Catch::Contains("tokenizer.ggml.model") && Catch::Contains("missing"));
    GgufWriter w2;
    w2.add("tokenizer.ggml.model", "gpt2");
    w2.add_array("tokenizer.ggml.tokens", std::vector<std::string>{"a"});
    CHECK_THAT(load_error(w2), Catch::Contains("merges") && Catch::Contains("missing"));
  }
}
