// BertEmbedder: the pipeline's Embedder (embedder.h): WordPiece ids (kernels/tokenizer/
// wordpiece.h) through the BERT encoder (kernels/encoder/bert.h), with a cache of embeddings
// by text (two 64-bit FNV-1a hashes of different offsets and the length), so an unchanged chunk
// or a task file seen before is never embedded twice. A cache only: a text's row is what the
// encoder gives it alone (the encoder is batch-invariant bit for bit), hit or miss.
#include <algorithm>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "base/hash.h"
#include "kernels/encoder/bert.h"
#include "kernels/tokenizer/wordpiece.h"
#include "stages/retrieval/embedder.h"

namespace vsynth::stages::retrieval {

namespace {

struct TextKey {
  uint64_t a = 0, b = 0;
  std::size_t size = 0;
  bool operator==(const TextKey&) const = default;
};
struct TextKeyHash {
  std::size_t operator()(const TextKey& k) const { return k.a ^ (k.b * 31) ^ k.size; }
};
TextKey key_of(std::string_view text) {
  return {base::fnv1a64(text), base::fnv1a64(text, 0x84222325cbf29ce4ULL), text.size()};
}

// Embeddings kept: 65536 x 384 floats is 96 MiB for all-MiniLM-L6-v2, the chunks of a large
// repository plus the task files of a long run. Oldest first out.
constexpr std::size_t kCacheEntries = 1 << 16;

class BertEmbedder final : public Embedder {
 public:
  BertEmbedder(kernels::WordPiece tokenizer, std::shared_ptr<kernels::BertEncoder> encoder,
               const BertEmbedderOptions& options, std::string tokenizer_digest)
      : tokenizer_(std::move(tokenizer)), encoder_(std::move(encoder)), options_(options) {
    max_tokens_ = std::min(options.max_tokens, encoder_->config().max_positions);
    fingerprint_ = fmt::format("bert:{}:wordpiece:{}:max{}", encoder_->fingerprint(),
                               tokenizer_digest, max_tokens_);
  }

  int dim() const override { return encoder_->dim(); }
  const std::string& fingerprint() const override { return fingerprint_; }
  uint32_t count_tokens(std::string_view text) const override {
    return static_cast<uint32_t>(tokenizer_.encode_pieces(text).size() + 2);
  }

  std::vector<float> embed(std::span<const std::string_view> texts) const override {
    const auto d = static_cast<std::size_t>(dim());
    std::vector<float> out(texts.size() * d);
    // --- hits from the cache; the rest (each distinct text once) to encode ---
    std::vector<std::size_t> todo;
    std::unordered_map<TextKey, std::size_t, TextKeyHash> first;  // text -> row in `out`
    std::vector<std::pair<std::size_t, std::size_t>> copies;      // (row, from row)
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < texts.size(); ++i) {
        const TextKey k = key_of(texts[i]);
        if (auto it = cache_.find(k); it != cache_.end()) {
          std::copy(it->second.begin(), it->second.end(), out.begin() + i * d);
        } else if (auto f = first.find(k); f != first.end()) {
          copies.emplace_back(i, f->second);
        } else {
          first.emplace(k, i);
          todo.push_back(i);
        }
      }
    }
    // --- encode in batches of options_.batch texts ---
    const std::size_t batch = static_cast<std::size_t>(std::max(1, options_.batch));
    for (std::size_t at = 0; at < todo.size(); at += batch) {
      const std::size_t n = std::min(batch, todo.size() - at);
      std::vector<std::vector<int32_t>> ids(n);
      for (std::size_t j = 0; j < n; ++j) {
        ids[j] = tokenizer_.encode(texts[todo[at + j]], max_tokens_);
      }
      const std::vector<float> rows = encoder_->embed(ids);
      for (std::size_t j = 0; j < n; ++j) {
        std::copy(rows.begin() + j * d, rows.begin() + (j + 1) * d, out.begin() + todo[at + j] * d);
      }
    }
    for (const auto& [row, from] : copies) {
      std::copy(out.begin() + from * d, out.begin() + (from + 1) * d, out.begin() + row * d);
    }
    remember(texts, todo, out);
    return out;
  }

 private:
  void remember(std::span<const std::string_view> texts, const std::vector<std::size_t>& rows,
                const std::vector<float>& out) const {
    const auto d = static_cast<std::size_t>(dim());
    std::lock_guard lock(mu_);
    for (std::size_t i : rows) {
      const TextKey k = key_of(texts[i]);
      if (!cache_.emplace(k, std::vector<float>(out.begin() + i * d, out.begin() + (i + 1) * d))
               .second) {
        continue;
      }
      order_.push_back(k);
      if (order_.size() > kCacheEntries) {
        cache_.erase(order_.front());
        order_.pop_front();
      }
    }
  }

  kernels::WordPiece tokenizer_;
  std::shared_ptr<kernels::BertEncoder> encoder_;
  BertEmbedderOptions options_;
  int max_tokens_ = 256;
  std::string fingerprint_;
  mutable std::mutex mu_;
  mutable std::unordered_map<TextKey, std::vector<float>, TextKeyHash> cache_;
  mutable std::deque<TextKey> order_;
};

}  // namespace

namespace {

std::shared_ptr<const Embedder> load_fresh(const std::filesystem::path& dir,
                                           const BertEmbedderOptions& options) {
  const std::filesystem::path tokenizer_file = dir / "tokenizer.json";
  std::ifstream in(tokenizer_file, std::ios::binary);
  if (!in) {
    throw kernels::WordPieceError(
        fmt::format("cannot read {} (the encoder's tokenizer)", tokenizer_file.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  kernels::WordPiece tokenizer = kernels::WordPiece::from_json(json, tokenizer_file.string());
  auto encoder = kernels::BertEncoder::load(dir, {options.threads, options.q8_0});
  return std::make_shared<BertEmbedder>(std::move(tokenizer), std::move(encoder), options,
                                        fmt::format("{:016x}", key_of(json).a));
}

// What identifies a loaded embedder: the directory, its files' sizes and modification times
// (a file replaced on disk is loaded afresh) and the options.
std::string load_key(const std::filesystem::path& dir, const BertEmbedderOptions& o) {
  std::error_code ec;
  std::string key = std::filesystem::weakly_canonical(dir, ec).string();
  for (const char* name : {"config.json", "model.safetensors", "tokenizer.json"}) {
    const std::filesystem::path f = dir / name;
    const auto size = std::filesystem::file_size(f, ec);
    const auto time = std::filesystem::last_write_time(f, ec).time_since_epoch().count();
    key += fmt::format("|{}:{}:{}", name, ec ? 0 : size, ec ? 0 : time);
  }
  return key + fmt::format("|t{}|m{}|b{}|q{}", o.threads, o.max_tokens, o.batch, o.q8_0);
}

}  // namespace

// Loaded once per process for each directory and options, and kept: every pipeline of the
// process (a test binary runs hundreds; a server runs one per request batch) shares the weights
// and the embedding cache. Results never depend on it: a cached row is the encoder's row.
std::shared_ptr<const Embedder> load_bert_embedder(const std::filesystem::path& dir,
                                                   const BertEmbedderOptions& options) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Embedder>> loaded;
  const std::string key = load_key(dir, options);
  std::lock_guard lock(mu);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  std::shared_ptr<const Embedder> e = load_fresh(dir, options);  // throws: nothing kept
  loaded.emplace(key, e);
  return e;
}

}  // namespace vsynth::stages::retrieval
