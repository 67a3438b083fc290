#include "kernels/tokenizer/wordpiece.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "kernels/tokenizer/bert_chars.h"
#include "kernels/tokenizer/unicode.h"
#include "kernels/tokenizer/vocab_index.h"

namespace vsynth::kernels {

using nlohmann::json;

namespace {

// A token of tokenizer.json's added_tokens, matched in the raw text before normalization.
struct AddedToken {
  std::string content;
  int32_t id;
};

// BertNormalizer's four switches (strip_accents null resolved to lowercase).
struct NormalizerFlags {
  bool clean_text = false;
  bool chinese = false;
  bool strip_accents = false;
  bool lowercase = false;
};

}  // namespace

struct WordPiece::Impl {
  std::string label;  // the file, in errors
  NormalizerFlags norm;
  std::vector<std::string> pieces;  // per id
  tok::FlatIndex index;             // piece text -> id
  size_t max_piece_bytes = 0;       // longest piece, bytes: no longer match can exist
  std::string prefix = "##";        // continuing_subword_prefix
  size_t max_word_chars = 100;      // max_input_chars_per_word, code points
  int32_t unk = -1, cls = -1, sep = -1, pad = -1;
  std::vector<AddedToken> added;        // matched leftmost, then longest: see encode_into
  std::array<bool, 256> added_first{};  // a byte some added token starts with

  // ASCII fast path, from the same rules as the general one: what normalization makes of each
  // byte (-1: dropped) and whether the pre-tokenizer splits there.
  std::array<int16_t, 128> ascii_norm{};
  std::array<bool, 128> ascii_split{}, ascii_punct{};

  int32_t find(std::string_view piece) const {
    return index.find(tok::hash_bytes(piece),
                      [&](int32_t id) { return pieces[static_cast<size_t>(id)] == piece; });
  }
  class Segment;
  void build_ascii_tables();
  // Cuts one text between added tokens into words and appends their pieces; stops once `out`
  // holds `limit` ids.
  void encode_segment(std::string_view text, std::vector<int32_t>& out, size_t limit) const;
  void encode_word(std::string_view word, size_t chars, std::vector<int32_t>& out) const;
  void encode_into(std::string_view text, std::vector<int32_t>& out, size_t limit) const;

  // Reading tokenizer.json, one part each (errors name `label` and the JSON path).
  void read_model(const nlohmann::json& root);
  void read_added_tokens(const nlohmann::json& root);
  void read_post_processor(const nlohmann::json& root);
  void read_pad(const nlohmann::json& root);
};

// ---- normalization and pre-tokenization ----

// One text between added tokens on its way to ids: BertNormalizer code point by code point
// (clean_text, handle_chinese_chars, strip_accents, lowercase, in HF's order), the cuts of
// BertPreTokenizer, and the WordPiece model per word. Every step but NFD's canonical ordering
// maps one code point on its own; the ordering is a stable sort of each run of combining marks
// by class, so the marks since the last starter wait in `run_` until the next one arrives.
class WordPiece::Impl::Segment {
 public:
  Segment(const Impl& wp, std::vector<int32_t>& out) : wp_(wp), out_(out) {}

  void push(char32_t cp) {
    const NormalizerFlags& f = wp_.norm;
    if (f.clean_text) {
      if (bert::is_removed(cp)) return;
      if (bert::is_clean_space(cp)) cp = U' ';
    }
    const bool cjk = f.chinese && bert::is_chinese(cp);
    if (cjk) decomposed_all(U' ');
    decomposed_all(cp);
    if (cjk) decomposed_all(U' ');
  }

  // An ASCII byte: a starter without decomposition, normalized and classed by table.
  void push_ascii(uint8_t b) {
    if (!run_.empty()) flush_run();
    const int16_t n = wp_.ascii_norm[b];
    if (n >= 0) put(static_cast<char32_t>(n), wp_.ascii_split[n], wp_.ascii_punct[n]);
  }

  void finish() {
    flush_run();
    end_word();
  }

