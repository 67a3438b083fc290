#include "stages/context/token_counter.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "kernels/gguf/reader.h"
#include "kernels/tokenizer/gguf_vocab.h"
#include "kernels/tokenizer/tokenizer.h"
#include "stages/context/error.h"

namespace vsynth::stages::context {

namespace {

bool is_word(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c >= 0x80;
}

// Tokens of one word run: split into sub-words at '_', lower->upper case changes and digit
// boundaries; a sub-word of up to kSubwordChars letters is about one token, longer ones one
// per kSubwordChars. Non-ASCII bytes count kNonAsciiBytesPerToken bytes a token.
constexpr uint32_t kSubwordChars = 6;
constexpr uint32_t kNonAsciiBytesPerToken = 2;

uint32_t word_tokens(const unsigned char* p, std::size_t n) {
  uint32_t tokens = 0, run = 0, non_ascii = 0;
  auto flush = [&] {
    if (run > 0) tokens += (run + kSubwordChars - 1) / kSubwordChars;
    run = 0;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = p[i];
    if (c >= 0x80) {
      flush();
      ++non_ascii;
      continue;
    }
    const bool boundary =
        c == '_' || (i > 0 && p[i - 1] >= 'a' && p[i - 1] <= 'z' && c >= 'A' && c <= 'Z') ||
        (i > 0 && ((p[i - 1] >= '0' && p[i - 1] <= '9') != (c >= '0' && c <= '9')));
    if (boundary) flush();
    if (c == '_') {
      // `_` usually joins the next sub-word's token ("_value"); a run of them is one token.
      continue;
    }
    ++run;
  }
  flush();
  tokens += (non_ascii + kNonAsciiBytesPerToken - 1) / kNonAsciiBytesPerToken;
  return tokens == 0 ? 1 : tokens;
}

}  // namespace

uint32_t EstimateCounter::count(std::string_view text) const {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  uint32_t tokens = 0;
  std::size_t i = 0;
  bool line_start = true;
  while (i < n) {
    const unsigned char c = p[i];
    if (c == '\n') {
      ++tokens;  // newline runs merge; count one per line, close enough for code
      ++i;
      line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      std::size_t j = i;
      while (j < n && (p[j] == ' ' || p[j] == '\t' || p[j] == '\r')) ++j;
      const std::size_t len = j - i;
      // Indentation is one whitespace-run token; one space before a word joins the word.
      if (line_start || len > 1 || j == n || p[j] == '\n') ++tokens;
      i = j;
      line_start = false;
      continue;
    }
    line_start = false;
    if (is_word(c)) {
      std::size_t j = i;
      while (j < n && is_word(p[j])) ++j;
      tokens += word_tokens(p + i, j - i);
      i = j;
      continue;
    }
    // Punctuation: pairs such as `()`, `->`, `==`, `::`, `):` are mostly single tokens.
    std::size_t j = i;
    while (j < n && !is_word(p[j]) && p[j] != ' ' && p[j] != '\t' && p[j] != '\n' && p[j] != '\r') {
      ++j;
    }
    tokens += static_cast<uint32_t>((j - i + 1) / 2);
    i = j;
  }
  return tokens;
}

TokenizerCounter::TokenizerCounter(std::shared_ptr<const kernels::Tokenizer> tokenizer,
                                   std::string source)
    : tokenizer_(std::move(tokenizer)), source_(std::move(source)) {}

uint32_t TokenizerCounter::count(std::string_view text) const {
  kernels::EncodeOptions opt;
  opt.add_special = false;
  opt.parse_special = false;
  return static_cast<uint32_t>(tokenizer_->encode(text, opt).size());
}

std::shared_ptr<const TokenizerCounter> TokenizerCounter::from_gguf(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<const TokenizerCounter>> cache;
  std::lock_guard lock(mu);
  if (auto hit = cache[path].lock()) return hit;
  std::shared_ptr<const TokenizerCounter> counter;
  try {
    const kernels::GgufFile file = kernels::GgufFile::open(path);
    auto tok = std::make_shared<const kernels::Tokenizer>(kernels::load_vocab(file));
    counter = std::make_shared<const TokenizerCounter>(std::move(tok), "gguf:" + path);
  } catch (const std::exception& e) {
    throw ContextError(fmt::format(
        "token counter: cannot load a tokenizer from GGUF file `{}`: {} (give the path of a "
        "model file with tokenizer.ggml.* metadata, or use `tokenizer: estimate`)",
        path, e.what()));
  }
  cache[path] = counter;
  return counter;
}

std::shared_ptr<const TokenCounter> estimate_counter() {
  static const auto shared = std::make_shared<const EstimateCounter>();
  return shared;
}

}  // namespace vsynth::stages::context
