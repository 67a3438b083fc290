// Model and Sequence: the decoder forward pass over the paged KV cache (see kernels/engine.h).
// It joins kernels/model/ and kernels/kv/ from above: kv/ builds on model/ (its config and vector
// math), model/ never includes kv/ (tests/kernels/engine_layers_test.cpp).
//
// Per layer, for m tokens at positions p0 .. p0+m-1 (x: [m][d_model] residual stream):
//   h = RMSNorm(x) * attn_norm
//   q, k, v = h Wq^T (+bq), h Wk^T (+bk), h Wv^T (+bv)         [m][H*dk], [m][Hkv*dk], [m][Hkv*dv]
//   gemma3: q, k = per-head RMSNorm * q_norm / k_norm
//   q, k = RoPE(q, k; layer's base); q *= attn_scale; the cache stores k, v
//   a = attention(q, cache)                                    [m][H*dv]
//   o = a Wo^T; gemma3: o = RMSNorm(o) * post_attention_norm;  x += o
//   h = RMSNorm(x) * ffn_norm
//   f = (act(h Wgate^T) * (h Wup^T)) Wdown^T; gemma3: f = RMSNorm(f) * post_ffw_norm;  x += f
// Then logits = RMSNorm(x) * output_norm, times output^T (token_embd when tied).
#include "kernels/engine.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/cpu_path.h"
#include "kernels/cpu/grouped.h"
#include "kernels/cpu/huge_buffer.h"
#include "kernels/cpu/matvec.h"
#include "kernels/cpu/vec_kernels.h"
#include "kernels/gguf/reader.h"
#include "kernels/kv/attention.h"
#include "kernels/kv/kv_cache.h"
#include "kernels/kv/prefix_cache.h"
#include "kernels/model/model_view.h"
#include "kernels/model/rope.h"
#include "kernels/model/weights.h"
#include "kernels/quant/fp16.h"
#include "kernels/tokenizer/gguf_vocab.h"

