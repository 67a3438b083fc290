#include "kernels/encoder/bert.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "base/hash.h"
#include "kernels/cpu/matvec.h"
#include "kernels/cpu/vec_kernels.h"
#include "kernels/encoder/bert_config.h"
#include "kernels/encoder/bert_weights.h"
#include "kernels/encoder/gemm.h"

namespace vsynth::kernels {

namespace {

namespace fs = std::filesystem;
using encoder_detail::BertLayer;
using encoder_detail::BertWeights;
using encoder_detail::LayerNormParams;
using encoder_detail::Linear;
using encoder_detail::Panels;

// Bumped when the forward pass changes what it computes, so that caches keyed by the
// fingerprint are invalidated.
// 2: F32 linears through the packed GEMM (one FMA chain per output), bias fused, attention
// scale folded into the keys, GELU's erf by a rational approximation.
constexpr std::string_view kForwardVersion = "vsynth-bert-forward-2";

// ---- Fingerprint: FNV-1a (64 bit) over what determines an embedding ----

struct Fnv1a {
  uint64_t h = base::kFnv1a64Offset;
  void add(std::string_view bytes) {
    h = base::fnv1a64(bytes, h);
    add_separator();
  }
  // Fields are length-delimited by a byte that the decimal/hex content never holds.
  void add_separator() {
    const unsigned char sep = 0xffu;
    h = base::fnv1a64_bytes(&sep, 1, h);
  }
  std::string hex() const {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s(16, '0');
    for (int i = 0; i < 16; ++i) s[15 - i] = kDigits[(h >> (4 * i)) & 0xf];
    return s;
  }
};

// The safetensors header (u64 length + JSON: every tensor's name, dtype, shape and offsets),
// the file size, config.json and the options that change results (q8_0; not threads, which
// never change a bit). The tensor data itself is not read: 90 MB at every load would cost
// ~50 ms for a key that the header and size already make specific to one export.
std::string make_fingerprint(const fs::path& weights, const std::string& config_text,
                             const EncoderOptions& opt) {
  Fnv1a f;
  f.add(kForwardVersion);
  std::ifstream in(weights, std::ios::binary);
  unsigned char len_bytes[8] = {};
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  // The reader has checked n against the file and its 100 MB limit.
  std::string header(static_cast<size_t>(n), '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  if (!in) throw EncoderError(weights.string() + ": cannot read the header for the fingerprint");
  f.add(std::string_view(reinterpret_cast<const char*>(len_bytes), 8));
  f.add(header);
  f.add(std::to_string(fs::file_size(weights)));
  f.add(config_text);
  f.add(opt.q8_0 ? "q8_0" : "f32");
  return f.hex();
}

// ---- Per-call state ----

// A call runs its inputs through the layers in passes of whole inputs of up to this many tokens
// (an input longer than this runs alone). At 1024 tokens a pass's activations (~16 MB for
// MiniLM) mostly stay in cache between its layers, and a call's memory stays bounded however
// large its batch. What pass an input lands in never changes its bytes (batch invariance), so
// the split is invisible to callers: a 32-chunk batch of 200-token chunks ran 7.7 chunks/s in
// one pass and 9.5 one chunk at a time (Q8_0, 1 thread).
constexpr int64_t kPassTokens = 1024;

// One call's batch, packed back to back: input b owns token rows [offset[b], offset[b + 1]).
struct Packed {
  std::vector<int64_t> offset;    // [inputs + 1]
  std::vector<int32_t> ids;       // [tokens]
  std::vector<int32_t> position;  // [tokens]: index within its input
  int64_t tokens() const { return offset.back(); }
  int64_t inputs() const { return static_cast<int64_t>(offset.size()) - 1; }
};

// Activations of one call (row-major, one row per token): never shared between calls.
struct Scratch {
  std::vector<float> x, ctx, tmp;  // [tokens, hidden]
  std::vector<float> qkv;          // [tokens, 3 hidden]: q | k | v, biases added
  std::vector<float> ff;           // [tokens, intermediate]
  Scratch(int64_t tokens, int64_t hidden, int64_t inter)
      : x(size_t(tokens * hidden)),
        ctx(x.size()),
        tmp(x.size()),
        qkv(size_t(tokens * 3 * hidden)),
        ff(size_t(tokens * inter)) {}
};

// Token rows per task of the F32 layer loop: 6-token GEMM micro-tiles, about four tasks per
// thread so that a descheduled thread's share is picked up, at most 48 rows (each task streams
// every weight of the layer once from L2/L3, so fewer, larger tasks read less).
int64_t token_block(int64_t n) {
  const int64_t threads = tbb::this_task_arena::max_concurrency();
  const int64_t want = (n + 4 * threads - 1) / (4 * threads);
  return std::clamp<int64_t>((want + 5) / 6 * 6, 12, 48);
}

// Runs fn(t0, t1) over token rows [0, n) in parallel. Every row is computed by the same code
// whatever the split, so results never depend on the partition or the thread count.
template <class F>
void for_rows(int64_t n, F&& fn) {
  constexpr int64_t kGrain = 16;  // rows: a task of >= ~16 x 384 floats amortises TBB's cost
  if (n <= kGrain || tbb::this_task_arena::max_concurrency() == 1) {
    fn(int64_t{0}, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, kGrain),
                    [&](const tbb::blocked_range<int64_t>& r) { fn(r.begin(), r.end()); });
}

// x[t] = LN(x[t] + y[t] + bias) over one row of h floats (y, bias may be null): a sublayer's
// residual add and its LayerNorm (with bias). Mean and variance accumulate in double.
void add_norm_row(float* x, const float* y, const float* bias, const LayerNormParams& ln, float eps,
                  int64_t h) {
  double sum = 0.0;
  for (int64_t c = 0; c < h; ++c) {
    if (y != nullptr) x[c] += bias != nullptr ? y[c] + bias[c] : y[c];
    sum += x[c];
  }
  const double mean = sum / static_cast<double>(h);
  double var = 0.0;
  for (int64_t c = 0; c < h; ++c) {
    const double d = x[c] - mean;
    var += d * d;
  }
  const double inv = 1.0 / std::sqrt(var / static_cast<double>(h) + eps);
  for (int64_t c = 0; c < h; ++c) {
    x[c] = static_cast<float>((x[c] - mean) * inv) * ln.gamma[size_t(c)] + ln.beta[size_t(c)];
  }
}

// ---- The encoder ----

// config.json, and 1_Pooling/config.json when the folder has one (it must be the mean pooling
// embed() implements): checked before any weight is read.
EncoderConfig read_config(const fs::path& dir, const std::string& config_text) {
  EncoderConfig c = encoder_detail::parse_bert_config(config_text, (dir / "config.json").string());
  const fs::path pooling = dir / "1_Pooling" / "config.json";
  if (fs::exists(pooling)) {
    encoder_detail::check_pooling_config(encoder_detail::read_text_file(pooling), pooling.string(),
                                         c.hidden);
  }
  return c;
}

// The weights file, mapped and checked (SafetensorsError for a malformed one).
SafetensorsFile open_weights(const fs::path& path) {
  if (!fs::is_regular_file(path)) {
    throw EncoderError(path.string() + ": missing (an encoder folder holds config.json and " +
                       "model.safetensors)");
  }
  return SafetensorsFile::open(path);
}

class BertEncoderImpl final : public BertEncoder {
 public:
  BertEncoderImpl(const fs::path& dir, const EncoderOptions& opt);

  const EncoderConfig& config() const override { return cfg_; }
  const std::string& fingerprint() const override { return fingerprint_; }
  std::vector<float> embed(std::span<const std::vector<int32_t>> batch) const override;

 private:
  // EncoderError naming the first bad input (index in `batch`) and position.
  void check(std::span<const std::vector<int32_t>> batch) const;
  static Packed pack(std::span<const std::vector<int32_t>> inputs);
  void embeddings(const Packed& p, Scratch& s) const;
  void attention(const Packed& p, Scratch& s) const;
  void layers_f32(const Packed& p, Scratch& s) const;
  void layer_f32_rows(size_t li, int64_t t0, int64_t t1, Scratch& s) const;
  void layer_q8(const BertLayer& l, const Packed& p, Scratch& s) const;
  void pool(const Packed& p, const Scratch& s, float* out) const;

  std::string config_text_;
  EncoderConfig cfg_;
  EncoderOptions opt_;
  SafetensorsFile file_;
  BertWeights w_;
  std::string fingerprint_;
  const vec::Kernels& vk_;
  mutable tbb::task_arena arena_;
};

BertEncoderImpl::BertEncoderImpl(const fs::path& dir, const EncoderOptions& opt)
    : config_text_(encoder_detail::read_text_file(dir / "config.json")),
      cfg_(read_config(dir, config_text_)),
      opt_(opt),
      file_(open_weights(dir / "model.safetensors")),
      w_(encoder_detail::bind_bert_weights(file_, cfg_, opt.q8_0)),
      fingerprint_(make_fingerprint(dir / "model.safetensors", config_text_, opt)),
      vk_(vec::vec_kernels()),
      arena_(opt.threads > 0 ? opt.threads : tbb::info::default_concurrency()) {}

void BertEncoderImpl::check(std::span<const std::vector<int32_t>> batch) const {
  for (size_t b = 0; b < batch.size(); ++b) {
    const auto& ids = batch[b];
    if (ids.empty() || ids.size() > size_t(cfg_.max_positions)) {
      throw EncoderError("encoder: input " + std::to_string(b) + " has " +
                         std::to_string(ids.size()) + " token ids (valid: 1 to " +
                         std::to_string(cfg_.max_positions) + ", max_position_embeddings)");
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= cfg_.vocab_size) {
        throw EncoderError("encoder: input " + std::to_string(b) + ": token id " +
                           std::to_string(ids[i]) + " at position " + std::to_string(i) +
                           " is outside the vocabulary [0, " + std::to_string(cfg_.vocab_size) +
                           ")");
      }
    }
  }
}

Packed BertEncoderImpl::pack(std::span<const std::vector<int32_t>> inputs) {
  Packed p;
  p.offset.reserve(inputs.size() + 1);
  p.offset.push_back(0);
  for (const auto& ids : inputs) {
    p.ids.insert(p.ids.end(), ids.begin(), ids.end());
    for (size_t i = 0; i < ids.size(); ++i) p.position.push_back(static_cast<int32_t>(i));
    p.offset.push_back(p.offset.back() + static_cast<int64_t>(ids.size()));
  }
  return p;
}

// x = LN(word[id] + position[pos] + token_type[0]).
void BertEncoderImpl::embeddings(const Packed& p, Scratch& s) const {
  const int64_t h = cfg_.hidden;
  get_rows(w_.word, p.ids.data(), p.tokens(), s.x.data());
  for_rows(p.tokens(), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* x = s.x.data() + t * h;
      const float* pos = w_.position.data() + int64_t{p.position[size_t(t)]} * h;
      for (int64_t c = 0; c < h; ++c) x[c] += w_.token_type[size_t(c)] + pos[c];
      add_norm_row(x, nullptr, nullptr, w_.emb_ln, cfg_.layer_norm_eps, h);
    }
  });
}

