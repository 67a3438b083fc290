// A tokenizer vocabulary as plain data: what GGUF's tokenizer.ggml.* keys hold, independent of
// any file format. kernels/tokenizer/gguf_vocab.h fills one from a GGUF file; tests build small
// ones by hand.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vsynth::kernels {

// Every tokenizer problem: a malformed vocabulary, a bad id, an unsupported model kind.
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// Token types, numbered as tokenizer.ggml.token_type stores them.
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,      // <unk>
  Control = 3,      // <bos>, <eos>, <start_of_turn>: never produced from text unless parsed
  UserDefined = 4,  // matched in text before anything else, always
  Unused = 5,
  Byte = 6,  // <0xXX> byte-fallback tokens
};

struct Vocab {
  // tokenizer.ggml.model: "llama" (SentencePiece-style: Gemma, Llama 1/2) or "gpt2" (byte-level
  // BPE: Qwen2, Llama 3).
  std::string model = "llama";
  // tokenizer.ggml.pre: the BPE pre-tokenizer ("qwen2", "llama-bpe", ...); SPM ignores it.
  std::string pre = "default";

  std::vector<std::string> tokens;  // piece text per id
  std::vector<float> scores;        // SPM merge priority per id, higher merges first; empty: 0
  std::vector<TokenType> types;     // per id; empty: all Normal
  std::vector<std::string> merges;  // BPE merges "left right", rank = index (lower merges first)

  // Special ids; kNoToken when the file does not name one. An id >= tokens.size() is an error.
  TokenId bos = kNoToken;
  TokenId eos = kNoToken;
  TokenId unk = kNoToken;
  TokenId pad = kNoToken;
  TokenId eot = kNoToken;  // end of turn (detected from the token text when unset)

  // Unset: the model kind's default (SPM adds BOS and a space prefix; BPE adds neither, except
  // the llama3 pre-tokenizer family, which adds BOS). Gemma's GGUF sets add_space_prefix false.
  std::optional<bool> add_bos;
  std::optional<bool> add_eos;
  std::optional<bool> add_space_prefix;

  std::string source = "<vocab>";  // where it came from, for error messages (a file path)
};

}  // namespace vsynth::kernels
