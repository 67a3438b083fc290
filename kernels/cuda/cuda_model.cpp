// CudaModel and its Sequence: the forward pass of kernels/model/engine.cpp on the device (see
// cuda_model.h for the step structure and the differences from the CPU engine).
#include "kernels/cuda/cuda_model.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <utility>

#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/memory.h"
#include "kernels/gguf/reader.h"
#include "kernels/model/weights.h"

namespace vsynth::kernels::cuda {

namespace {

constexpr int kBlockTokens = 32;
constexpr int kMaxChunk = 512;  // prefill chunk, as the CPU engine
constexpr int kLogitRows = 64;  // logits rows per output projection in prefill_all
constexpr int64_t kMaxSlabElems = int64_t{64} << 20;  // fp16 weight slab of the GEMM (128 MiB)

size_t pad256(size_t n) {
  return (n + 255) / 256 * 256;
}

struct DevLayer {
  const float *attn_norm = nullptr, *bq = nullptr, *bk = nullptr, *bv = nullptr;
  const float *q_norm = nullptr, *k_norm = nullptr, *post_attn_norm = nullptr;
  const float *ffn_norm = nullptr, *post_ffn_norm = nullptr;
  DeviceWeight wq, wk, wv, wo, w_gate, w_up, w_down;
};

// Host bookkeeping of the device KV blocks: free list and reference counts (forks share blocks).
class BlockPool {
 public:
  explicit BlockPool(int32_t capacity) : refs_(static_cast<size_t>(capacity), 0) {
    free_.resize(static_cast<size_t>(capacity));
    std::iota(free_.rbegin(), free_.rend(), 0);  // hand out low ids first
  }
  int32_t allocate() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) {
      throw EngineError("CUDA KV pool exhausted: all " + std::to_string(refs_.size()) +
                        " blocks of " + std::to_string(kBlockTokens) +
                        " tokens are in use (raise ModelOptions::kv_pool_tokens)");
    }
    const int32_t id = free_.back();
    free_.pop_back();
    refs_[static_cast<size_t>(id)] = 1;
    return id;
  }
  void retain(int32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    ++refs_[static_cast<size_t>(id)];
  }
  void release(int32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    if (--refs_[static_cast<size_t>(id)] == 0) free_.push_back(id);
  }
  int32_t refcount(int32_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    return refs_[static_cast<size_t>(id)];
  }
  int64_t used() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(refs_.size() - free_.size());
  }
  int64_t capacity() const { return static_cast<int64_t>(refs_.size()); }

 private:
  mutable std::mutex mu_;
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;
};

class CudaSequence;

}  // namespace

struct CudaModel::Impl {
  std::shared_ptr<Model> host;
  ModelConfig cfg;
  ModelOptions opt;
  CudaOptions copt;
  DeviceInfo info;
  int dev = 0;

  std::unique_ptr<Stream> stream;
  DeviceArena weights, kv, act;
  size_t weight_bytes = 0;
  DeviceWeight token_embd, output;
  const float* output_norm = nullptr;
  std::vector<DevLayer> layers;

  KvLayout layout;
  void* pool = nullptr;
  std::unique_ptr<BlockPool> blocks;
  int max_blocks = 0;  // per sequence: context_length / block_tokens, rounded up

  std::unique_ptr<Gemm> gemm;
  int max_rows = 0;  // rows one forward takes: max(kMaxChunk, max_batch)
  float *x = nullptr, *h = nullptr, *o = nullptr, *q = nullptr, *k = nullptr, *v = nullptr;
  float *att = nullptr, *g = nullptr, *u = nullptr, *logits = nullptr;
  void* q8 = nullptr;
  void* attn_scratch = nullptr;
  int decode_splits = 1;
  int32_t *d_tok = nullptr, *d_pos = nullptr, *d_tables = nullptr, *d_row_table = nullptr;
  int32_t* d_token_out = nullptr;
  uint32_t* d_banned = nullptr;
  // Pinned staging: tokens [max_rows], positions [max_rows], tables [max_batch][max_blocks],
  // the sampled tokens [max_batch].
  PinnedBuffer pin;
  int32_t *h_tok = nullptr, *h_pos = nullptr, *h_tables = nullptr, *h_token_out = nullptr;
  std::vector<uint32_t> banned_host;

  GraphExec decode_graph;
  std::mutex mu;  // one step at a time on the stream and the activation buffers

  void upload(const std::filesystem::path& path);
  void plan_activations();
  int splits_for(int m) const;
  void linear(std::initializer_list<std::pair<const DeviceWeight*, float*>> outs, const float* in,
              int m, int64_t cols);
  // Enqueues the forward pass of m rows already staged in d_tok / d_pos / d_tables; logits of
  // rows [first, m) go to `logits_out` (host, may be null: none) or stay in `logits` (device)
  // for m - first <= kLogitRows when logits_out is null.
  void forward(int m, const int32_t* row_table, int first, float* logits_out);
  void stage(const CudaSequence& seq, const TokenId* ids, int m, int32_t p0);
  void prepare_blocks(CudaSequence& seq, int32_t p0, int32_t n);
  std::span<const float> eval(CudaSequence& seq, std::span<const TokenId> tokens, bool all);
  void set_banned(const TokenMask* mask);
};

