#include "kernels/tokenizer/pretokenize.h"

#include <array>

#include "kernels/tokenizer/unicode.h"

namespace vsynth::kernels {

namespace {

struct NameEntry {
  std::string_view name;
  PreTokenizerSpec spec;
};

// Names llama.cpp maps to these expressions, with the flags it sets for each (src/llama-vocab.cpp).
constexpr std::array kNames = {
    NameEntry{"gpt-2", {PreTokenizer::Gpt2, true, false, false}},
    NameEntry{"phi-2", {PreTokenizer::Gpt2, true, false, false}},
    NameEntry{"llama3", {PreTokenizer::Llama3, true, true, true}},
    NameEntry{"llama-v3", {PreTokenizer::Llama3, true, true, true}},
    NameEntry{"llama-bpe", {PreTokenizer::Llama3, true, true, true}},
    NameEntry{"falcon3", {PreTokenizer::Llama3, true, true, true}},
    NameEntry{"pixtral", {PreTokenizer::Llama3, true, true, true}},
    NameEntry{"dbrx", {PreTokenizer::Llama3, true, false, false}},
    NameEntry{"smaug-bpe", {PreTokenizer::Llama3, true, false, false}},
    NameEntry{"qwen2", {PreTokenizer::Qwen2, false, false, false}},
    NameEntry{"deepseek-r1-qwen", {PreTokenizer::Qwen2, false, false, false}},
    NameEntry{"megrez", {PreTokenizer::Qwen2, true, false, false}},
    NameEntry{"stablelm2", {PreTokenizer::Qwen2, true, false, false}},
};

// Character classes the expressions test; End is the position past the text (matches nothing).
enum class K : uint8_t { End, Letter, Number, Space, Other };

// Scanner state shared by the three expressions: classes precomputed once per text.
class Scanner {
 public:
  Scanner(std::span<const char32_t> cps, std::vector<size_t>& out) : cps_(cps), out_(out) {
    kinds_.reserve(cps.size());
    for (char32_t c : cps) {
      if (unicode::is_whitespace(c)) {
        kinds_.push_back(K::Space);
      } else {
        switch (unicode::cp_class(c)) {
          case unicode::CpClass::Letter:
            kinds_.push_back(K::Letter);
            break;
          case unicode::CpClass::Number:
            kinds_.push_back(K::Number);
            break;
          default:
            kinds_.push_back(K::Other);
            break;
        }
      }
    }
  }

  K kind(size_t i) const { return i < kinds_.size() ? kinds_[i] : K::End; }
  char32_t cp(size_t i) const { return i < cps_.size() ? cps_[i] : 0xFFFFFFFFu; }
  size_t size() const { return cps_.size(); }
  void emit(size_t end) {
    if (end > prev_) out_.push_back(end - prev_);
    prev_ = end;
  }

  // 's 't 're 've 'm 'll 'd at i (ASCII letters, optionally either case); its length or 0.
  size_t contraction(size_t i, bool any_case) const {
    if (cp(i) != '\'') return 0;
    auto lower = [&](size_t j) {
      const char32_t c = cp(j);
      return (any_case && c >= 'A' && c <= 'Z') ? c + 32 : c;
    };
    const char32_t a = lower(i + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    const char32_t b = lower(i + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
  }

  // Length of the whitespace run starting at i.
  size_t space_run(size_t i) const {
    size_t n = 0;
    while (kind(i + n) == K::Space) ++n;
    return n;
  }

 private:
  std::span<const char32_t> cps_;
  std::vector<K> kinds_;
  std::vector<size_t>& out_;
  size_t prev_ = 0;
};

bool is_crlf(char32_t c) {
  return c == '\r' || c == '\n';
}

void split_gpt2(Scanner& s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (size_t n = s.contraction(pos, false)) {
      s.emit(pos += n);
      continue;
    }
    // ' ?' then a run of one class: letters, numbers, or "other" (not space/letter/number).
    const size_t body = s.cp(pos) == ' ' ? pos + 1 : pos;
    const K k = s.kind(body);
    if (k == K::Letter || k == K::Number || k == K::Other) {
      pos = body;
      while (s.kind(pos) == k) ++pos;
      s.emit(pos);
      continue;
    }
    const size_t ws = s.space_run(pos);
    if (ws > 1 && s.kind(pos + ws) != K::End) {
      s.emit(pos += ws - 1);  // \s+(?!\S): leave the last space to prefix the next word
    } else if (ws > 0) {
      s.emit(pos += ws);
    } else {
      s.emit(++pos);
    }
  }
}

void split_llama3(Scanner& s, size_t max_digits, bool any_case) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (size_t n = s.contraction(pos, any_case)) {
      s.emit(pos += n);
      continue;
    }
    const char32_t c = s.cp(pos);
    const K k = s.kind(pos);
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!is_crlf(c) && k != K::Number && (k == K::Letter || s.kind(pos + 1) == K::Letter)) {
      ++pos;
      while (s.kind(pos) == K::Letter) ++pos;
      s.emit(pos);
      continue;
    }
    // \p{N}{1,max_digits}
    if (k == K::Number) {
      size_t n = 0;
      while (s.kind(pos) == K::Number && n < max_digits) {
        ++pos;
        ++n;
      }
      s.emit(pos);
      continue;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    const size_t body = c == ' ' ? pos + 1 : pos;
    if (s.kind(body) == K::Other) {
      pos = body;
      while (s.kind(pos) == K::Other) ++pos;
      while (is_crlf(s.cp(pos))) ++pos;
      s.emit(pos);
      continue;
    }
    // \s*[\r\n]+ : up to the last CR/LF of the whitespace run.
    const size_t ws = s.space_run(pos);
    size_t last_crlf = 0;
    for (size_t i = 0; i < ws; ++i) {
      if (is_crlf(s.cp(pos + i))) last_crlf = i + 1;
    }
    if (last_crlf > 0) {
      s.emit(pos += last_crlf);
    } else if (ws > 1 && s.kind(pos + ws) != K::End) {
      s.emit(pos += ws - 1);  // \s+(?!\S)
    } else if (ws > 0) {
      s.emit(pos += ws);  // \s+
    } else {
      s.emit(++pos);
    }
  }
}

}  // namespace

std::optional<PreTokenizerSpec> pre_tokenizer_spec(std::string_view name) {
  for (const auto& e : kNames) {
    if (e.name == name) return e.spec;
  }
  return std::nullopt;
}

std::string_view pre_tokenizer_names() {
  return "gpt-2, phi-2, llama3, llama-v3, llama-bpe, falcon3, pixtral, dbrx, smaug-bpe, qwen2, "
         "deepseek-r1-qwen, megrez, stablelm2";
}

void pre_tokenize(PreTokenizer kind, std::span<const char32_t> cps,
                  std::vector<size_t>& word_lengths) {
  Scanner s(cps, word_lengths);
  switch (kind) {
    case PreTokenizer::Gpt2:
      split_gpt2(s);
      break;
    case PreTokenizer::Llama3:
      split_llama3(s, 3, true);
      break;
    case PreTokenizer::Qwen2:
      split_llama3(s, 1, true);
      break;
  }
}

}  // namespace vsynth::kernels