// ctx = softmax(Q K^T / sqrt(head_dim)) V per input and head, over that input's tokens only
// (non-causal; packing leaves no padding keys to mask), from s.qkv (biases already added). One
// task per (input, head), with its own buffers; its result depends on nothing else. Both
// products go through the packed GEMM: the head's keys (times 1/sqrt(head_dim)) packed as an
// [n keys, head_dim] weight, its values as a [head_dim, n] one.
void BertEncoderImpl::attention(const Packed& p, Scratch& s) const {
  const int64_t h = cfg_.hidden, hd = h / cfg_.heads;
  const size_t ld = size_t(3 * h);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const auto one = [&](int64_t b, int64_t head) {
    const int64_t off = p.offset[size_t(b)], n = p.offset[size_t(b) + 1] - off;
    const float* q = s.qkv.data() + size_t(off) * ld + size_t(head * hd);
    Panels keys, values;
    encoder_detail::pack_panels_into(keys, q + h, n, hd, int64_t(ld), scale);
    encoder_detail::pack_panels_transposed(values, q + 2 * h, hd, n, int64_t(ld));
    std::vector<float> S(size_t(n * n));  // [n queries, n keys]
    encoder_detail::gemm(keys, q, ld, 0, n, S.data(), size_t(n), nullptr);
    for (int64_t r = 0; r < n; ++r) {
      float* row = S.data() + r * n;
      const float mx = *std::max_element(row, row + n);
      const float inv = 1.0f / vk_.exp_sum(row, mx, row, int(n));
      for (int64_t j = 0; j < n; ++j) row[j] *= inv;
    }
    encoder_detail::gemm(values, S.data(), size_t(n), 0, n,
                         s.ctx.data() + size_t(off * h + head * hd), size_t(h), nullptr);
  };
  const int64_t tasks = p.inputs() * cfg_.heads;
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, tasks, 1),
      [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t i = r.begin(); i < r.end(); ++i) one(i / cfg_.heads, i % cfg_.heads);
      },
      tbb::simple_partitioner());
}