namespace {

class CudaSequence final : public Sequence {
 public:
  CudaSequence(std::shared_ptr<CudaModel> owner, CudaModel::Impl& m)
      : owner_(std::move(owner)),
        m_(m),
        table_(static_cast<size_t>(m.max_blocks), -1),
        logits_pinned_(static_cast<size_t>(m.cfg.vocab_size) * sizeof(float)),
        d_logits_(static_cast<size_t>(m.cfg.vocab_size) * sizeof(float), "sequence logits") {}
  ~CudaSequence() override {
    for (int32_t id : table_) {
      if (id >= 0) m_.blocks->release(id);
    }
  }

  std::span<const float> prefill(std::span<const TokenId> t) override {
    return m_.eval(*this, t, false);
  }
  std::span<const float> prefill_all(std::span<const TokenId> t) override {
    return m_.eval(*this, t, true);
  }
  std::span<const float> decode(TokenId t) override { return m_.eval(*this, {&t, 1}, false); }
  int32_t position() const override { return static_cast<int32_t>(tokens_.size()); }
  std::span<const TokenId> tokens() const override { return tokens_; }
  std::span<const float> last_logits() const override {
    const size_t V = static_cast<size_t>(m_.cfg.vocab_size);
    if (logits_rows_ == 0) return {};
    if (all_mode_) return {logits_all_.data() + (logits_rows_ - 1) * V, V};
    return {logits_pinned_.as<float>(), V};
  }
  void rollback(int32_t pos) override {
    if (pos < 0 || pos > position()) {
      throw EngineError("rollback to " + std::to_string(pos) + ": valid positions are 0.." +
                        std::to_string(position()));
    }
    const int32_t keep = (pos + kBlockTokens - 1) / kBlockTokens;
    for (size_t i = static_cast<size_t>(keep); i < table_.size(); ++i) {
      if (table_[i] >= 0) m_.blocks->release(table_[i]);
      table_[i] = -1;
    }
    tokens_.resize(static_cast<size_t>(pos));
    logits_rows_ = 0;
    device_logits_valid_ = false;
  }
  int32_t min_rollback_position() const override { return 0; }
  std::unique_ptr<Sequence> fork() const override {
    auto s = std::make_unique<CudaSequence>(owner_, m_);
    for (size_t i = 0; i < table_.size(); ++i) {
      s->table_[i] = table_[i];
      if (table_[i] >= 0) m_.blocks->retain(table_[i]);
    }
    s->tokens_ = tokens_;
    if (logits_rows_ > 0) {
      const std::span<const float> last = last_logits();
      std::memcpy(s->logits_pinned_.data(), last.data(), last.size_bytes());
      s->logits_rows_ = 1;
      s->all_mode_ = false;
    }
    if (device_logits_valid_) {
      std::lock_guard<std::mutex> lock(m_.mu);
      VSYNTH_CUDA_CHECK(cudaSetDevice(m_.dev));
      VSYNTH_CUDA_CHECK(cudaMemcpyAsync(s->d_logits_.data(), d_logits_.data(), d_logits_.size(),
                                        cudaMemcpyDeviceToDevice, m_.stream->get()));
      m_.stream->synchronize();
      s->device_logits_valid_ = true;
    }
    return s;
  }
  int64_t kv_bytes() const override {
    int64_t n = 0;
    for (int32_t id : table_) n += id >= 0 ? 1 : 0;
    return n * static_cast<int64_t>(m_.layout.block_bytes);
  }
  const Model& model() const override { return *owner_; }

