// CudaModel and its Sequence: the forward pass of kernels/engine.cpp on the device (see
// cuda_model.h for the step structure and the differences from the CPU engine). Weight upload is
// in cuda_weights.cpp, the KV pool and activation buffers in cuda_plan.cpp.
#include "kernels/cuda/cuda_model.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_model_impl.h"

namespace vsynth::kernels::cuda {

// A sequence of a CudaModel: its block table and tokens on the host, its KV in the model's pool,
// its last logits pinned on the host (and on the device for sample()).
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

// ---------------------------------------------------------------------------------------------
// Loading

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
  m->plan_kv();
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

// Token ids, positions and n_tables block tables from pinned staging into the step inputs.
void CudaModel::Impl::stage_inputs(int m, int n_tables) {
  cudaStream_t s = stream->get();
  VSYNTH_CUDA_CHECK(cudaMemcpyAsync(d_tok, h_tok, sizeof(int32_t) * m, cudaMemcpyHostToDevice, s));
  VSYNTH_CUDA_CHECK(cudaMemcpyAsync(d_pos, h_pos, sizeof(int32_t) * m, cudaMemcpyHostToDevice, s));
  VSYNTH_CUDA_CHECK(cudaMemcpyAsync(d_tables, h_tables,
                                    sizeof(int32_t) * static_cast<size_t>(n_tables) * max_blocks,
                                    cudaMemcpyHostToDevice, s));
}

// One decode step (one row staged in pinned memory), inputs included, as one graph: captured on
// the first decode of any sequence of this model (every pointer it uses is the model's), replayed
// after.
void CudaModel::Impl::launch_decode_graph() {
  cudaStream_t s = stream->get();
  if (!decode_graph.ready()) {
    VSYNTH_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      stage_inputs(1, 1);
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
}

// The last row's logits sit in `logits` row 0: keep a device copy for sample() and bring one to
// the host. Both are plain stream operations after the step.
void CudaModel::Impl::copy_last_logits(CudaSequence& seq) {
  cudaStream_t s = stream->get();
  const size_t bytes = static_cast<size_t>(cfg.vocab_size) * sizeof(float);
  VSYNTH_CUDA_CHECK(
      cudaMemcpyAsync(seq.d_logits_.data(), logits, bytes, cudaMemcpyDeviceToDevice, s));
  VSYNTH_CUDA_CHECK(
      cudaMemcpyAsync(seq.logits_pinned_.data(), logits, bytes, cudaMemcpyDeviceToHost, s));
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
      if (mm == 1 && !all && copt.use_graphs) {
        launch_decode_graph();
      } else {
        stage_inputs(mm, 1);
        const int first = all ? 0 : (last ? mm - 1 : mm);
        float* out = all ? seq.logits_all_.data() + static_cast<size_t>(done) * V : nullptr;
        forward(mm, nullptr, first, out);
      }
      if (last && !all) copy_last_logits(seq);
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

namespace {

// The batch's sequences, checked: as many as tokens (1..max_batch), each of model m and in the
// batch once, each token in the vocabulary, each sequence short of the context length.
std::vector<CudaSequence*> batch_sequences(const CudaModel::Impl& m,
                                           std::span<Sequence* const> seqs,
                                           std::span<const TokenId> tokens) {
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
  return cs;
}

}  // namespace

// One decode step of n rows staged in pinned memory (row i: table i), then each row's greedy
// token into h_token_out. Logits stay on the device (kLogitRows rows at a time), so no logits
// cross PCIe.
void CudaModel::Impl::batch_greedy_step(int n) {
  cudaStream_t s = stream->get();
  stage_inputs(n, n);
  const size_t V = static_cast<size_t>(cfg.vocab_size);
  forward(n, d_row_table, n, nullptr);  // no logits yet: first = n
  for (int r0 = 0; r0 < n; r0 += kLogitRows) {
    const int rows = std::min(kLogitRows, n - r0);
    linear({{&output, logits}}, h + static_cast<size_t>(r0) * cfg.d_model, rows, cfg.d_model);
    for (int r = 0; r < rows; ++r) {
      cuda::sample(logits + static_cast<size_t>(r) * V, cfg.vocab_size, nullptr, DeviceSampling{},
                   d_token_out + r0 + r, s);
    }
  }
  VSYNTH_CUDA_CHECK(
      cudaMemcpyAsync(h_token_out, d_token_out, sizeof(int32_t) * n, cudaMemcpyDeviceToHost, s));
  VSYNTH_CUDA_CHECK(cudaStreamSynchronize(s));
}

std::vector<TokenId> CudaModel::decode_batch_greedy(std::span<Sequence* const> seqs,
                                                    std::span<const TokenId> tokens) {
  Impl& m = *impl_;
  const std::vector<CudaSequence*> cs = batch_sequences(m, seqs, tokens);
  const int n = static_cast<int>(cs.size());
  std::lock_guard<std::mutex> lock(m.mu);
  VSYNTH_CUDA_CHECK(cudaSetDevice(m.dev));
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
    m.batch_greedy_step(n);
  } catch (...) {
    cudaStreamSynchronize(m.stream->get());
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
