// WordPiece tokenizer of BERT-family encoders, read from a Hugging Face tokenizer.json, with the
// token ids HF `tokenizers` produces (tests/kernels/wordpiece_golden_test.cpp pins them):
//   normalizer     BertNormalizer: clean_text (drop NUL, U+FFFD and control characters; every
//                  whitespace becomes a space), handle_chinese_chars (spaces around each CJK
//                  ideograph), strip_accents (NFD, drop combining marks; null = follow
//                  lowercase), lowercase
//   pre-tokenizer  BertPreTokenizer: split on whitespace, and every punctuation character
//                  (Unicode P* and the ASCII symbols) is a word of its own
//   model          WordPiece: per word, greedy longest match first from the vocabulary, later
//                  pieces prefixed "##"; a word with no full cover, or longer than
//                  max_input_chars_per_word characters, becomes [UNK]
//   post-processor [CLS] ids [SEP]; truncation keeps the first max_tokens - 2 word pieces
//   added tokens   tokenizer.json's added_tokens ([CLS], [MASK], ...) written in the text are
//                  matched in the raw text before normalization (leftmost, then longest) and
//                  give their own id, as in HF; "[mask]" is not matched (three words)
// The character classes are those of the pinned HF tokenizers, measured from it into
// bert_tables.inc (scripts/gen_unicode_tables.py --bert): HF mixes Unicode versions.
//
//   WordPiece wp = WordPiece::from_file("models/all-MiniLM-L6-v2/tokenizer.json");
//   std::vector<int32_t> ids = wp.encode("def parse_url(s):", 256);   // [101, ..., 102]
//
// Immutable after construction; encode is safe from many threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vsynth::kernels {

class WordPieceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class WordPiece {
 public:
  // Reads and checks tokenizer.json; throws WordPieceError naming the file and the JSON path of
  // what is wrong (not JSON, model.type is not WordPiece, no vocab, [CLS]/[SEP]/[UNK]/[PAD]
  // missing, duplicate ids, a normalizer or pre-tokenizer kind this class does not implement).
  static WordPiece from_file(const std::filesystem::path& path);
  // The same from the file's text; `label` names it in errors.
  static WordPiece from_json(std::string_view json_text, std::string label);
  ~WordPiece();
  WordPiece(WordPiece&&) noexcept;
  WordPiece& operator=(WordPiece&&) noexcept;

  // [CLS] pieces... [SEP], at most max_tokens ids (>= 2; WordPieceError otherwise). Invalid
  // UTF-8 is read as U+FFFD (then dropped by clean_text), never an error.
  std::vector<int32_t> encode(std::string_view text, int max_tokens) const;
  // The pieces alone (no [CLS]/[SEP], no truncation): for BM25-style uses and tests.
  std::vector<int32_t> encode_pieces(std::string_view text) const;

  int32_t vocab_size() const;
  int32_t cls_id() const;
  int32_t sep_id() const;
  int32_t pad_id() const;
  int32_t unk_id() const;
  // The piece text of id ("##ing"); WordPieceError outside the vocabulary.
  const std::string& piece(int32_t id) const;

 private:
  WordPiece();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vsynth::kernels