  std::shared_ptr<CudaModel> owner_;
  CudaModel::Impl& m_;
  std::vector<int32_t> table_;  // block id per block index, -1 = none
  std::vector<TokenId> tokens_;
  PinnedBuffer logits_pinned_;     // last row (prefill / decode)
  std::vector<float> logits_all_;  // every row (prefill_all)
  size_t logits_rows_ = 0;
  bool all_mode_ = false;
  DeviceBuffer d_logits_;  // last row on the device, for CudaModel::sample
  bool device_logits_valid_ = false;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Loading

void CudaModel::Impl::upload(const std::filesystem::path& path) {
  const GgufFile file = GgufFile::open(path);
  const ModelWeights hw = bind_weights(file, cfg);
  // Pass 1 sizes the arena, pass 2 copies (the host data stays mapped until the copies finish).
  std::vector<std::pair<const void*, size_t>> items;
  const auto mat = [&](const WeightView& w) { items.emplace_back(w.data, w.row_bytes * w.rows); };
  const auto vec = [&](const float* p, int64_t n) {
    if (p != nullptr) items.emplace_back(p, static_cast<size_t>(n) * sizeof(float));
  };
  const int64_t d = cfg.d_model, qn = int64_t{cfg.n_heads} * cfg.head_dim_k;
  const int64_t kn = int64_t{cfg.n_kv_heads} * cfg.head_dim_k;
  const int64_t vn = int64_t{cfg.n_kv_heads} * cfg.head_dim_v;
  mat(hw.token_embd);
  if (!cfg.tied_output) mat(hw.output);
  vec(hw.output_norm, d);
  for (const LayerWeights& L : hw.layers) {
    vec(L.attn_norm, d);
    vec(L.bq, qn);
    vec(L.bk, kn);
    vec(L.bv, vn);
    vec(L.q_norm, cfg.head_dim_k);
    vec(L.k_norm, cfg.head_dim_k);
    vec(L.post_attn_norm, d);
    vec(L.ffn_norm, d);
    vec(L.post_ffn_norm, d);
    for (const WeightView* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) mat(*w);
  }
  size_t total = 0;
  for (const auto& it : items) total += pad256(it.second);
  weights = DeviceArena(total, "weights");
  std::map<const void*, void*> placed;
  for (const auto& [src, bytes] : items) {
    void* dst = weights.allocate(bytes, "weights");
    VSYNTH_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    placed[src] = dst;
    weight_bytes += bytes;
  }
  const auto dmat = [&](const WeightView& w) {
    DeviceWeight dw;
    dw.type = w.type;
    dw.rows = w.rows;
    dw.cols = w.cols;
    dw.row_bytes = w.row_bytes;
    dw.data = placed.at(w.data);
    return dw;
  };
  const auto dvec = [&](const float* p) -> const float* {
    return p == nullptr ? nullptr : static_cast<const float*>(placed.at(p));
  };
  token_embd = dmat(hw.token_embd);
  output = cfg.tied_output ? token_embd : dmat(hw.output);
  output_norm = dvec(hw.output_norm);
  layers.resize(hw.layers.size());
  for (size_t l = 0; l < hw.layers.size(); ++l) {
    const LayerWeights& L = hw.layers[l];
    DevLayer& D = layers[l];
    D.attn_norm = dvec(L.attn_norm);
    D.bq = dvec(L.bq);
    D.bk = dvec(L.bk);
    D.bv = dvec(L.bv);
    D.q_norm = dvec(L.q_norm);
    D.k_norm = dvec(L.k_norm);
    D.post_attn_norm = dvec(L.post_attn_norm);
    D.ffn_norm = dvec(L.ffn_norm);
    D.post_ffn_norm = dvec(L.post_ffn_norm);
    D.wq = dmat(L.wq);
    D.wk = dmat(L.wk);
    D.wv = dmat(L.wv);
    D.wo = dmat(L.wo);
    D.w_gate = dmat(L.w_gate);
    D.w_up = dmat(L.w_up);
    D.w_down = dmat(L.w_down);
  }
}

int CudaModel::Impl::splits_for(int m) const {
  // Enough (row, head, split) blocks to cover every SM about twice.
  const int units = m * cfg.n_heads;
  const int want = (2 * std::max(1, info.sm_count) + units - 1) / units;
  return std::clamp(want, 1, decode_splits);
}

void CudaModel::Impl::plan_activations() {
  const int64_t d = cfg.d_model, F = cfg.ffn_dim, V = cfg.vocab_size;
  const int64_t qn = int64_t{cfg.n_heads} * cfg.head_dim_k;
  const int64_t kn = int64_t{cfg.n_kv_heads} * cfg.head_dim_k;
  const int64_t an = int64_t{cfg.n_heads} * cfg.head_dim_v;
  const int64_t max_cols = std::max({d, F, an});
  max_rows = std::max(kMaxChunk, copt.max_batch);
  decode_splits = std::clamp((opt.context_length + 255) / 256, 1, 32);
  size_t attn = 0;
  for (int m = 1; m <= max_rows; ++m) {
    attn = std::max(attn, attention_scratch_bytes(m, cfg.n_heads, cfg.head_dim_v, splits_for(m)));
  }
  int64_t largest = 0;
  for (const DevLayer& L : layers) {
    for (const DeviceWeight* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      largest = std::max(largest, w->rows * w->cols);
    }
  }
  largest = std::max(largest, output.rows * output.cols);
  const int64_t slab = std::min(largest, std::max(kMaxSlabElems, max_cols));
  const size_t R = static_cast<size_t>(max_rows), f = sizeof(float);
  const size_t buffers[] = {
      R * d * f,
      R * d * f,
      R * d * f,
      R * qn * f,
      R * kn * f,
      R * kn * f,
      R * an * f,
      R * F * f,
      R * F * f,
      static_cast<size_t>(kLogitRows) * V * f,
      q8_bytes(max_cols, kGemvMaxRows),
      attn,
      4 * R * sizeof(int32_t) + static_cast<size_t>(copt.max_batch) * max_blocks * 4,
      static_cast<size_t>((V + 31) / 32) * 4,
      static_cast<size_t>(slab) * 2,
      R * max_cols * 2,
      size_t{32} << 20};
  size_t total = 0;
  for (size_t b : buffers) total += pad256(b) + 256;
  act = DeviceArena(total, "activations");
  x = act.allocate_n<float>(R * d, "activations");
  h = act.allocate_n<float>(R * d, "activations");
  o = act.allocate_n<float>(R * d, "activations");
  q = act.allocate_n<float>(R * qn, "activations");
  k = act.allocate_n<float>(R * kn, "activations");
  v = act.allocate_n<float>(R * kn, "activations");
  att = act.allocate_n<float>(R * an, "activations");
  g = act.allocate_n<float>(R * F, "activations");
  u = act.allocate_n<float>(R * F, "activations");
  logits = act.allocate_n<float>(static_cast<size_t>(kLogitRows) * V, "logits");
  q8 = act.allocate(q8_bytes(max_cols, kGemvMaxRows), "activations");
  attn_scratch = attn > 0 ? act.allocate(attn, "attention splits") : nullptr;
  d_tok = act.allocate_n<int32_t>(R, "step inputs");
  d_pos = act.allocate_n<int32_t>(R, "step inputs");
  d_row_table = act.allocate_n<int32_t>(R, "step inputs");
  d_token_out = act.allocate_n<int32_t>(R, "step inputs");
  d_tables =
      act.allocate_n<int32_t>(static_cast<size_t>(copt.max_batch) * max_blocks, "block tables");
  d_banned = act.allocate_n<uint32_t>(static_cast<size_t>((V + 31) / 32), "token mask");
  gemm = std::make_unique<Gemm>(act, slab, static_cast<int64_t>(R) * max_cols);

  pin = PinnedBuffer((3 * R + static_cast<size_t>(copt.max_batch) * max_blocks) * sizeof(int32_t));
  h_tok = pin.as<int32_t>();
  h_pos = h_tok + R;
  h_token_out = h_pos + R;
  h_tables = h_token_out + R;
  // Row i of a batch reads table i.
  std::vector<int32_t> iota(R);
  std::iota(iota.begin(), iota.end(), 0);
  VSYNTH_CUDA_CHECK(
      cudaMemcpy(d_row_table, iota.data(), R * sizeof(int32_t), cudaMemcpyHostToDevice));
  banned_host.assign(static_cast<size_t>((V + 31) / 32), 0u);
}

CudaModel::CudaModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaModel::~CudaModel() = default;

std::shared_ptr<CudaModel> CudaModel::load(const std::filesystem::path& path,
                                           const ModelOptions& options, const CudaOptions& cuda) {
  auto m = std::make_unique<Impl>();
  m->copt = cuda;
  if (cuda.max_batch < 1 || cuda.max_batch > 1024) {
    throw CudaError("CudaOptions::max_batch " + std::to_string(cuda.max_batch) +
                    " (valid 1..1024)");
  }
  m->dev = require_device(cuda.device);
  for (const DeviceInfo& d : query_devices().devices) {
    if (d.index == m->dev) m->info = d;
  }
  m->host = Model::load(path, options);
  m->cfg = m->host->config();
  m->opt = m->host->options();
  const ModelConfig& c = m->cfg;
  if (c.head_dim_k != c.head_dim_v) {
    throw CudaError(path.string() + ": key_length " + std::to_string(c.head_dim_k) +
                    " differs from value_length " + std::to_string(c.head_dim_v) +
                    "; the CUDA backend needs them equal (use device: cpu)");
  }
  VSYNTH_CUDA_CHECK(cudaSetDevice(m->dev));
  m->stream = std::make_unique<Stream>();
  m->layout = make_kv_layout(m->opt.kv_type, c.n_layers, c.n_kv_heads, c.head_dim_k, kBlockTokens);
  m->upload(path);
  m->max_blocks = (m->opt.context_length + kBlockTokens - 1) / kBlockTokens;
  const int64_t capacity = (m->opt.kv_pool_tokens + kBlockTokens - 1) / kBlockTokens;
  if (capacity > INT32_MAX) throw CudaError("kv_pool_tokens is too large for the CUDA backend");
  m->kv = DeviceArena(static_cast<size_t>(capacity) * m->layout.block_bytes, "kv");
  m->pool = m->kv.allocate(static_cast<size_t>(capacity) * m->layout.block_bytes, "kv");
  m->blocks = std::make_unique<BlockPool>(static_cast<int32_t>(capacity));
  m->plan_activations();
  return std::shared_ptr<CudaModel>(new CudaModel(std::move(m)));
}

const Model& CudaModel::host() const {
  return *impl_->host;
}
const ModelConfig& CudaModel::config() const {
  return impl_->cfg;
}
const ModelOptions& CudaModel::options() const {
  return impl_->opt;
}
const Tokenizer& CudaModel::tokenizer() const {
  return impl_->host->tokenizer();
}
const DeviceInfo& CudaModel::device() const {
  return impl_->info;
}
std::size_t CudaModel::weight_bytes() const {
  return impl_->weight_bytes;
}

KvStats CudaModel::kv_stats() const {
  KvStats s;
  s.blocks_used = impl_->blocks->used();
  s.blocks_capacity = impl_->blocks->capacity();
  s.bytes_used = s.blocks_used * static_cast<int64_t>(impl_->layout.block_bytes);
  s.bytes_capacity = s.blocks_capacity * static_cast<int64_t>(impl_->layout.block_bytes);
  s.block_tokens = kBlockTokens;
  return s;
}

std::string CudaModel::backend() const {
  return "cuda:" + std::to_string(impl_->dev) + " " + impl_->info.name;
}

std::string CudaModel::memory_report() const {
  const Impl& m = *impl_;
  return "cuda:" + std::to_string(m.dev) + " " + m.info.name + ": weights [" + m.weights.report() +
         "], kv [" + m.kv.report() + "], activations [" + m.act.report() + "]";
}

std::unique_ptr<Sequence> CudaModel::new_sequence() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  VSYNTH_CUDA_CHECK(cudaSetDevice(impl_->dev));
  return std::make_unique<CudaSequence>(std::static_pointer_cast<CudaModel>(shared_from_this()),
                                        *impl_);
}

// ---------------------------------------------------------------------------------------------
// The forward pass

void CudaModel::Impl::linear(std::initializer_list<std::pair<const DeviceWeight*, float*>> outs,
                             const float* in, int m, int64_t cols) {
  cudaStream_t s = stream->get();
  if (m > kGemvMaxRows) {
    for (const auto& [w, y] : outs) gemm->run(*w, in, m, y, s);
    return;
  }
  bool quantized = false;
  for (const auto& [w, y] : outs) {
    (void)y;
    quantized |= w->type != DType::F32 && w->type != DType::F16 && w->type != DType::BF16;
  }
  if (quantized) quantize_q8(in, m, cols, q8, s);  // once for every projection of this input
  for (const auto& [w, y] : outs) gemv(*w, in, q8, m, y, s);
}

void CudaModel::Impl::forward(int m, const int32_t* row_table, int first, float* logits_out) {
  const ModelConfig& c = cfg;
  cudaStream_t s = stream->get();
  const int d = c.d_model, H = c.n_heads, Hkv = c.n_kv_heads, dk = c.head_dim_k;
  const int F = c.ffn_dim;
  const int64_t an = int64_t{H} * c.head_dim_v;
  const KvRows rows{d_tables, max_blocks, row_table, d_pos};
  const RopeParams rope_full{c.rope_kind, c.rope_dims, c.rope_base, c.rope_freq_scale};
  const RopeParams rope_slide{c.rope_kind, c.rope_dims, c.rope_base_sliding, c.rope_freq_scale};
  const int splits = splits_for(m);

  get_rows(token_embd, d_tok, m, c.embed_scale, x, s);
  rms_norm(x, layers[0].attn_norm, h, m, d, c.rms_eps, s);
  for (int l = 0; l < c.n_layers; ++l) {
    const DevLayer& L = layers[static_cast<size_t>(l)];
    const bool sliding = c.layer_sliding[static_cast<size_t>(l)];
    linear({{&L.wq, q}, {&L.wk, k}, {&L.wv, v}}, h, m, d);
    if (c.qkv_bias) {
      add_bias(q, L.bq, m, H * dk, s);
      add_bias(k, L.bk, m, Hkv * dk, s);
      add_bias(v, L.bv, m, Hkv * c.head_dim_v, s);
    }
    if (c.qk_norm) {
      rms_norm(q, L.q_norm, q, m * H, dk, c.rms_eps, s);
      rms_norm(k, L.k_norm, k, m * Hkv, dk, c.rms_eps, s);
    }
    rope(q, d_pos, m, H, dk, sliding ? rope_slide : rope_full, c.attn_scale, s);
    rope(k, d_pos, m, Hkv, dk, sliding ? rope_slide : rope_full, 1.0f, s);
    kv_write(layout, pool, l, rows, k, v, m, s);
    attention(layout, pool, l, rows, q, m, H, sliding ? c.sliding_window : 0, splits, attn_scratch,
              att, s);
    linear({{&L.wo, o}}, att, m, an);
    add_rms_norm(x, o, L.post_attn_norm, L.ffn_norm, h, m, d, c.rms_eps, s);
    linear({{&L.w_gate, g}, {&L.w_up, u}}, h, m, d);
    gated_act(g, u, int64_t{m} * F, c.ffn_act, s);
    linear({{&L.w_down, o}}, g, m, F);
    const float* next =
        l + 1 < c.n_layers ? layers[static_cast<size_t>(l) + 1].attn_norm : output_norm;
    add_rms_norm(x, o, L.post_ffn_norm, next, h, m, d, c.rms_eps, s);
  }
  // h now holds the final norm of every row; project the wanted rows.
  const size_t V = static_cast<size_t>(c.vocab_size);
  for (int r0 = first; r0 < m; r0 += kLogitRows) {
    const int n = std::min(kLogitRows, m - r0);
    linear({{&output, logits}}, h + static_cast<size_t>(r0) * d, n, d);
    if (logits_out != nullptr) {
      VSYNTH_CUDA_CHECK(cudaMemcpyAsync(logits_out + static_cast<size_t>(r0 - first) * V, logits,
                                        static_cast<size_t>(n) * V * sizeof(float),
                                        cudaMemcpyDeviceToHost, s));
      // The next slab overwrites `logits`: the copy must finish first (same stream: ordered).
    }
  }
}

// Blocks for positions [p0, p0 + n): allocate missing ones, copy shared ones (copy-on-write).
void CudaModel::Impl::prepare_blocks(CudaSequence& seq, int32_t p0, int32_t n) {
  const int32_t b0 = p0 / kBlockTokens, b1 = (p0 + n - 1) / kBlockTokens;
  for (int32_t b = b0; b <= b1; ++b) {
    int32_t& id = seq.table_[static_cast<size_t>(b)];
    if (id < 0) {
      id = blocks->allocate();
    } else if (blocks->refcount(id) > 1) {
      const int32_t fresh = blocks->allocate();
      auto* base = static_cast<std::byte*>(pool);
      VSYNTH_CUDA_CHECK(cudaMemcpyAsync(base + static_cast<size_t>(fresh) * layout.block_bytes,
                                        base + static_cast<size_t>(id) * layout.block_bytes,
                                        layout.block_bytes, cudaMemcpyDeviceToDevice,
                                        stream->get()));
      blocks->release(id);
      id = fresh;
    }
  }
}

// Token ids and positions into pinned staging, the sequence's table into table row 0.
void CudaModel::Impl::stage(const CudaSequence& seq, const TokenId* ids, int m, int32_t p0) {
  for (int i = 0; i < m; ++i) {
    h_tok[i] = ids[i];
    h_pos[i] = p0 + i;
  }
  std::copy(seq.table_.begin(), seq.table_.end(), h_tables);
}

std::span<const float> CudaModel::Impl::eval(CudaSequence& seq, std::span<const TokenId> tokens,
                                             bool all) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  if (n == 0) throw EngineError("prefill: no tokens to evaluate");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= cfg.vocab_size) {
      throw EngineError("token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                        " is outside the vocabulary [0, " + std::to_string(cfg.vocab_size) + ")");
    }
  }
  const int32_t p0 = seq.position();
  if (static_cast<int64_t>(p0) + n > opt.context_length) {
    throw EngineError("sequence would reach " + std::to_string(int64_t{p0} + n) +
                      " positions, past the context length " + std::to_string(opt.context_length) +
                      " (ModelOptions::context_length)");
  }
  std::lock_guard<std::mutex> lock(mu);
  VSYNTH_CUDA_CHECK(cudaSetDevice(dev));
  cudaStream_t s = stream->get();
  const size_t V = static_cast<size_t>(cfg.vocab_size);
  seq.logits_rows_ = 0;
  seq.device_logits_valid_ = false;
  if (all) seq.logits_all_.resize(static_cast<size_t>(n) * V);
  try {
    prepare_blocks(seq, p0, n);
    for (int32_t done = 0; done < n;) {
      const int32_t mm = std::min(kMaxChunk, n - done);
      const bool last = done + mm == n;
      stage(seq, tokens.data() + done, mm, p0 + done);
      const size_t tbytes = static_cast<size_t>(max_blocks) * sizeof(int32_t);
      const bool graph = mm == 1 && !all && copt.use_graphs;
      const auto enqueue_inputs = [&] {
        VSYNTH_CUDA_CHECK(
            cudaMemcpyAsync(d_tok, h_tok, sizeof(int32_t) * mm, cudaMemcpyHostToDevice, s));
        VSYNTH_CUDA_CHECK(
            cudaMemcpyAsync(d_pos, h_pos, sizeof(int32_t) * mm, cudaMemcpyHostToDevice, s));
        VSYNTH_CUDA_CHECK(cudaMemcpyAsync(d_tables, h_tables, tbytes, cudaMemcpyHostToDevice, s));
      };
      if (graph) {
        // The whole step, inputs included, as one graph: captured on the first decode of any
        // sequence of this model (every pointer it uses is the model's), replayed after.
        if (!decode_graph.ready()) {
          VSYNTH_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
          try {
            enqueue_inputs();
            forward(1, nullptr, 0, nullptr);
          } catch (...) {
            cudaGraph_t broken = nullptr;
            cudaStreamEndCapture(s, &broken);
            if (broken != nullptr) cudaGraphDestroy(broken);
            throw;
          }
          decode_graph.end_capture(s);
        }
        decode_graph.launch(s);
      } else {
        enqueue_inputs();
        const int first = all ? 0 : (last ? mm - 1 : mm);
        float* out = all ? seq.logits_all_.data() + static_cast<size_t>(done) * V : nullptr;
        forward(mm, nullptr, first, out);
      }
      if (last && !all) {
        // The last row's logits sit in `logits` row 0: keep a device copy for sample() and
        // bring one to the host. Both are plain stream operations after the step.
        VSYNTH_CUDA_CHECK(cudaMemcpyAsync(seq.d_logits_.data(), logits, V * sizeof(float),
                                          cudaMemcpyDeviceToDevice, s));
        VSYNTH_CUDA_CHECK(cudaMemcpyAsync(seq.logits_pinned_.data(), logits, V * sizeof(float),
                                          cudaMemcpyDeviceToHost, s));
      }
      // Pinned staging is reused by the next chunk: wait for this one.
      VSYNTH_CUDA_CHECK(cudaStreamSynchronize(s));
      done += mm;
    }
  } catch (...) {
    cudaStreamSynchronize(s);
    cudaGetLastError();
    seq.rollback(p0);  // frees blocks allocated for the failed positions
    throw;
  }
  seq.tokens_.insert(seq.tokens_.end(), tokens.begin(), tokens.end());
  seq.all_mode_ = all;
  seq.logits_rows_ = all ? static_cast<size_t>(n) : 1;
  seq.device_logits_valid_ = !all;
  if (all) return {seq.logits_all_.data(), seq.logits_all_.size()};
  return {seq.logits_pinned_.as<float>(), V};
}

