// Text -> unit vectors for retrieval: the WordPiece tokenizer and the BERT encoder of kernels/,
// with a cache by content hash (an unchanged chunk is never embedded twice) shared by every
// caller. The interface exists so the index can be driven by a small deterministic embedder in
// its unit tests; the pipeline always uses BertEmbedder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vsynth::stages::retrieval {

class Embedder {
 public:
  virtual ~Embedder() = default;
  virtual int dim() const = 0;
  // Identifies the model and its options; index caches are keyed by it.
  virtual const std::string& fingerprint() const = 0;
  // Tokens the encoder would see for `text` ([CLS]/[SEP] included, before truncation).
  virtual uint32_t count_tokens(std::string_view text) const = 0;
  // texts.size() rows of dim() floats, each of unit length; a text's row does not depend on
  // the other texts of the call.
  virtual std::vector<float> embed(std::span<const std::string_view> texts) const = 0;
};

struct BertEmbedderOptions {
  int threads = 0;
  int max_tokens = 256;  // truncation, [CLS]/[SEP] included (all-MiniLM-L6-v2: 256)
  int batch = 32;        // texts per encoder call
  bool q8_0 = false;
};

// Loads models/<dir>/{config.json, model.safetensors, tokenizer.json}. Throws EncoderError /
// SafetensorsError / WordPieceError (kernels/) naming the file. Loaded once per process for a
// directory (its files' sizes and times) and options, then shared with its embedding cache.
std::shared_ptr<const Embedder> load_bert_embedder(const std::filesystem::path& dir,
                                                   const BertEmbedderOptions& options);

}  // namespace vsynth::stages::retrieval