// F32 weights: per layer, two parallel loops. Attention needs all of an input's tokens; every
// other step works on token rows alone, so one loop over token blocks runs a layer's attention
// output, its norm, the feed-forward, its norm and the next layer's q | k | v for its rows.
void BertEncoderImpl::layers_f32(const Packed& p, Scratch& s) const {
  const int64_t n = p.tokens(), tb = token_block(n);
  const auto rows = [&](auto&& fn) {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, (n + tb - 1) / tb, 1),
        [&](const tbb::blocked_range<int64_t>& r) {
          for (int64_t i = r.begin(); i < r.end(); ++i) fn(i * tb, std::min(n, (i + 1) * tb));
        },
        tbb::simple_partitioner());
  };
  const size_t ld3 = size_t(3 * cfg_.hidden);
  const Linear& first = w_.layers.front().qkv;
  rows([&](int64_t t0, int64_t t1) {
    encoder_detail::gemm(first.packed, s.x.data(), size_t(cfg_.hidden), t0, t1, s.qkv.data(), ld3,
                         first.bias.data());
  });
  for (size_t li = 0; li < w_.layers.size(); ++li) {
    attention(p, s);
    rows([&](int64_t t0, int64_t t1) { layer_f32_rows(li, t0, t1, s); });
  }
}