void CudaModel::Impl::set_banned(const TokenMask* mask) {
  std::fill(banned_host.begin(), banned_host.end(), 0u);
  const auto check = [&](TokenId t) {
    if (t < 0 || t >= cfg.vocab_size) {
      throw SamplerError("mask token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                         std::to_string(cfg.vocab_size) + ")");
    }
    return static_cast<size_t>(t);
  };
  if (mask->allowed) {
    std::fill(banned_host.begin(), banned_host.end(), ~0u);
    for (TokenId t : *mask->allowed) {
      const size_t i = check(t);
      banned_host[i / 32] &= ~(1u << (i % 32));
    }
  }
  for (TokenId t : mask->banned) {
    const size_t i = check(t);
    banned_host[i / 32] |= 1u << (i % 32);
  }
  VSYNTH_CUDA_CHECK(cudaMemcpyAsync(d_banned, banned_host.data(),
                                    banned_host.size() * sizeof(uint32_t), cudaMemcpyHostToDevice,
                                    stream->get()));
}

TokenId CudaModel::sample(const Sequence& seq, const DeviceSampling& p, const TokenMask* mask) {
  const auto* cs = dynamic_cast<const CudaSequence*>(&seq);
  if (cs == nullptr || &cs->m_ != impl_.get()) {
    throw EngineError("CudaModel::sample: the sequence does not belong to this model");
  }
  if (!cs->device_logits_valid_) {
    throw EngineError(
        "CudaModel::sample: the sequence has no logits on the device (evaluate a token with "
        "prefill or decode first; prefill_all keeps them on the host only)");
  }
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  VSYNTH_CUDA_CHECK(cudaSetDevice(m.dev));
  const bool masked = mask != nullptr && !mask->unconstrained();
  if (masked) m.set_banned(mask);
  cuda::sample(cs->d_logits_.as<float>(), m.cfg.vocab_size, masked ? m.d_banned : nullptr, p,
               m.d_token_out, m.stream->get());
  VSYNTH_CUDA_CHECK(cudaMemcpyAsync(m.h_token_out, m.d_token_out, sizeof(int32_t),
                                    cudaMemcpyDeviceToHost, m.stream->get()));
  m.stream->synchronize();
  return m.h_token_out[0] < 0 ? kNoToken : m.h_token_out[0];
}

