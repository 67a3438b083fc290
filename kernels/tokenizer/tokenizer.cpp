#include "kernels/tokenizer/tokenizer.h"

#include <algorithm>
#include <array>

#include "kernels/tokenizer/bpe.h"
#include "kernels/tokenizer/pretokenize.h"
#include "kernels/tokenizer/special_tokens.h"
#include "kernels/tokenizer/spm.h"
#include "kernels/tokenizer/unicode.h"
#include "kernels/tokenizer/vocab_index.h"

namespace vsynth::kernels {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Texts of end-of-turn tokens, and of every token that ends generation: llama.cpp's lists,
// which its converters rely on instead of metadata. (Gemma 3's vocabulary holds the HTML tag
// "</s>" as a user-defined token; the list makes it end generation, as llama.cpp does.)
constexpr std::array<std::string_view, 11> kEotTexts = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",  // DeepSeek
    "<end_of_utterance>"};
constexpr std::array<std::string_view, 22> kEogTexts = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "[e~["};

template <size_t N>
bool contains(const std::array<std::string_view, N>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t at = 0;
  for (size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size()) {
    out.append(s, at, hit - at);
    out.append(to);
  }
  out.append(s, at, std::string::npos);
  s.swap(out);
}

// llama.cpp's clean_up_tokenization: " ?" " !" " ." " ," lose the space; " ' " loses both
// spaces; " 's" " 'm" " 're" " 've" lose the space.
std::string clean_spaces(const std::string& in) {
  std::string a;
  for (size_t i = 0; i < in.size(); ++i) {
    const char x = in[i];
    if (i > 0 && in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
    a.push_back(x);
  }
  std::string b;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i];
    if (i > 0 && x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      b.push_back(x);
      ++i;  // drop the space after
      continue;
    }
    b.push_back(x);
  }
  std::string c;
  for (size_t i = 0; i < b.size(); ++i) {
    const char x = b[i];
    if (i > 0 && b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
      if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) {
        c.pop_back();
      }
    }
    c.push_back(x);
  }
  return c;
}

}  // namespace

struct Tokenizer::Impl {
  tok::VocabIndex vocab;
  std::vector<TokenType> types;
  std::optional<tok::SpecialMatcher> specials;
  bool spm = true;
  PreTokenizerSpec pre{PreTokenizer::Gpt2, false, false, false};
  TokenId bos = kNoToken, eos = kNoToken, eot = kNoToken, unk = kNoToken, pad = kNoToken;
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  std::vector<uint8_t> eog;  // per id

  void check_id(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= vocab.text.size()) {
      throw TokenizerError("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                           std::to_string(vocab.text.size() - 1) + ")");
    }
  }

  void encode_raw(std::string_view raw, bool after_special, std::vector<TokenId>& out) const {
    if (spm) {
      std::string text;
      text.reserve(raw.size() + 8);
      if (add_space_prefix && after_special) text.push_back(' ');
      text.append(raw);
      replace_all(text, " ", kSpaceMark);
      tok::spm_encode(vocab, text, unk, out);
      return;
    }
    // Invalid UTF-8 becomes U+FFFD here, before pre-tokenizing (as llama.cpp does).
    const std::vector<char32_t> cps = unicode::decode_utf8(raw);
    std::vector<size_t> words;
    pre_tokenize(pre.kind, cps, words);
    std::string utf8;
    std::string mapped;
    size_t at = 0;
    for (size_t n : words) {
      utf8.clear();
      for (size_t i = at; i < at + n; ++i) unicode::append_utf8(utf8, cps[i]);
      at += n;
      mapped.clear();
      for (char c : utf8)
        unicode::append_utf8(mapped, unicode::byte_to_gpt2(static_cast<uint8_t>(c)));
      tok::bpe_encode_word(vocab, mapped, pre.ignore_merges, out);
    }
  }

  void append_piece(TokenId id, bool render_special, std::string& out) const {
    const auto i = static_cast<size_t>(id);
    const uint8_t a = vocab.attr[i];
    const std::string& t = vocab.text[i];
    if (a & (tok::kAttrControl | tok::kAttrUnknown)) {
      if (render_special) out += t;
      return;
    }
    if (a & tok::kAttrUserDefined) {
      out += t;
      return;
    }
    if (a & tok::kAttrNormal) {
      if (spm) {
        std::string s = t;
        replace_all(s, kSpaceMark, " ");
        out += s;
      } else {
        // Each code point of the piece stands for one byte; keep any that does not.
        for (size_t off = 0; off < t.size();) {
          const size_t start = off;
          const char32_t cp = unicode::decode_utf8(t, off);
          const int b = unicode::gpt2_to_byte(cp);
          if (b >= 0) {
            out.push_back(static_cast<char>(b));
          } else {
            out.append(t, start, off - start);
          }
        }
      }
      return;
    }
    if (a & tok::kAttrByte) {
      out.push_back(static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16)));
    }
    // Unused and undefined tokens decode to nothing.
  }
};