// Rows [t0, t1) of layer li after its attention: x = LN(x + Wo ctx + bo);
// x = LN(x + W2 GELU(W1 x + b1) + b2); then layer li + 1's q | k | v of these rows.
void BertEncoderImpl::layer_f32_rows(size_t li, int64_t t0, int64_t t1, Scratch& s) const {
  const BertLayer& l = w_.layers[li];
  const int64_t h = cfg_.hidden, im = cfg_.intermediate;
  const float eps = cfg_.layer_norm_eps;
  const auto norm = [&](const LayerNormParams& ln) {
    for (int64_t t = t0; t < t1; ++t) {
      add_norm_row(s.x.data() + t * h, s.tmp.data() + t * h, nullptr, ln, eps, h);
    }
  };
  encoder_detail::gemm(l.attn_out.packed, s.ctx.data(), size_t(h), t0, t1, s.tmp.data(), size_t(h),
                       l.attn_out.bias.data());
  norm(l.attn_ln);
  encoder_detail::gemm(l.up.packed, s.x.data(), size_t(h), t0, t1, s.ff.data(), size_t(im),
                       l.up.bias.data());
  encoder_detail::gelu_erf(s.ff.data() + t0 * im, (t1 - t0) * im);
  encoder_detail::gemm(l.down.packed, s.ff.data(), size_t(im), t0, t1, s.tmp.data(), size_t(h),
                       l.down.bias.data());
  norm(l.out_ln);
  if (li + 1 < w_.layers.size()) {
    const Linear& next = w_.layers[li + 1].qkv;
    encoder_detail::gemm(next.packed, s.x.data(), size_t(h), t0, t1, s.qkv.data(), size_t(3 * h),
                         next.bias.data());
  }
}