namespace vsynth::kernels {

namespace {

constexpr int32_t kBlockTokens = 32;
// Tokens per forward chunk in prefill: bounds the activation buffers ([m][ffn] floats) and keeps
// sliding-window bookkeeping simple; llama.cpp's default micro-batch is the same.
constexpr int32_t kMaxChunk = 512;

// Tokens of the next chunk of an evaluation at position pos with `left` tokens to go: at most
// kMaxChunk, cut at an absolute block boundary. INT8 keys are quantized when their block fills,
// so a query sees a block sealed iff the pass that reads it filled it: with every cut on a block
// boundary a prefill's logits do not depend on how it was chunked (the scheduler cuts long
// prefills into smaller chunks and must get the bits of one Sequence::prefill).
int32_t chunk_tokens(int32_t pos, int32_t left) {
  return std::min(left, kMaxChunk - pos % kBlockTokens);
}

// Activation buffers of one forward pass over M tokens (every row of a batch concatenated).
struct Scratch {
  std::vector<float> x, h, q, k, v, att, o, g, u;
  void reserve(const ModelConfig& c, int32_t m) {
    const size_t M = static_cast<size_t>(m), d = static_cast<size_t>(c.d_model);
    const size_t F = static_cast<size_t>(c.ffn_dim);
    const size_t qn = static_cast<size_t>(c.n_heads) * static_cast<size_t>(c.head_dim_k);
    const size_t kn = static_cast<size_t>(c.n_kv_heads) * static_cast<size_t>(c.head_dim_k);
    const size_t vn = static_cast<size_t>(c.n_kv_heads) * static_cast<size_t>(c.head_dim_v);
    const size_t an = static_cast<size_t>(c.n_heads) * static_cast<size_t>(c.head_dim_v);
    const auto grow = [](std::vector<float>& b, size_t n) {
      if (b.size() < n) b.resize(n);
    };
    grow(x, M * d);
    grow(h, M * d);
    grow(o, M * d);
    grow(q, M * qn);
    grow(k, M * kn);
    grow(v, M * vn);
    grow(att, M * an);
    grow(g, M * F);
    grow(u, M * F);
  }
};

// RoPE tables of one chunk, made on first use for each base (0: full layers, 1: sliding).
struct ChunkAngles {
  std::vector<float> cos[2], sin[2];
  bool have[2] = {false, false};
};

// y[r] = x[r] * (1 / sqrt(mean(x[r]^2) + eps)) * w, for m rows of n. As ggml: squares summed in
// double, the scale computed in fp32.
void rms_norm(const vec::Kernels& vk, const float* x, const float* w, float* y, int32_t m,
              int32_t n, float eps) {
  for (int32_t r = 0; r < m; ++r) {
    const float* xr = x + static_cast<size_t>(r) * n;
    double sum = 0.0;
    for (int32_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float mean = static_cast<float>(sum / n);
    const float s = 1.0f / std::sqrt(mean + eps);
    vk.scale_mul(xr, s, w, y + static_cast<size_t>(r) * n, n);
  }
}

// y = x W^T for m rows. Float weight types take float inputs in our kernels; ggml converts the
// inputs to the weight's type first (f16 / bf16), so round a copy the same way here to keep our
// logits comparable with llama.cpp's. Quantized types quantize their inputs inside matmul.
// linear_input: x itself, or for f16 / bf16 weights its `rows` rows rounded into `rounded`.
const float* linear_input(const WeightView& w, const float* x, size_t rows,
                          std::vector<float>& rounded) {
  if (w.type != DType::F16 && w.type != DType::BF16) return x;
  rounded.resize(rows * static_cast<size_t>(w.cols));
  for (size_t i = 0; i < rounded.size(); ++i) {
    rounded[i] =
        w.type == DType::F16 ? fp16_to_fp32(fp32_to_fp16(x[i])) : bf16_to_fp32(fp32_to_bf16(x[i]));
  }
  return rounded.data();
}

void linear(const WeightView& w, const float* x, int32_t m, float* y) {
  std::vector<float> rounded;
  matmul(w, linear_input(w, x, static_cast<size_t>(m), rounded), m, y);
}

// The same with each row's outputs at its own address (matmul's per-token form).
void linear(const WeightView& w, const float* x, std::span<float* const> y) {
  std::vector<float> rounded;
  matmul(w, linear_input(w, x, y.size(), rounded), y);
}

// Decode (one token): several matvecs that read the same input run as one parallel region,
// each weight cut into row slices small enough that matvec runs them serially, so a layer pays
// for a few thread hand-offs instead of one per projection.
struct MatvecJob {
  const WeightView* w;
  const float* x;
  float* y;
};

void matvec_group(std::initializer_list<MatvecJob> jobs) {
  constexpr size_t kSliceBytes = 256 * 1024;  // below 2 x matvec's smallest parallel task
  struct Slice {
    WeightView w;
    const float* x;
    float* y;
  };
  std::vector<Slice> slices;
  for (const MatvecJob& j : jobs) {
    if (j.w->type == DType::F16 || j.w->type == DType::BF16) {
      linear(*j.w, j.x, 1, j.y);  // needs the input rounding: rare, not worth slicing
      continue;
    }
    const int64_t per = std::max<int64_t>(1, static_cast<int64_t>(kSliceBytes / j.w->row_bytes));
    for (int64_t r0 = 0; r0 < j.w->rows; r0 += per) {
      Slice sl{*j.w, j.x, j.y + r0};
      sl.w.rows = std::min(per, j.w->rows - r0);
      sl.w.data =
          static_cast<const std::byte*>(j.w->data) + static_cast<size_t>(r0) * j.w->row_bytes;
      slices.push_back(sl);
    }
  }
  if (slices.size() <= 1 || tbb::this_task_arena::max_concurrency() == 1) {
    for (const Slice& sl : slices) matvec(sl.w, sl.x, sl.y);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<size_t>(0, slices.size(), 1),
      [&](const tbb::blocked_range<size_t>& r) {
        for (size_t i = r.begin(); i < r.end(); ++i) matvec(slices[i].w, slices[i].x, slices[i].y);
      },
      tbb::simple_partitioner());
}

// h W^T for each job over m rows: decode (m == 1) runs the projections of one input as one
// parallel group, prefill runs each as a matmul (parallel over rows inside).
void project(int32_t m, std::initializer_list<MatvecJob> jobs) {
  if (m == 1) {
    matvec_group(jobs);
    return;
  }
  for (const MatvecJob& j : jobs) linear(*j.w, j.x, m, j.y);
}

class ModelImpl;

class SequenceImpl final : public Sequence {
 public:
  explicit SequenceImpl(std::shared_ptr<ModelImpl> model);
  SequenceImpl(const SequenceImpl& other, std::unique_ptr<KvSequence> kv);

  std::span<const float> prefill(std::span<const TokenId> tokens) override {
    return eval(tokens, false, true);
  }
  std::span<const float> prefill_all(std::span<const TokenId> tokens) override {
    return eval(tokens, true, false);
  }
  std::span<const float> decode(TokenId token) override { return eval({&token, 1}, false, false); }
  // Starts this (empty) sequence from a prefix cache hit (PrefixCache::lookup's blocks).
  void adopt(PrefixCache::Found found, std::span<const TokenId> prompt);

  // Batched steps (forward_batch): the checks eval makes before evaluating; the per-sequence
  // part of a layer's attention (RoPE, KV write, attention) for this sequence's m rows of the
  // step's q/k/v at p0 = position(); the bookkeeping after a chunk (publish, commit) and after
  // the whole row (tokens, logits), or after a failed step (as a failed eval leaves it).
  void check_eval(std::span<const TokenId> tokens) const;
  void attend(int32_t l, int32_t m, ChunkAngles& angles, float* q, float* k, const float* v,
              float* att);
  void commit_chunk(int32_t m, int32_t p0, std::span<const TokenId> tokens, bool publish);
  std::span<float> logits_buffer(size_t rows) {
    logits_rows_ = 0;
    logits_.resize(rows * static_cast<size_t>(vocab()));
    return logits_;
  }
  std::span<const float> finish_eval(std::span<const TokenId> tokens, size_t logit_rows);
  void abandon_eval(int32_t p0, std::span<const TokenId> tokens);
  int32_t vocab() const;

  int32_t position() const override { return kv_->size(); }
  std::span<const TokenId> tokens() const override { return tokens_; }
  std::span<const float> last_logits() const override;
  void rollback(int32_t pos) override;
  int32_t min_rollback_position() const override { return kv_->min_rollback(); }
  std::unique_ptr<Sequence> fork() const override;
  int64_t kv_bytes() const override { return kv_->bytes(); }
  const Model& model() const override;

 private:
  // `publish`: hand the full blocks each chunk completes to the prefix cache (prefill only:
  // verification drafts and decoded tokens are not worth caching on their own).
  std::span<const float> eval(std::span<const TokenId> tokens, bool all_logits, bool publish);
  // Publishes blocks [chain_.size(), upto / block_tokens) to the prefix cache; positions < p0
  // are in tokens_, the rest in `fresh` (the tokens being evaluated).
  void publish_blocks(int32_t upto, int32_t p0, std::span<const TokenId> fresh);

  std::shared_ptr<ModelImpl> m_;
  std::unique_ptr<KvSequence> kv_;
  std::vector<TokenId> tokens_;
  std::vector<float> logits_;  // rows of vocab floats
  size_t logits_rows_ = 0;
  // Prefix cache: the chain key of each full block seen so far; publishing stops for good at
  // the first block the cache refused (its children could not be found under it either).
  std::vector<uint64_t> chain_;
  bool publish_stopped_ = false;
  // Scratch, sized for the largest chunk seen.
  Scratch scratch_;
};

class ModelImpl final : public Model {
 public:
  ~ModelImpl() override {
    if (pool_) pool_->set_reclaimer({});  // the cache goes before the pool
  }
  // `view`: the model_view.h hook, applied before the KV pool is sized by the layer count.
  ModelImpl(GgufFile file, const ModelOptions& opt, const ModelViewSpec* view = nullptr)
      : file_(std::move(file)),
        cfg_(read_model_config(file_)),
        w_(bind_weights(file_, cfg_)),
        tok_(load_vocab(file_)),
        opt_(opt) {
    if (opt_.threads < 0) throw EngineError("ModelOptions::threads must be >= 0");
    if (opt_.context_length < 0 || opt_.kv_pool_tokens < 0 || opt_.rollback_window < 0 ||
        opt_.prefix_cache_bytes < 0) {
      throw EngineError(
          "ModelOptions: context_length, kv_pool_tokens, rollback_window and "
          "prefix_cache_bytes must be >= 0");
    }
    if (opt_.threads == 0) opt_.threads = tbb::info::default_concurrency();
    if (opt_.context_length == 0) opt_.context_length = cfg_.trained_context;
    if (opt_.kv_pool_tokens == 0) opt_.kv_pool_tokens = int64_t{4} * opt_.context_length;
    if (static_cast<int64_t>(tok_.size()) > cfg_.vocab_size) {
      throw EngineError(file_.name() + ": the tokenizer has " + std::to_string(tok_.size()) +
                        " tokens but token_embd only " + std::to_string(cfg_.vocab_size) + " rows");
    }
    if (view) apply_view(*view);
    group_weights();
    arena_.initialize(opt_.threads);
    KvGeometry g;
    g.n_layers = cfg_.n_layers;
    g.n_kv_heads = cfg_.n_kv_heads;
    g.head_dim_k = cfg_.head_dim_k;
    g.head_dim_v = cfg_.head_dim_v;
    g.type = opt_.kv_type;
    g.block_tokens = kBlockTokens;
    const int64_t blocks_per_layer = (opt_.kv_pool_tokens + kBlockTokens - 1) / kBlockTokens;
    make_pool(g, blocks_per_layer * cfg_.n_layers);
    rope_full_ = std::make_unique<Rope>(cfg_.rope_kind, cfg_.rope_dims, cfg_.rope_base,
                                        cfg_.rope_freq_scale);
    rope_sliding_ = std::make_unique<Rope>(cfg_.rope_kind, cfg_.rope_dims, cfg_.rope_base_sliding,
                                           cfg_.rope_freq_scale);
  }

  const ModelConfig& cfg() const { return cfg_; }
  const ModelWeights& w() const { return w_; }
  // Floats per logit row: the vocabulary, or a view's output rows.
  size_t logit_width() const { return static_cast<size_t>(w_.output.rows); }
  // The view's GGUF parsed again over this model's mapped bytes (no second mapping).
  GgufFile reopen() const { return GgufFile::open_from_memory(file_.bytes(), file_.name()); }
  // Keeps the model whose mapping a view's weights point into.
  void hold(std::shared_ptr<const Model> base) { base_ = std::move(base); }
  const ModelOptions& opt() const { return opt_; }
  tbb::task_arena& arena() const { return arena_; }
  const std::shared_ptr<KvPool>& pool() const { return pool_; }
  const Rope& rope(bool sliding) const { return sliding ? *rope_sliding_ : *rope_full_; }
  const Tokenizer& tok() const { return tok_; }

  const ModelConfig& config() const override;
  const ModelOptions& options() const override;
  const Tokenizer& tokenizer() const override;
  std::size_t weight_bytes() const override;
  KvStats kv_stats() const override;
  std::string backend() const override;
  std::unique_ptr<Sequence> new_sequence() override;
  std::unique_ptr<Sequence> new_sequence_with_prefix(std::span<const TokenId> prompt,
                                                     PrefixUse* use) override;
  void forward_batch(std::span<BatchRow> rows) override;

  PrefixCache* cache() const { return cache_.get(); }

  std::vector<int32_t> windows() const {
    std::vector<int32_t> w(static_cast<size_t>(cfg_.n_layers), 0);
    for (int32_t l = 0; l < cfg_.n_layers; ++l) {
      if (cfg_.layer_sliding[static_cast<size_t>(l)])
        w[static_cast<size_t>(l)] = cfg_.sliding_window;
    }
    return w;
  }

 private:
  void apply_view(const ModelViewSpec& v);
  void group_weights();

  std::shared_ptr<const Model> base_;   // a view's base (destroyed last: the bytes are its)
  std::vector<std::byte> output_copy_;  // a view's gathered output rows
  HugeBuffer grouped_;                  // the regrouped Q8_0 / Q5_0 matrices that w_ points into
  GgufFile file_;
  ModelConfig cfg_;
  ModelWeights w_;
  Tokenizer tok_;
  ModelOptions opt_;
  mutable tbb::task_arena arena_;
  // The block pool, and with prefix_cache_bytes the cache on top of it (its budget added to
  // the pool's capacity; the pool evicts cached blocks before it runs out).
  void make_pool(const KvGeometry& g, int64_t sequence_blocks);

  std::shared_ptr<KvPool> pool_;
  std::unique_ptr<PrefixCache> cache_;
  std::unique_ptr<Rope> rope_full_, rope_sliding_;
  // forward_batch's activations, one step at a time.
  std::mutex batch_mu_;
  Scratch batch_scratch_;
};

// ---------------------------------------------------------------------------------------------
// SequenceImpl

SequenceImpl::SequenceImpl(std::shared_ptr<ModelImpl> model)
    : m_(std::move(model)),
      kv_(std::make_unique<KvSequence>(m_->pool(), m_->windows(), m_->opt().rollback_window)) {}

SequenceImpl::SequenceImpl(const SequenceImpl& o, std::unique_ptr<KvSequence> kv)
    : m_(o.m_),
      kv_(std::move(kv)),
      tokens_(o.tokens_),
      chain_(o.chain_),
      publish_stopped_(o.publish_stopped_) {
  if (o.logits_rows_ > 0) {
    const size_t V = m_->logit_width();
    logits_.assign(o.logits_.end() - static_cast<ptrdiff_t>(V), o.logits_.end());
    logits_rows_ = 1;
  }
}

const Model& SequenceImpl::model() const {
  return *m_;
}

std::span<const float> SequenceImpl::last_logits() const {
  if (logits_rows_ == 0) return {};
  const size_t V = m_->logit_width();
  return {logits_.data() + (logits_rows_ - 1) * V, V};
}

std::unique_ptr<Sequence> SequenceImpl::fork() const {
  return std::make_unique<SequenceImpl>(*this, kv_->fork());
}

void SequenceImpl::rollback(int32_t pos) {
  kv_->rollback(pos);
  tokens_.resize(static_cast<size_t>(pos));
  logits_rows_ = 0;
  const size_t full = static_cast<size_t>(pos / kBlockTokens);
  if (chain_.size() >= full) {
    chain_.resize(full);
    publish_stopped_ = false;  // a refused block is gone or rewritten: its successor may fit
  }
}

void SequenceImpl::adopt(PrefixCache::Found found, std::span<const TokenId> prompt) {
  kv_->adopt(std::move(found.blocks), found.tokens);
  tokens_.assign(prompt.begin(), prompt.begin() + found.tokens);
  chain_ = std::move(found.keys);
}

void SequenceImpl::publish_blocks(int32_t upto, int32_t p0, std::span<const TokenId> fresh) {
  PrefixCache* cache = m_->cache();
  if (!cache || publish_stopped_) return;
  const int32_t n_layers = m_->cfg().n_layers;
  std::vector<TokenId> block(static_cast<size_t>(kBlockTokens));
  std::vector<int32_t> ids(static_cast<size_t>(n_layers));
  for (int32_t b = static_cast<int32_t>(chain_.size()); b < upto / kBlockTokens; ++b) {
    for (int32_t i = 0; i < kBlockTokens; ++i) {
      const int32_t p = b * kBlockTokens + i;
      block[static_cast<size_t>(i)] =
          p < p0 ? tokens_[static_cast<size_t>(p)] : fresh[static_cast<size_t>(p - p0)];
    }
    for (int32_t l = 0; l < n_layers; ++l) ids[static_cast<size_t>(l)] = kv_->block_id(l, b);
    const uint64_t parent = b == 0 ? cache->root() : chain_.back();
    const uint64_t key = PrefixCache::chain(parent, block);
    if (!cache->publish(key, parent, block, ids)) {
      publish_stopped_ = true;
      return;
    }
    chain_.push_back(key);
  }
}

// Floats per logit row: the vocabulary, or a draft view's output rows (model_view.h).
int32_t SequenceImpl::vocab() const {
  return static_cast<int32_t>(m_->logit_width());
}

void SequenceImpl::check_eval(std::span<const TokenId> tokens) const {
  const ModelConfig& c = m_->cfg();
  if (tokens.empty()) throw EngineError("prefill: no tokens to evaluate");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size) {
      throw EngineError("token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                        " is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
    }
  }
  const int64_t end = int64_t{kv_->size()} + static_cast<int64_t>(tokens.size());
  if (end > m_->opt().context_length) {
    throw EngineError("sequence would reach " + std::to_string(end) +
                      " positions, past the context length " +
                      std::to_string(m_->opt().context_length) + " (ModelOptions::context_length)");
  }
}

void SequenceImpl::commit_chunk(int32_t m, int32_t p0, std::span<const TokenId> tokens,
                                bool publish) {
  // Before commit: sliding layers still hold every block of this chunk.
  if (publish) publish_blocks(kv_->size() + m, p0, tokens);
  kv_->commit(kv_->size() + m);
}

std::span<const float> SequenceImpl::finish_eval(std::span<const TokenId> tokens,
                                                 size_t logit_rows) {
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  logits_rows_ = logit_rows;
  return {logits_.data(), logits_rows_ * static_cast<size_t>(vocab())};
}

void SequenceImpl::abandon_eval(int32_t p0, std::span<const TokenId> tokens) {
  // Forget the partial evaluation: committed chunks and any uncommitted writes. If sliding
  // layers already dropped keys needed to go back to p0, keep the committed chunks instead.
  const int32_t committed = kv_->size();
  if (p0 >= kv_->min_rollback()) {
    kv_->rollback(p0);
  } else {
    kv_->rollback(committed);
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.begin() + (committed - p0));
  }
  logits_rows_ = 0;
  chain_.resize(std::min(chain_.size(), static_cast<size_t>(kv_->size() / kBlockTokens)));
}

// One pass of the forward over several sequences' chunks, their tokens concatenated.
struct Chunk {
  SequenceImpl* seq = nullptr;
  const TokenId* ids = nullptr;
  int32_t m = 0;                // tokens, at seq->position() .. +m-1
  int32_t first_logit_row = 0;  // logits of rows [first_logit_row, m) (none when == m)
  float* logits_out = nullptr;  // [m - first_logit_row][vocab]
};
void forward_chunks(const ModelImpl& model, std::span<const Chunk> chunks, Scratch& s);

std::span<const float> SequenceImpl::eval(std::span<const TokenId> tokens, bool all_logits,
                                          bool publish) {
  check_eval(tokens);
  const int32_t n = static_cast<int32_t>(tokens.size());
  const int32_t p0 = kv_->size();
  const size_t V = static_cast<size_t>(vocab());
  std::span<float> out = logits_buffer(all_logits ? static_cast<size_t>(n) : 1);
  try {
    m_->arena().execute([&] {
      for (int32_t done = 0; done < n;) {
        const int32_t mm = chunk_tokens(p0 + done, n - done);
        const bool last = done + mm == n;
        const Chunk c{this, tokens.data() + done, mm, all_logits ? 0 : (last ? mm - 1 : mm),
                      all_logits ? out.data() + static_cast<size_t>(done) * V : out.data()};
        forward_chunks(*m_, {&c, 1}, scratch_);
        commit_chunk(mm, p0, tokens, publish);
        done += mm;
      }
    });
  } catch (...) {
    abandon_eval(p0, tokens);
    throw;
  }
  return finish_eval(tokens, all_logits ? static_cast<size_t>(n) : 1);
}

// Layer l's input side of attention for every row of the pass: h = RMSNorm(x), q/k/v
// projections (+ bias, + per-head norm). Row-wise, so a row's values never depend on the others.
void attention_in(const ModelConfig& c, const LayerWeights& L, const vec::Kernels& vk, int32_t m,
                  Scratch& s) {
  const int32_t d = c.d_model, H = c.n_heads, Hkv = c.n_kv_heads;
  const int32_t qn = H * c.head_dim_k, kn = Hkv * c.head_dim_k, vn = Hkv * c.head_dim_v;
  float *x = s.x.data(), *h = s.h.data(), *q = s.q.data(), *k = s.k.data(), *v = s.v.data();
  rms_norm(vk, x, L.attn_norm, h, m, d, c.rms_eps);
  project(m, {{&L.wq, h, q}, {&L.wk, h, k}, {&L.wv, h, v}});
  if (c.qkv_bias) {
    for (int32_t t = 0; t < m; ++t) {
      vk.add(q + static_cast<size_t>(t) * qn, L.bq, qn);
      vk.add(k + static_cast<size_t>(t) * kn, L.bk, kn);
      vk.add(v + static_cast<size_t>(t) * vn, L.bv, vn);
    }
  }
  if (c.qk_norm) {
    rms_norm(vk, q, L.q_norm, q, m * H, c.head_dim_k, c.rms_eps);
    rms_norm(vk, k, L.k_norm, k, m * Hkv, c.head_dim_k, c.rms_eps);
  }
}

void SequenceImpl::attend(int32_t l, int32_t m, ChunkAngles& angles, float* q, float* k,
                          const float* v, float* att) {
  const ModelConfig& c = m_->cfg();
  const bool sliding = c.layer_sliding[static_cast<size_t>(l)];
  const int32_t H = c.n_heads, Hkv = c.n_kv_heads, dk = c.head_dim_k;
  const int32_t p0 = kv_->size();
  const size_t base = sliding ? 1 : 0;
  std::vector<float>& cs = angles.cos[base];
  std::vector<float>& sn = angles.sin[base];
  if (!angles.have[base]) {
    m_->rope(sliding).angles(p0, m, cs, sn);
    angles.have[base] = true;
  }
  m_->rope(sliding).apply(q, m, H, dk, cs, sn);
  m_->rope(sliding).apply(k, m, Hkv, dk, cs, sn);
  for (size_t i = 0; i < static_cast<size_t>(m) * H * dk; ++i) q[i] *= c.attn_scale;

  kv_->write(l, m, k, v);
  AttentionShape shape{H, Hkv, dk, c.head_dim_v, sliding ? c.sliding_window : 0};
  attention(kv_->view(l, p0 + m), shape, q, m, p0, att);
}

// x += o = att Wo^T (gemma3: RMSNorm'd) for every row of the pass.
void attention_out(const ModelConfig& c, const LayerWeights& L, const vec::Kernels& vk, int32_t m,
                   Scratch& s) {
  const int32_t d = c.d_model;
  linear(L.wo, s.att.data(), m, s.o.data());
  if (c.post_norms) rms_norm(vk, s.o.data(), L.post_attn_norm, s.o.data(), m, d, c.rms_eps);
  vk.add(s.x.data(), s.o.data(), m * d);
}

// x += layer l's gated FFN for every row of the pass.
void ffn_block(const ModelConfig& c, const LayerWeights& L, const vec::Kernels& vk, int32_t m,
               Scratch& s) {
  const int32_t d = c.d_model, F = c.ffn_dim;
  float *x = s.x.data(), *h = s.h.data(), *o = s.o.data(), *gt = s.g.data(), *up = s.u.data();
  rms_norm(vk, x, L.ffn_norm, h, m, d, c.rms_eps);
  project(m, {{&L.w_gate, h, gt}, {&L.w_up, h, up}});
  if (c.ffn_act == FfnActivation::GeluTanh) {
    vk.gelu_mul(gt, up, m * F);
  } else {
    vk.silu_mul(gt, up, m * F);
  }
  linear(L.w_down, gt, m, o);
  if (c.post_norms) rms_norm(vk, o, L.post_ffn_norm, o, m, d, c.rms_eps);
  vk.add(x, o, m * d);
}

// Every chunk's tokens go through the embeddings, norms and linear layers as one [M][...] pass
// (M = the chunks' tokens together); attention runs per chunk over its own sequence's KV. Every
// op is row-wise or per sequence, and matmul's columns equal one-column calls, so a chunk's
// logits are the ones it gets alone.
void forward_chunks(const ModelImpl& model, std::span<const Chunk> chunks, Scratch& s) {
  const ModelConfig& c = model.cfg();
  const ModelWeights& W = model.w();
  const vec::Kernels& vk = vec::vec_kernels();
  const size_t d = static_cast<size_t>(c.d_model);
  const size_t qn = static_cast<size_t>(c.n_heads) * static_cast<size_t>(c.head_dim_k);
  const size_t kn = static_cast<size_t>(c.n_kv_heads) * static_cast<size_t>(c.head_dim_k);
  const size_t vn = static_cast<size_t>(c.n_kv_heads) * static_cast<size_t>(c.head_dim_v);
  const size_t an = static_cast<size_t>(c.n_heads) * static_cast<size_t>(c.head_dim_v);
  int32_t M = 0, logit_rows = 0;
  for (const Chunk& ch : chunks) {
    M += ch.m;
    logit_rows += ch.m - ch.first_logit_row;
  }
  s.reserve(c, M);

  // Embeddings.
  for (size_t i = 0, off = 0; i < chunks.size(); off += static_cast<size_t>(chunks[i].m), ++i) {
    get_rows(W.token_embd, chunks[i].ids, chunks[i].m, s.x.data() + off * d);
  }
  if (c.embed_scale != 1.0f) {
    for (size_t i = 0; i < static_cast<size_t>(M) * d; ++i) s.x[i] *= c.embed_scale;
  }

  // Layers. Attention runs per chunk, the chunks side by side: a decode row's attention over a
  // short context is one task, so one chunk after another would leave the other threads idle
  // through every row of a batched step. (Each chunk touches only its own sequence's KV; its
  // result does not depend on what runs beside it.)
  std::vector<ChunkAngles> angles(chunks.size());
  std::vector<size_t> first_row(chunks.size());
  for (size_t i = 1; i < chunks.size(); ++i) {
    first_row[i] = first_row[i - 1] + static_cast<size_t>(chunks[i - 1].m);
  }
  for (int32_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = W.layers[static_cast<size_t>(l)];
    attention_in(c, L, vk, M, s);
    const auto attend = [&](size_t i) {
      const size_t off = first_row[i];
      chunks[i].seq->attend(l, chunks[i].m, angles[i], s.q.data() + off * qn, s.k.data() + off * kn,
                            s.v.data() + off * vn, s.att.data() + off * an);
    };
    if (chunks.size() == 1) {
      attend(0);
    } else {
      tbb::parallel_for(size_t{0}, chunks.size(), attend);
    }
    attention_out(c, L, vk, M, s);
    ffn_block(c, L, vk, M, s);
  }
  if (logit_rows == 0) return;

  // Logits of the wanted rows: one chunk writes straight to its output; several are gathered
  // (x rows -> o), evaluated together and handed out.
  const size_t V = model.logit_width();
  if (chunks.size() == 1) {
    const Chunk& ch = chunks[0];
    const float* xr = s.x.data() + static_cast<size_t>(ch.first_logit_row) * d;
    rms_norm(vk, xr, W.output_norm, s.h.data(), logit_rows, c.d_model, c.rms_eps);
    linear(W.output, s.h.data(), logit_rows, ch.logits_out);
    return;
  }
  size_t row = 0;
  std::vector<float*> out;  // each wanted row's logits, in its chunk's buffer
  for (size_t i = 0; i < chunks.size(); ++i) {
    const size_t n = static_cast<size_t>(chunks[i].m - chunks[i].first_logit_row);
    const float* xr =
        s.x.data() + (first_row[i] + static_cast<size_t>(chunks[i].first_logit_row)) * d;
    std::copy(xr, xr + n * d, s.o.data() + row * d);
    for (size_t j = 0; j < n; ++j) out.push_back(chunks[i].logits_out + j * V);
    row += n;
  }
  rms_norm(vk, s.o.data(), W.output_norm, s.h.data(), logit_rows, c.d_model, c.rms_eps);
  linear(W.output, s.h.data(), out);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Model

std::unique_ptr<Sequence> Model::new_sequence_with_prefix(std::span<const TokenId> prompt,
                                                          PrefixUse* use) {
  if (use) *use = {.prompt_tokens = static_cast<int32_t>(prompt.size()), .cached_tokens = 0};
  return new_sequence();
}

void Model::forward_batch(std::span<BatchRow> rows) {
  for (BatchRow& r : rows) {
    if (!r.sequence) throw EngineError("forward_batch: a row without a sequence");
    Sequence& q = *r.sequence;
    if (r.logits == RowLogits::All) {
      r.result = q.prefill_all(r.tokens);
    } else if (!r.publish && r.tokens.size() == 1) {
      r.result = q.decode(r.tokens[0]);
    } else {
      r.result = q.prefill(r.tokens);
      if (r.logits == RowLogits::None) r.result = {};
    }
  }
}

void ModelImpl::forward_batch(std::span<BatchRow> rows) {
  // Phase 1: every row is checked before anything is evaluated.
  std::vector<SequenceImpl*> seqs(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string where = "forward_batch: row " + std::to_string(i) + ": ";
    auto* q = dynamic_cast<SequenceImpl*>(rows[i].sequence);
    if (!q || &q->model() != this) {
      throw EngineError(where + "the sequence is not one of this model's (" + file_.name() + ")");
    }
    for (size_t j = 0; j < i; ++j) {
      if (seqs[j] == q) {
        throw EngineError(where + "the same sequence as row " + std::to_string(j) +
                          " (a sequence can take part in a step once)");
      }
    }
    try {
      q->check_eval(rows[i].tokens);
    } catch (const EngineError& e) {
      throw EngineError(where + e.what());
    }
    seqs[i] = q;
  }

  // Phase 2: where each row starts and where its logits go.
  const size_t V = logit_width();
  std::vector<int32_t> p0(rows.size()), done(rows.size(), 0);
  std::vector<std::span<float>> out(rows.size());
  const auto n_of = [&](size_t i) { return static_cast<int32_t>(rows[i].tokens.size()); };
  const auto logit_rows = [&](size_t i) -> size_t {
    if (rows[i].logits == RowLogits::All) return static_cast<size_t>(n_of(i));
    return rows[i].logits == RowLogits::Last ? 1 : 0;
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    p0[i] = seqs[i]->position();
    out[i] = seqs[i]->logits_buffer(logit_rows(i));
  }

  // Phase 3: passes of one chunk per unfinished row (chunks cut as eval cuts them).
  const std::lock_guard<std::mutex> lock(batch_mu_);
  try {
    arena_.execute([&] {
      std::vector<Chunk> chunks;
      std::vector<size_t> which;
      for (;;) {
        chunks.clear();
        which.clear();
        for (size_t i = 0; i < rows.size(); ++i) {
          const int32_t n = n_of(i), at = done[i];
          if (at == n) continue;
          const int32_t mm = chunk_tokens(p0[i] + at, n - at);
          const bool all = rows[i].logits == RowLogits::All;
          const bool last = at + mm == n && rows[i].logits == RowLogits::Last;
          chunks.push_back({seqs[i], rows[i].tokens.data() + at, mm, all ? 0 : (last ? mm - 1 : mm),
                            all ? out[i].data() + static_cast<size_t>(at) * V : out[i].data()});
          which.push_back(i);
        }
        if (chunks.empty()) break;
        forward_chunks(*this, chunks, batch_scratch_);
        for (size_t k = 0; k < chunks.size(); ++k) {
          const size_t i = which[k];
          seqs[i]->commit_chunk(chunks[k].m, p0[i], rows[i].tokens, rows[i].publish);
          done[i] += chunks[k].m;
        }
      }
    });
  } catch (...) {
    for (size_t i = 0; i < rows.size(); ++i) seqs[i]->abandon_eval(p0[i], rows[i].tokens);
    throw;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].result = seqs[i]->finish_eval(rows[i].tokens, logit_rows(i));
  }
}

void ModelImpl::make_pool(const KvGeometry& g, int64_t sequence_blocks) {
  const int64_t budget = opt_.prefix_cache_bytes;
  if (budget == 0) {
    pool_ = std::make_shared<KvPool>(g, sequence_blocks);
    return;
  }
  const int64_t block_bytes = static_cast<int64_t>(KvPool(g, 1).block_bytes());
  const int64_t entry_bytes = block_bytes * g.n_layers;
  if (budget < entry_bytes) {
    throw EngineError("ModelOptions::prefix_cache_bytes " + std::to_string(budget) +
                      " is below one cached block of every layer (" + std::to_string(entry_bytes) +
                      " bytes: " + std::to_string(g.n_layers) + " layers x " +
                      std::to_string(block_bytes) + "); use 0 to turn it off");
  }
  pool_ = std::make_shared<KvPool>(g, sequence_blocks + budget / block_bytes);
  const uint64_t identity =
      std::hash<std::string>{}(file_.name()) ^ static_cast<uint64_t>(w_.total_bytes);
  cache_ = std::make_unique<PrefixCache>(pool_, budget, windows(), opt_.rollback_window, identity);
  pool_->set_reclaimer([c = cache_.get()] { return c->reclaim(); });
}

void ModelImpl::apply_view(const ModelViewSpec& v) {
  const std::string what = file_.name() + " (draft view)";
  if (v.layers < 1 || v.layers > cfg_.n_layers) {
    throw EngineError(what + ": layers = " + std::to_string(v.layers) + " is outside [1, " +
                      std::to_string(cfg_.n_layers) + "]");
  }
  cfg_.n_layers = v.layers;
  cfg_.layer_sliding.resize(static_cast<size_t>(v.layers));
  w_.layers.resize(static_cast<size_t>(v.layers));
  opt_.prefix_cache_bytes = 0;
  // What one decode step reads: the kept layers' matrices and the output rows.
  const auto bytes = [](const WeightView& m) { return static_cast<size_t>(m.rows) * m.row_bytes; };
  w_.total_bytes = 0;
  for (const LayerWeights& L : w_.layers) {
    for (const WeightView* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      w_.total_bytes += bytes(*m);
    }
  }
  if (!v.output_rows.empty()) {
    const WeightView full = w_.output;
    output_copy_.resize(v.output_rows.size() * full.row_bytes);
    for (size_t i = 0; i < v.output_rows.size(); ++i) {
      const TokenId t = v.output_rows[i];
      if (t < 0 || t >= full.rows) {
        throw EngineError(what + ": output row " + std::to_string(t) +
                          " is outside the vocabulary [0, " + std::to_string(full.rows) + ")");
      }
      std::memcpy(
          output_copy_.data() + i * full.row_bytes,
          static_cast<const std::byte*>(full.data) + static_cast<size_t>(t) * full.row_bytes,
          full.row_bytes);
    }
    w_.output.rows = static_cast<int64_t>(v.output_rows.size());
    w_.output.data = output_copy_.data();
  }
  w_.total_bytes += bytes(w_.output);
}

// Regroups every Q8_0 and Q5_0 matrix decode and prefill multiply by (kernels/cpu/grouped.h:
// the same bits in fewer instructions per call). A tied embedding is regrouped once, and get_rows
// reads the lookup from that copy too. The copies share one anonymous buffer beside the mapped
// file, on huge pages where the kernel gives them (kernels/cpu/huge_buffer.h: a step streams
// them all, and small pages cost it a TLB miss and a prefetch restart every 4 KiB); the file's
// pages of those matrices are dropped from the resident set, so RSS stays that of the plain
// weights. Skipped for a type the CPU path has no grouped kernel for (scalar: none). For A/B
// measurements, VSYNTH_GROUPED=0 turns it off and VSYNTH_GROUPED=q8_0 (or q5_0) limits it to
// that type; VSYNTH_HUGE_PAGES=0 keeps the copies on small pages.
void ModelImpl::group_weights() {
  const char* env = std::getenv("VSYNTH_GROUPED");
  const std::string_view only = env != nullptr ? env : "";
  const bool q8 = grouping_wanted(only, DType::Q8_0), q5 = grouping_wanted(only, DType::Q5_0);
  const char* huge_env = std::getenv("VSYNTH_HUGE_PAGES");
  bool huge = true;
  try {
    huge = huge_pages_wanted(huge_env != nullptr ? huge_env : "");
  } catch (const std::invalid_argument& e) {
    throw EngineError(e.what());
  }
  const auto wanted = [&](DType t) { return t == DType::Q8_0 ? q8 : t == DType::Q5_0 && q5; };
  const bool tied = w_.token_embd.data == w_.output.data && w_.token_embd.rows == w_.output.rows;

  // Phase 1: the matrices to regroup and their places in one buffer (64-byte aligned each).
  constexpr size_t kAlign = 64;
  std::vector<WeightView*> todo;
  std::vector<size_t> offset;
  size_t total = 0;
  const auto plan = [&](WeightView& m) {
    if (m.layout != WeightLayout::Plain || m.rows == 0 || !grouping_available(m.type)) return;
    if (!wanted(m.type)) return;
    todo.push_back(&m);
    offset.push_back(total);
    total += (grouped_matrix_bytes(m) + kAlign - 1) / kAlign * kAlign;
  };
  for (LayerWeights& L : w_.layers) {
    for (WeightView* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) plan(*m);
  }
  plan(w_.output);

  // Phase 2: each matrix regrouped into its place. Its file pages leave the resident set as soon
  // as its copy is made, so the copies do not double the weights' memory, during the load
  // either (an untied embedding still reads its own plain rows: it is not regrouped).
  grouped_ = HugeBuffer::allocate(total, huge);
  for (size_t i = 0; i < todo.size(); ++i) {
    WeightView& m = *todo[i];
    const WeightView plain = m;
    m = group_weight_into(plain, grouped_.data() + offset[i]);
    file_.drop_pages({static_cast<const std::byte*>(plain.data),
                      static_cast<size_t>(plain.rows) * plain.row_bytes});
  }
  if (tied) w_.token_embd = w_.output;
  if (w_.output.layout == WeightLayout::Grouped) {
    std::vector<std::byte>().swap(output_copy_);  // a view's gathered rows, now regrouped
  }
}

std::shared_ptr<Model> make_model_view(const std::shared_ptr<const Model>& base,
                                       const ModelViewSpec& spec) {
  const auto* impl = dynamic_cast<const ModelImpl*>(base.get());
  if (!impl) {
    throw EngineError("a draft view needs the CPU engine; this model runs on " + base->backend());
  }
  auto view = std::make_shared<ModelImpl>(impl->reopen(), impl->opt(), &spec);
  view->hold(base);
  return view;
}

std::shared_ptr<Model> Model::load(const std::filesystem::path& path, const ModelOptions& options) {
  return std::make_shared<ModelImpl>(GgufFile::open(path), options);
}

Model::~Model() = default;
Sequence::~Sequence() = default;

const ModelConfig& ModelImpl::config() const {
  return cfg_;
}
const ModelOptions& ModelImpl::options() const {
  return opt_;
}
const Tokenizer& ModelImpl::tokenizer() const {
  return tok_;
}
std::size_t ModelImpl::weight_bytes() const {
  return w_.total_bytes;
}
std::string ModelImpl::backend() const {
  return "cpu (" + std::string(to_string(active_cpu_path())) + ", " + std::to_string(opt_.threads) +
         " threads)";
}

KvStats ModelImpl::kv_stats() const {
  const KvPool& p = *pool_;
  KvStats s;
  s.blocks_used = p.blocks_used();
  s.blocks_capacity = p.capacity_blocks();
  s.bytes_used = s.blocks_used * static_cast<int64_t>(p.block_bytes());
  s.bytes_capacity = s.blocks_capacity * static_cast<int64_t>(p.block_bytes());
  s.block_tokens = p.geometry().block_tokens;
  if (cache_) {
    const PrefixCacheStats c = cache_->stats();
    s.prefix = {.lookups = c.lookups,
                .hits = c.hits,
                .lookup_tokens = c.lookup_tokens,
                .cached_tokens = c.cached_tokens,
                .evictions = c.evictions,
                .bytes = c.bytes,
                .budget_bytes = c.budget_bytes};
  }
  return s;
}

std::unique_ptr<Sequence> ModelImpl::new_sequence() {
  auto self = std::static_pointer_cast<ModelImpl>(shared_from_this());
  return std::make_unique<SequenceImpl>(std::move(self));
}

std::unique_ptr<Sequence> ModelImpl::new_sequence_with_prefix(std::span<const TokenId> prompt,
                                                              PrefixUse* use) {
  const int32_t n = static_cast<int32_t>(prompt.size());
  if (use) *use = {.prompt_tokens = n, .cached_tokens = 0};
  if (!cache_) return new_sequence();
  // A prompt whose blocks cannot all be cached would evict everything and keep nothing.
  const int64_t need = static_cast<int64_t>(n / kBlockTokens) * cfg_.n_layers *
                       static_cast<int64_t>(pool_->block_bytes());
  if (need > cache_->budget_bytes()) {
    throw EngineError(
        "prefix cache: a prompt of " + std::to_string(n) + " tokens needs " + std::to_string(need) +
        " bytes of KV blocks (" + std::to_string(n / kBlockTokens) + " blocks x " +
        std::to_string(cfg_.n_layers) + " layers x " + std::to_string(pool_->block_bytes()) +
        "), over its budget of " + std::to_string(cache_->budget_bytes()) +
        " bytes (ModelOptions::prefix_cache_bytes)");
  }
  auto self = std::static_pointer_cast<ModelImpl>(shared_from_this());
  auto seq = std::make_unique<SequenceImpl>(std::move(self));
  // At least one token is left to evaluate, so the caller's prefill returns the last logits.
  PrefixCache::Found found = cache_->lookup(prompt, std::max(0, n - 1));
  if (use) use->cached_tokens = found.tokens;
  seq->adopt(std::move(found), prompt);
  return seq;
}

}  // namespace vsynth::kernels