Tokenizer::Tokenizer(const Vocab& v) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  const std::string& src = v.source;
  if (v.model == "llama") {
    m.spm = true;
  } else if (v.model == "gpt2") {
    m.spm = false;
    const auto spec = pre_tokenizer_spec(v.pre);
    if (!spec) {
      throw TokenizerError(src + ": tokenizer.ggml.pre = \"" + v.pre +
                           "\" is not supported; supported: " + std::string(pre_tokenizer_names()));
    }
    m.pre = *spec;
  } else {
    throw TokenizerError(src + ": tokenizer.ggml.model = \"" + v.model +
                         "\" is not supported; supported: llama (SentencePiece), gpt2 (BPE)");
  }
  m.vocab = tok::build_index(v, !m.spm);
  m.types = v.types.empty() ? std::vector<TokenType>(v.tokens.size(), TokenType::Normal) : v.types;
  const size_t n = v.tokens.size();

  const auto check_special = [&](TokenId id, const char* key) {
    if (id == kNoToken) return id;
    if (id < 0 || static_cast<size_t>(id) >= n) {
      throw TokenizerError(src + ": tokenizer.ggml." + key + " = " + std::to_string(id) +
                           " is outside the vocabulary of " + std::to_string(n) +
                           " tokens (valid: 0.." + std::to_string(n - 1) + ")");
    }
    return id;
  };
  m.bos = check_special(v.bos, "bos_token_id");
  m.eos = check_special(v.eos, "eos_token_id");
  m.unk = check_special(v.unk, "unknown_token_id");
  m.pad = check_special(v.pad, "padding_token_id");
  m.eot = check_special(v.eot, "eot_token_id");

  m.add_bos = v.add_bos.value_or(m.spm || m.pre.add_bos);
  m.add_eos = v.add_eos.value_or(false);
  m.add_space_prefix = m.spm && v.add_space_prefix.value_or(true);
  if (m.add_bos && m.bos == kNoToken) {
    throw TokenizerError(src + ": tokenizer.ggml.add_bos_token is true but no bos_token_id is set");
  }
  if (m.add_eos && m.eos == kNoToken) {
    throw TokenizerError(src + ": tokenizer.ggml.add_eos_token is true but no eos_token_id is set");
  }

  // End-of-turn / end-of-generation tokens by text; they count as control tokens (as in
  // llama.cpp, which overrides their type when a converter got it wrong).
  m.eog.assign(n, 0);
  TokenId end_id = kNoToken, s_id = kNoToken;
  bool has_return = false, has_call = false, has_flush = false, has_tool_response = false;
  for (size_t i = 0; i < n; ++i) {
    const std::string& t = m.vocab.text[i];
    const auto id = static_cast<TokenId>(i);
    if (m.eot == kNoToken && contains(kEotTexts, t)) m.eot = id;
    if (!contains(kEogTexts, t)) continue;
    m.eog[i] = 1;
    m.vocab.attr[i] |= tok::kAttrControl;
    has_return |= t == "<|return|>";
    has_call |= t == "<|call|>" || t == "<|calls|>";
    has_flush |= t == "<|flush|>";
    has_tool_response |= t == "<|tool_response>";
    if (t == "<|end|>") end_id = id;
    if (t == "</s>") s_id = id;
  }
  if (m.eot != kNoToken) m.vocab.attr[static_cast<size_t>(m.eot)] |= tok::kAttrControl;
  // llama.cpp's two exceptions: harmony-style vocabularies end on <|return|>/<|call|>, not
  // <|end|>; vocabularies with <|tool_response> use </s> as text.
  if (end_id != kNoToken && ((has_return && has_call) || (has_call && has_flush))) {
    m.eog[static_cast<size_t>(end_id)] = 0;
    m.vocab.attr[static_cast<size_t>(end_id)] = tok::kAttrUserDefined;
  }
  if (s_id != kNoToken && has_tool_response) {
    m.eog[static_cast<size_t>(s_id)] = 0;
    m.vocab.attr[static_cast<size_t>(s_id)] = tok::kAttrNormal;
  }
  if (m.eos != kNoToken) m.eog[static_cast<size_t>(m.eos)] = 1;
  if (m.eot != kNoToken) m.eog[static_cast<size_t>(m.eot)] = 1;

  m.specials.emplace(m.vocab);
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::vector<TokenId> Tokenizer::encode(std::string_view text, const EncodeOptions& opt) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  encode(text, out, opt);
  return out;
}