// Q8_0 weights (kernels/cpu/matvec.h's matmul, its activations quantized per call):
// x = LN(x + Wo . MHA(x));  x = LN(x + W2 . GELU(W1 x)), one parallel step at a time.
void BertEncoderImpl::layer_q8(const BertLayer& l, const Packed& p, Scratch& s) const {
  const int64_t n = p.tokens(), h = cfg_.hidden, im = cfg_.intermediate;
  const float eps = cfg_.layer_norm_eps;

  // Phase 1: q, k, v into s.qkv's layout (biases added), self-attention, its residual norm.
  for (int i = 0; i < 3; ++i) {
    const Linear& part = i == 0 ? l.query : i == 1 ? l.key : l.value;
    matmul(part.w, s.x.data(), n, s.tmp.data());
    for_rows(n, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        float* dst = s.qkv.data() + t * 3 * h + i * h;
        const float* src = s.tmp.data() + t * h;
        for (int64_t c = 0; c < h; ++c) dst[c] = src[c] + part.bias[size_t(c)];
      }
    });
  }
  attention(p, s);
  matmul(l.attn_out.w, s.ctx.data(), n, s.tmp.data());
  for_rows(n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      add_norm_row(s.x.data() + t * h, s.tmp.data() + t * h, l.attn_out.bias.data(), l.attn_ln, eps,
                   h);
    }
  });

  // Phase 2: feed-forward (GELU, erf form as BERT defines it) and its residual norm.
  matmul(l.up.w, s.x.data(), n, s.ff.data());
  for_rows(n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* f = s.ff.data() + t * im;
      for (int64_t c = 0; c < im; ++c) f[c] += l.up.bias[size_t(c)];
      encoder_detail::gelu_erf(f, im);
    }
  });
  matmul(l.down.w, s.ff.data(), n, s.tmp.data());
  for_rows(n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      add_norm_row(s.x.data() + t * h, s.tmp.data() + t * h, l.down.bias.data(), l.out_ln, eps, h);
    }
  });
}

// out[b] = mean of input b's token rows, L2-normalised (double accumulation).
void BertEncoderImpl::pool(const Packed& p, const Scratch& s, float* out) const {
  const int64_t h = cfg_.hidden;
  std::vector<double> e(static_cast<size_t>(h));
  for (int64_t b = 0; b < p.inputs(); ++b) {
    std::fill(e.begin(), e.end(), 0.0);
    for (int64_t t = p.offset[size_t(b)]; t < p.offset[size_t(b) + 1]; ++t) {
      for (int64_t c = 0; c < h; ++c) e[size_t(c)] += s.x[size_t(t * h + c)];
    }
    double norm = 0.0;
    for (const double v : e) norm += v * v;
    // Mean pooling divides by the count, which the normalisation cancels. A zero vector (only
    // possible with degenerate weights) stays zero rather than becoming NaN.
    const double inv = norm > 0.0 ? 1.0 / std::sqrt(norm) : 0.0;
    for (int64_t c = 0; c < h; ++c) out[b * h + c] = static_cast<float>(e[size_t(c)] * inv);
  }
}

std::vector<float> BertEncoderImpl::embed(std::span<const std::vector<int32_t>> batch) const {
  check(batch);
  const int64_t h = cfg_.hidden;
  std::vector<float> out(batch.size() * size_t(h));
  // Passes of whole inputs, up to kPassTokens tokens each (a longer input alone).
  std::vector<std::pair<size_t, size_t>> passes;  // [first input, end)
  int64_t widest = 0;
  for (size_t b0 = 0; b0 < batch.size();) {
    size_t b1 = b0;
    int64_t tokens = 0;
    while (b1 < batch.size() && (b1 == b0 || tokens + int64_t(batch[b1].size()) <= kPassTokens)) {
      tokens += int64_t(batch[b1++].size());
    }
    passes.emplace_back(b0, b1);
    widest = std::max(widest, tokens);
    b0 = b1;
  }
  if (passes.empty()) return out;
  Scratch s(widest, h, cfg_.intermediate);
  arena_.execute([&] {
    for (const auto& [b0, b1] : passes) {
      const Packed p = pack(batch.subspan(b0, b1 - b0));
      embeddings(p, s);
      if (opt_.q8_0) {
        for (const BertLayer& l : w_.layers) layer_q8(l, p, s);
      } else {
        layers_f32(p, s);
      }
      pool(p, s, out.data() + b0 * size_t(h));
    }
  });
  return out;
}

}  // namespace

BertEncoder::~BertEncoder() = default;

std::shared_ptr<BertEncoder> BertEncoder::load(const fs::path& dir, const EncoderOptions& options) {
  if (options.threads < 0) {
    throw EncoderError("encoder: threads = " + std::to_string(options.threads) +
                       " is negative (valid: 0 for the machine's default, or a thread count)");
  }
  if (!fs::is_directory(dir)) {
    throw EncoderError(dir.string() + ": not a directory (an encoder folder holds config.json " +
                       "and model.safetensors)");
  }
  return std::make_shared<BertEncoderImpl>(dir, options);
}

}  // namespace vsynth::kernels