 private:
  // strip_accents, first step: the canonical decomposition, marks queued for ordering.
  void decomposed_all(char32_t cp) {
    if (!wp_.norm.strip_accents) return normalized(cp);
    decomposition_.clear();
    bert::append_nfd(cp, decomposition_);
    for (const char32_t c : decomposition_) {
      if (bert::combining_class(c) == 0) flush_run();
      run_.push_back(c);
    }
  }

  // The queued run in canonical order, without its nonspacing marks.
  void flush_run() {
    if (run_.empty()) return;
    const auto marks = run_.begin() + (bert::combining_class(run_[0]) == 0 ? 1 : 0);
    if (run_.end() - marks > 1)
      std::stable_sort(marks, run_.end(), [](char32_t x, char32_t y) {
        return bert::combining_class(x) < bert::combining_class(y);
      });
    for (const char32_t c : run_)
      if (!bert::is_nonspacing(c)) normalized(c);
    run_.clear();
  }

  void normalized(char32_t cp) {
    if (!wp_.norm.lowercase) return put(cp, bert::is_split_space(cp), bert::is_punct(cp));
    lowered_.clear();
    bert::append_lower(cp, lowered_);
    for (const char32_t c : lowered_) put(c, bert::is_split_space(c), bert::is_punct(c));
  }

  // BertPreTokenizer: whitespace ends a word and is dropped, punctuation is a word of its own.
  void put(char32_t c, bool split, bool punct) {
    if (split || punct) end_word();
    if (split) return;
    unicode::append_utf8(word_, c);
    ++word_chars_;
    if (punct) end_word();
  }

  void end_word() {
    if (!word_.empty()) wp_.encode_word(word_, word_chars_, out_);
    word_.clear();
    word_chars_ = 0;
  }