void Tokenizer::encode(std::string_view text, std::vector<TokenId>& out,
                       const EncodeOptions& opt) const {
  const Impl& m = *impl_;
  if (opt.add_special && m.add_bos) out.push_back(m.bos);
  std::vector<tok::Fragment> frags;
  m.specials->split(m.vocab, text, opt.parse_special, frags);
  bool after_special = true;  // the text start counts as following a special token
  for (const auto& f : frags) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      after_special = true;
    } else {
      m.encode_raw(text.substr(f.begin, f.end - f.begin), after_special, out);
      after_special = false;
    }
  }
  if (opt.add_special && m.add_eos) out.push_back(m.eos);
}

std::string Tokenizer::decode(std::span<const TokenId> ids, const DecodeOptions& opt) const {
  const Impl& m = *impl_;
  for (TokenId id : ids) m.check_id(id);
  // SPM drops the space it put in front of the text, unless a removed BOS came first (as
  // llama.cpp's llama_detokenize does).
  bool strip_space = m.add_space_prefix;
  if (opt.remove_special && m.add_bos && !ids.empty() && ids.front() == m.bos) {
    strip_space = false;
    ids = ids.subspan(1);
  }
  if (opt.remove_special && m.add_eos && !ids.empty() && ids.back() == m.eos) {
    ids = ids.first(ids.size() - 1);
  }
  std::string out;
  for (TokenId id : ids) {
    const size_t before = out.size();
    m.append_piece(id, opt.render_special, out);
    if (strip_space && out.size() > before && out[before] == ' ') out.erase(before, 1);
    strip_space = false;
  }
  if (opt.clean_spaces && !m.spm && m.pre.clean_spaces) out = clean_spaces(out);
  return out;
}

std::string Tokenizer::piece(TokenId id, bool render_special) const {
  impl_->check_id(id);
  std::string out;
  impl_->append_piece(id, render_special, out);
  return out;
}

size_t Tokenizer::size() const {
  return impl_->vocab.text.size();
}
bool Tokenizer::is_spm() const {
  return impl_->spm;
}
std::string_view Tokenizer::text(TokenId id) const {
  impl_->check_id(id);
  return impl_->vocab.text[static_cast<size_t>(id)];
}
TokenType Tokenizer::type(TokenId id) const {
  impl_->check_id(id);
  return impl_->types[static_cast<size_t>(id)];
}
float Tokenizer::score(TokenId id) const {
  impl_->check_id(id);
  return impl_->vocab.score[static_cast<size_t>(id)];
}
std::optional<TokenId> Tokenizer::find(std::string_view piece) const {
  const TokenId id = impl_->vocab.find(piece);
  return id == kNoToken ? std::nullopt : std::optional<TokenId>(id);
}
bool Tokenizer::is_control(TokenId id) const {
  impl_->check_id(id);
  return impl_->vocab.attr[static_cast<size_t>(id)] & tok::kAttrControl;
}
bool Tokenizer::is_eog(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->eog.size() &&
         impl_->eog[static_cast<size_t>(id)] != 0;
}
TokenId Tokenizer::bos() const {
  return impl_->bos;
}
TokenId Tokenizer::eos() const {
  return impl_->eos;
}
TokenId Tokenizer::eot() const {
  return impl_->eot;
}
TokenId Tokenizer::unk() const {
  return impl_->unk;
}
TokenId Tokenizer::pad() const {
  return impl_->pad;
}
bool Tokenizer::add_bos() const {
  return impl_->add_bos;
}
bool Tokenizer::add_eos() const {
  return impl_->add_eos;
}
bool Tokenizer::add_space_prefix() const {
  return impl_->add_space_prefix;
}

}  // namespace vsynth::kernels