std::vector<TokenId> CudaModel::decode_batch_greedy(std::span<Sequence* const> seqs,
                                                    std::span<const TokenId> tokens) {
  Impl& m = *impl_;
  const int n = static_cast<int>(seqs.size());
  if (n == 0 || seqs.size() != tokens.size() || n > m.copt.max_batch) {
    throw EngineError("decode_batch_greedy: " + std::to_string(seqs.size()) + " sequences and " +
                      std::to_string(tokens.size()) +
                      " tokens (need the same count, 1..CudaOptions::max_batch = " +
                      std::to_string(m.copt.max_batch) + ")");
  }
  std::vector<CudaSequence*> cs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    cs[static_cast<size_t>(i)] = dynamic_cast<CudaSequence*>(seqs[static_cast<size_t>(i)]);
    if (cs[static_cast<size_t>(i)] == nullptr || &cs[static_cast<size_t>(i)]->m_ != &m) {
      throw EngineError("decode_batch_greedy: sequence " + std::to_string(i) +
                        " does not belong to this model");
    }
    for (int j = 0; j < i; ++j) {
      if (cs[static_cast<size_t>(j)] == cs[static_cast<size_t>(i)]) {
        throw EngineError("decode_batch_greedy: sequence " + std::to_string(i) +
                          " appears twice in the batch");
      }
    }
    const TokenId t = tokens[static_cast<size_t>(i)];
    if (t < 0 || t >= m.cfg.vocab_size) {
      throw EngineError("decode_batch_greedy: token id " + std::to_string(t) + " at index " +
                        std::to_string(i) + " is outside the vocabulary");
    }
    if (cs[static_cast<size_t>(i)]->position() + 1 > m.opt.context_length) {
      throw EngineError("decode_batch_greedy: sequence " + std::to_string(i) +
                        " is at the context length " + std::to_string(m.opt.context_length));
    }
  }
  std::lock_guard<std::mutex> lock(m.mu);
  VSYNTH_CUDA_CHECK(cudaSetDevice(m.dev));
  cudaStream_t s = m.stream->get();
  int prepared = 0;
  try {
    for (; prepared < n; ++prepared) {
      CudaSequence& q = *cs[static_cast<size_t>(prepared)];
      m.prepare_blocks(q, q.position(), 1);
    }
    for (int i = 0; i < n; ++i) {
      const CudaSequence& q = *cs[static_cast<size_t>(i)];
      m.h_tok[i] = tokens[static_cast<size_t>(i)];
      m.h_pos[i] = q.position();
      std::copy(q.table_.begin(), q.table_.end(),
                m.h_tables + static_cast<size_t>(i) * m.max_blocks);
    }
    VSYNTH_CUDA_CHECK(
        cudaMemcpyAsync(m.d_tok, m.h_tok, sizeof(int32_t) * n, cudaMemcpyHostToDevice, s));
    VSYNTH_CUDA_CHECK(
        cudaMemcpyAsync(m.d_pos, m.h_pos, sizeof(int32_t) * n, cudaMemcpyHostToDevice, s));
    VSYNTH_CUDA_CHECK(cudaMemcpyAsync(m.d_tables, m.h_tables,
                                      sizeof(int32_t) * static_cast<size_t>(n) * m.max_blocks,
                                      cudaMemcpyHostToDevice, s));
    // Logits of all n rows stay on the device (n <= kLogitRows at a time); argmax per row.
    const size_t V = static_cast<size_t>(m.cfg.vocab_size);
    m.forward(n, m.d_row_table, n, nullptr);  // no logits yet: first = n
    for (int r0 = 0; r0 < n; r0 += kLogitRows) {
      const int rows = std::min(kLogitRows, n - r0);
      m.linear({{&m.output, m.logits}}, m.h + static_cast<size_t>(r0) * m.cfg.d_model, rows,
               m.cfg.d_model);
      for (int r = 0; r < rows; ++r) {
        cuda::sample(m.logits + static_cast<size_t>(r) * V, m.cfg.vocab_size, nullptr,
                     DeviceSampling{}, m.d_token_out + r0 + r, s);
      }
    }
    VSYNTH_CUDA_CHECK(cudaMemcpyAsync(m.h_token_out, m.d_token_out, sizeof(int32_t) * n,
                                      cudaMemcpyDeviceToHost, s));
    VSYNTH_CUDA_CHECK(cudaStreamSynchronize(s));
  } catch (...) {
    cudaStreamSynchronize(s);
    cudaGetLastError();
    for (int i = 0; i < prepared && i < n; ++i) {
      CudaSequence& q = *cs[static_cast<size_t>(i)];
      q.rollback(q.position());
    }
    throw;
  }
  std::vector<TokenId> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    CudaSequence& q = *cs[static_cast<size_t>(i)];
    q.tokens_.push_back(tokens[static_cast<size_t>(i)]);
    q.logits_rows_ = 0;
    q.device_logits_valid_ = false;
    out[static_cast<size_t>(i)] = m.h_token_out[i];
  }
  return out;
}

}  // namespace vsynth::kernels::cuda
