// A real embedder of its own kind for the index's tests: each BM25 term of a text (terms.h)
// hashed into one of `dim` buckets with a hashed sign, the bag normalised to unit length.
// Deterministic, fast, and similar texts get similar vectors (shared identifiers), which is
// all the index needs; it counts its calls and texts so tests can assert what was embedded.
#pragma once

#include <atomic>
#include <cctype>
#include <cmath>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/hash.h"
#include "stages/retrieval/embedder.h"
#include "stages/retrieval/terms.h"

namespace vsynth::stages::retrieval::test {

class BagEmbedder final : public Embedder {
 public:
  explicit BagEmbedder(int dim = 64, std::string fingerprint = "test-bag-64")
      : dim_(dim), fingerprint_(std::move(fingerprint)) {}
  int dim() const override { return dim_; }
  const std::string& fingerprint() const override { return fingerprint_; }
  // [CLS] + [SEP] + one token per 4 bytes of each word + one per punctuation byte: close to
  // WordPiece on code, and additive over rows as WordPiece is.
  uint32_t count_tokens(std::string_view text) const override {
    uint32_t n = 2, word = 0;
    for (const char c : text) {
      const bool alnum = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      if (alnum) {
        ++word;
        continue;
      }
      n += (word + 3) / 4;
      word = 0;
      if (!std::isspace(static_cast<unsigned char>(c))) ++n;
    }
    return n + (word + 3) / 4;
  }
  std::vector<float> embed(std::span<const std::string_view> texts) const override {
    calls.fetch_add(1);
    texts_embedded.fetch_add(texts.size());
    std::vector<float> out(texts.size() * static_cast<std::size_t>(dim_), 0.0f);
    for (std::size_t t = 0; t < texts.size(); ++t) {
      float* v = out.data() + t * static_cast<std::size_t>(dim_);
      for (const std::string& term : bm25_terms(texts[t])) {
        const uint64_t h = vsynth::base::fnv1a64(term);
        v[h % static_cast<uint64_t>(dim_)] += (h >> 40) & 1 ? 1.0f : -1.0f;
      }
      double norm = 0;
      for (int i = 0; i < dim_; ++i) norm += static_cast<double>(v[i]) * v[i];
      if (norm == 0) {
        v[0] = 1;
        continue;
      }
      for (int i = 0; i < dim_; ++i) v[i] = static_cast<float>(v[i] / std::sqrt(norm));
    }
    return out;
  }

  mutable std::atomic<uint64_t> calls{0}, texts_embedded{0};

 private:
  int dim_;
  std::string fingerprint_;
};

}  // namespace vsynth::stages::retrieval::test