  const Impl& wp_;
  std::vector<int32_t>& out_;
  std::u32string run_;            // NFD output since the last starter (the starter first)
  std::u32string decomposition_;  // scratch
  std::u32string lowered_;        // scratch
  std::string word_;              // UTF-8 of the word being built
  size_t word_chars_ = 0;         // its length in code points
};

void WordPiece::Impl::build_ascii_tables() {
  for (char32_t c = 0; c < 128; ++c) {
    // ASCII has no decomposition and no CJK: clean_text and lowercase keep it one ASCII code
    // point or drop it.
    ascii_split[c] = bert::is_split_space(c);
    ascii_punct[c] = bert::is_punct(c);
    char32_t n = c;
    if (norm.clean_text && bert::is_removed(c)) {
      ascii_norm[c] = -1;
      continue;
    }
    if (norm.clean_text && bert::is_clean_space(c)) n = U' ';
    if (norm.lowercase && n >= U'A' && n <= U'Z') n += U'a' - U'A';
    ascii_norm[c] = static_cast<int16_t>(n);
  }
}

void WordPiece::Impl::encode_segment(std::string_view text, std::vector<int32_t>& out,
                                     size_t limit) const {
  Segment seg(*this, out);
  size_t off = 0;
  while (off < text.size() && out.size() < limit) {
    const auto b = static_cast<uint8_t>(text[off]);
    if (b < 0x80) {
      seg.push_ascii(b);
      ++off;
    } else {
      // Invalid UTF-8 reads as U+FFFD, which clean_text drops.
      seg.push(unicode::decode_utf8_strict(text, off));
    }
  }
  if (out.size() < limit) seg.finish();
}

// ---- the WordPiece model ----

namespace {
bool is_continuation(char byte) {
  return (static_cast<uint8_t>(byte) & 0xC0) == 0x80;
}
}  // namespace

void WordPiece::Impl::encode_word(std::string_view word, size_t chars,
                                  std::vector<int32_t>& out) const {
  if (chars > max_word_chars) {
    out.push_back(unk);
    return;
  }
  // Greedy longest match first: from each start, the longest vocabulary piece (with the
  // continuation prefix after the first), shortening one code point at a time. A word with a
  // position where nothing matches is [UNK] as a whole.
  const size_t first = out.size();
  std::string candidate;
  size_t start = 0;
  while (start < word.size()) {
    candidate.assign(start == 0 ? "" : prefix);
    const size_t head = candidate.size();
    candidate.append(word.substr(start));
    // No piece is longer than max_piece_bytes: start below that, on a code point boundary.
    const size_t budget = max_piece_bytes > head ? max_piece_bytes - head : 0;
    size_t end = std::min(word.size(), start + budget);
    while (end > start && end < word.size() && is_continuation(word[end])) --end;
    int32_t id = -1;
    while (end > start) {
      id = find(std::string_view(candidate).substr(0, head + end - start));
      if (id >= 0) break;
      do {
        --end;
      } while (end > start && is_continuation(word[end]));
    }
    if (id < 0) {
      out.resize(first);
      out.push_back(unk);
      return;
    }
    out.push_back(id);
    start = end;
  }
}

void WordPiece::Impl::encode_into(std::string_view text, std::vector<int32_t>& out,
                                  size_t limit) const {
  // Added tokens are cut out of the raw text first (HF matches tokens with normalized: false
  // before normalization, leftmost then longest); the text between them is encoded on its own.
  size_t seg = 0;
  for (size_t i = 0; i < text.size() && out.size() < limit;) {
    const AddedToken* hit = nullptr;
    if (added_first[static_cast<uint8_t>(text[i])]) {
      for (const AddedToken& t : added) {
        if (text.compare(i, t.content.size(), t.content) == 0 &&
            (hit == nullptr || t.content.size() > hit->content.size()))
          hit = &t;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    encode_segment(text.substr(seg, i - seg), out, limit);
    if (out.size() < limit) out.push_back(hit->id);
    i += hit->content.size();
    seg = i;
  }
  if (seg < text.size()) encode_segment(text.substr(seg), out, limit);
}

// ---- reading tokenizer.json ----

namespace {

// Errors name the file and the JSON path of the offending value.
[[noreturn]] void fail(const std::string& label, const std::string& path, const std::string& what) {
  throw WordPieceError(label + ": " + path + ": " + what);
}

const json& member(const json& obj, const char* key, const std::string& label,
                   const std::string& path) {
  if (!obj.is_object()) fail(label, path, "expected an object");
  const auto it = obj.find(key);
  if (it == obj.end()) fail(label, path.empty() ? key : path + "." + key, "missing");
  return *it;
}

std::string string_member(const json& obj, const char* key, const std::string& label,
                          const std::string& path) {
  const json& v = member(obj, key, label, path);
  if (!v.is_string()) fail(label, path + "." + key, "expected a string, got " + v.dump());
  return v.get<std::string>();
}

NormalizerFlags read_normalizer(const json& root, const std::string& label) {
  NormalizerFlags f;
  const auto it = root.find("normalizer");
  if (it == root.end() || it->is_null()) return f;  // no normalizer: the raw text
  const std::string type = string_member(*it, "type", label, "normalizer");
  if (type != "BertNormalizer")
    fail(label, "normalizer.type",
         "\"" + type + "\" is not supported (only BertNormalizer or null)");
  const auto flag = [&](const char* key, bool dflt) {
    const auto k = it->find(key);
    if (k == it->end() || k->is_null()) return dflt;
    if (!k->is_boolean())
      fail(label, std::string("normalizer.") + key, "expected true, false or null");
    return k->get<bool>();
  };
  f.clean_text = flag("clean_text", true);
  f.chinese = flag("handle_chinese_chars", true);
  f.lowercase = flag("lowercase", true);
  f.strip_accents = flag("strip_accents", f.lowercase);  // null: follow lowercase
  return f;
}

void read_pre_tokenizer(const json& root, const std::string& label) {
  const json& pre = member(root, "pre_tokenizer", label, "");
  const std::string type =
      pre.is_object() ? string_member(pre, "type", label, "pre_tokenizer") : "";
  if (type != "BertPreTokenizer")
    fail(label, "pre_tokenizer", pre.dump() + " is not supported (only BertPreTokenizer)");
}

}  // namespace

void WordPiece::Impl::read_model(const json& root) {
  Impl& wp = *this;
  const json& model = member(root, "model", label, "");
  if (string_member(model, "type", label, "model") != "WordPiece")
    fail(label, "model.type", "\"" + model["type"].get<std::string>() + "\" is not WordPiece");
  if (const auto p = model.find("continuing_subword_prefix"); p != model.end() && !p->is_null())
    wp.prefix = string_member(model, "continuing_subword_prefix", label, "model");
  if (const auto m = model.find("max_input_chars_per_word"); m != model.end()) {
    if (!m->is_number_unsigned() || m->get<uint64_t>() == 0)
      fail(label, "model.max_input_chars_per_word", "expected a positive integer");
    wp.max_word_chars = m->get<size_t>();
  }
  const json& vocab = member(model, "vocab", label, "model");
  if (!vocab.is_object() || vocab.empty())
    fail(label, "model.vocab", "expected a non-empty object of piece: id");
  // Ids must be exactly 0..n-1, each once: the encoder's embedding rows.
  const size_t n = vocab.size();
  wp.pieces.assign(n, std::string());
  std::vector<bool> seen(n, false);
  wp.index.reserve(n);
  for (const auto& [piece, id_json] : vocab.items()) {
    const std::string path = "model.vocab[" + json(piece).dump() + "]";
    if (!id_json.is_number_unsigned() || id_json.get<uint64_t>() >= n)
      fail(label, path, "id " + id_json.dump() + " is not in 0.." + std::to_string(n - 1));
    const auto id = id_json.get<size_t>();
    if (seen[id])
      fail(label, path,
           "duplicate id " + std::to_string(id) + " (also " + json(wp.pieces[id]).dump() + ")");
    seen[id] = true;
    wp.pieces[id] = piece;
    wp.index.insert(tok::hash_bytes(piece), static_cast<int32_t>(id),
                    [](int32_t) { return false; });
    wp.max_piece_bytes = std::max(wp.max_piece_bytes, piece.size());
  }
  const std::string unk_token = string_member(model, "unk_token", label, "model");
  wp.unk = wp.find(unk_token);
  if (wp.unk < 0) fail(label, "model.unk_token", json(unk_token).dump() + " is not in model.vocab");
}

void WordPiece::Impl::read_added_tokens(const json& root) {
  Impl& wp = *this;
  const auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return;
  if (!it->is_array()) fail(label, "added_tokens", "expected an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    const std::string content = string_member(t, "content", label, path);
    const json& id_json = member(t, "id", label, path);
    const int32_t id = id_json.is_number_unsigned() && id_json.get<uint64_t>() < wp.pieces.size()
                           ? static_cast<int32_t>(id_json.get<uint64_t>())
                           : -1;
    if (id < 0 || wp.pieces[static_cast<size_t>(id)] != content)
      fail(label, path + ".id",
           id_json.dump() + " is not the id of " + json(content).dump() +
               " in model.vocab (tokens beyond the vocabulary are not supported)");
    for (const char* key : {"normalized", "lstrip", "rstrip", "single_word"}) {
      const auto k = t.find(key);
      if (k != t.end() && k->is_boolean() && k->get<bool>())
        fail(label, path + "." + key, "true is not supported (only false)");
    }
    if (content.empty()) fail(label, path + ".content", "empty");
    wp.added.push_back({content, id});
    wp.added_first[static_cast<uint8_t>(content[0])] = true;
  }
}

// [CLS] and [SEP] from the post-processor: TemplateProcessing "single" = [CLS] $A [SEP], or
// BertProcessing.
void WordPiece::Impl::read_post_processor(const json& root) {
  Impl& wp = *this;
  const json& post = member(root, "post_processor", label, "");
  const std::string type = string_member(post, "type", label, "post_processor");
  const auto token_id = [&](const std::string& name, const std::string& path) {
    const int32_t id = wp.find(name);
    if (id < 0) fail(label, path, json(name).dump() + " is not in model.vocab");
    return id;
  };
  if (type == "BertProcessing") {
    for (const char* key : {"cls", "sep"}) {
      const json& v = member(post, key, label, "post_processor");
      if (!v.is_array() || v.size() != 2 || !v[0].is_string())
        fail(label, std::string("post_processor.") + key, "expected [token, id]");
      (key[0] == 'c' ? wp.cls : wp.sep) =
          token_id(v[0].get<std::string>(), std::string("post_processor.") + key);
    }
    return;
  }
  if (type != "TemplateProcessing")
    fail(label, "post_processor.type",
         "\"" + type + "\" is not supported (TemplateProcessing or BertProcessing)");
  const json& single = member(post, "single", label, "post_processor");
  const auto special = [&](size_t i) -> std::string {
    if (!single.is_array() || single.size() != 3 || !single[i].contains("SpecialToken") ||
        !single[i]["SpecialToken"].contains("id") || !single[i]["SpecialToken"]["id"].is_string())
      fail(label, "post_processor.single",
           "expected [SpecialToken, Sequence A, SpecialToken], got " + single.dump());
    return single[i]["SpecialToken"]["id"].get<std::string>();
  };
  if (!single.is_array() || single.size() != 3 || !single[1].contains("Sequence"))
    fail(label, "post_processor.single",
         "expected [SpecialToken, Sequence A, SpecialToken], got " + single.dump());
  wp.cls = token_id(special(0), "post_processor.single[0]");
  wp.sep = token_id(special(2), "post_processor.single[2]");
}

// [PAD]: padding.pad_token when the file pads, else the piece "[PAD]".
void WordPiece::Impl::read_pad(const json& root) {
  Impl& wp = *this;
  std::string pad_token = "[PAD]", path = "model.vocab";
  if (const auto p = root.find("padding");
      p != root.end() && p->is_object() && p->contains("pad_token")) {
    pad_token = string_member(*p, "pad_token", label, "padding");
    path = "padding.pad_token";
  }
  wp.pad = wp.find(pad_token);
  if (wp.pad < 0) fail(label, path, json(pad_token).dump() + " is not in model.vocab");
}

WordPiece::WordPiece() : impl_(std::make_unique<Impl>()) {}
WordPiece::~WordPiece() = default;
WordPiece::WordPiece(WordPiece&&) noexcept = default;
WordPiece& WordPiece::operator=(WordPiece&&) noexcept = default;

WordPiece WordPiece::from_json(std::string_view json_text, std::string label) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw WordPieceError(label + ": not JSON: " + e.what());
  }
  if (!root.is_object()) throw WordPieceError(label + ": expected a JSON object at the top");
  WordPiece wp;
  Impl& impl = *wp.impl_;
  impl.label = std::move(label);
  impl.read_model(root);
  impl.read_added_tokens(root);
  impl.norm = read_normalizer(root, impl.label);
  read_pre_tokenizer(root, impl.label);
  impl.read_post_processor(root);
  impl.read_pad(root);
  impl.build_ascii_tables();
  return wp;
}

WordPiece WordPiece::from_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw WordPieceError(path.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return from_json(text.str(), path.string());
}

std::vector<int32_t> WordPiece::encode(std::string_view text, int max_tokens) const {
  if (max_tokens < 2)
    throw WordPieceError("WordPiece::encode: max_tokens " + std::to_string(max_tokens) +
                         " leaves no room for [CLS] and [SEP] (>= 2)");
  std::vector<int32_t> ids{impl_->cls};
  // Truncation keeps the first max_tokens - 2 pieces: stop encoding there.
  impl_->encode_into(text, ids, static_cast<size_t>(max_tokens) - 1);
  ids.resize(std::min(ids.size(), static_cast<size_t>(max_tokens) - 1));
  ids.push_back(impl_->sep);
  return ids;
}

std::vector<int32_t> WordPiece::encode_pieces(std::string_view text) const {
  std::vector<int32_t> ids;
  impl_->encode_into(text, ids, std::numeric_limits<size_t>::max());
  return ids;
}

int32_t WordPiece::vocab_size() const {
  return static_cast<int32_t>(impl_->pieces.size());
}
int32_t WordPiece::cls_id() const {
  return impl_->cls;
}
int32_t WordPiece::sep_id() const {
  return impl_->sep;
}
int32_t WordPiece::pad_id() const {
  return impl_->pad;
}
int32_t WordPiece::unk_id() const {
  return impl_->unk;
}

const std::string& WordPiece::piece(int32_t id) const {
  if (id < 0 || id >= vocab_size())
    throw WordPieceError("WordPiece::piece: id " + std::to_string(id) + " is not in 0.." +
                         std::to_string(vocab_size() - 1));
  return impl_->pieces[static_cast<size_t>(id)];
}

}  // namespace vsynth::kernels
