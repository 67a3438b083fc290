#include "kernels/model/weights.h"

#include <string>

#include "kernels/gguf/reader.h"
#include "kernels/quant/quantize.h"

namespace vsynth::kernels {

namespace {

std::string shape_str(std::span<const uint64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

// Collects problems while binding so that one error lists all of them.
class Binder {
 public:
  Binder(const GgufFile& f) : f_(f) {}

  const GgufTensor* find(const std::string& name, std::vector<uint64_t> want, bool required) {
    const GgufTensor* t = f_.find_tensor(name);
    if (t == nullptr) {
      if (required) problems_.push_back(name + ": missing (expected " + shape_str(want) + ")");
      return nullptr;
    }
    const std::span<const uint64_t> got = t->dims();
    if (got.size() != want.size() || !std::equal(got.begin(), got.end(), want.begin())) {
      problems_.push_back(name + ": expected " + shape_str(want) + ", found " + shape_str(got));
      return nullptr;
    }
    return t;
  }

  // A linear layer [in, out] viewed as `out` rows of `in`.
  WeightView matrix(const std::string& name, int64_t in, int64_t out, bool required = true) {
    const GgufTensor* t =
        find(name, {static_cast<uint64_t>(in), static_cast<uint64_t>(out)}, required);
    if (t == nullptr) return {};
    if (!quant_supported(t->dtype()) || in % quant_block_elems(t->dtype()) != 0) {
      problems_.push_back(name + ": element type " + std::string(t->type.name) +
                          " is not supported for a linear layer of width " + std::to_string(in) +
                          " (supported: f32, f16, bf16, q4_0, q5_0, q8_0, q4_K, q5_K, q6_K)");
      return {};
    }
    bytes_ += t->n_bytes;
    WeightView w = make_weight_view(t->dtype(), out, in, t->data.data(), t->name);
    try {
      validate_weight_view(w);
    } catch (const std::exception& e) {
      problems_.push_back(name + ": " + e.what());
      return {};
    }
    return w;
  }

  // A 1-D f32 vector of n elements (norm weights, biases).
  const float* vec(const std::string& name, int64_t n, bool required = true) {
    const GgufTensor* t = find(name, {static_cast<uint64_t>(n)}, required);
    if (t == nullptr) return nullptr;
    if (t->dtype() != DType::F32) {
      problems_.push_back(name + ": element type " + std::string(t->type.name) +
                          " is not supported here (expected f32)");
      return nullptr;
    }
    if (reinterpret_cast<uintptr_t>(t->data.data()) % alignof(float) != 0) {
      problems_.push_back(name + ": data is not 4-byte aligned");
      return nullptr;
    }
    bytes_ += t->n_bytes;
    return reinterpret_cast<const float*>(t->data.data());
  }

  void finish() const {
    if (problems_.empty()) return;
    std::string msg = f_.name() + ": " + std::to_string(problems_.size()) +
                      " tensor problem(s) for architecture '" + std::string(f_.architecture()) +
                      "':";
    for (const auto& p : problems_) msg += "\n  " + p;
    throw EngineError(msg);
  }

  size_t bytes() const { return bytes_; }

 private:
  const GgufFile& f_;
  std::vector<std::string> problems_;
  size_t bytes_ = 0;
};

}  // namespace

ModelWeights bind_weights(const GgufFile& file, const ModelConfig& c) {
  Binder b(file);
  ModelWeights m;
  const int64_t d = c.d_model;
  const int64_t q_out = static_cast<int64_t>(c.n_heads) * c.head_dim_k;
  const int64_t k_out = static_cast<int64_t>(c.n_kv_heads) * c.head_dim_k;
  const int64_t v_out = static_cast<int64_t>(c.n_kv_heads) * c.head_dim_v;
  const int64_t o_in = static_cast<int64_t>(c.n_heads) * c.head_dim_v;

  m.token_embd = b.matrix("token_embd.weight", d, c.vocab_size);
  m.output = c.tied_output ? m.token_embd : b.matrix("output.weight", d, c.vocab_size);
  m.output_norm = b.vec("output_norm.weight", d);
  m.layers.resize(static_cast<size_t>(c.n_layers));
  for (int32_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = m.layers[static_cast<size_t>(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    L.attn_norm = b.vec(p + "attn_norm.weight", d);
    L.wq = b.matrix(p + "attn_q.weight", d, q_out);
    L.wk = b.matrix(p + "attn_k.weight", d, k_out);
    L.wv = b.matrix(p + "attn_v.weight", d, v_out);
    L.wo = b.matrix(p + "attn_output.weight", o_in, d);
    if (c.qkv_bias) {
      L.bq = b.vec(p + "attn_q.bias", q_out);
      L.bk = b.vec(p + "attn_k.bias", k_out);
      L.bv = b.vec(p + "attn_v.bias", v_out);
    }
    if (c.qk_norm) {
      L.q_norm = b.vec(p + "attn_q_norm.weight", c.head_dim_k);
      L.k_norm = b.vec(p + "attn_k_norm.weight", c.head_dim_k);
    }
    if (c.post_norms) {
      L.post_attn_norm = b.vec(p + "post_attention_norm.weight", d);
      L.post_ffn_norm = b.vec(p + "post_ffw_norm.weight", d);
    }
    L.ffn_norm = b.vec(p + "ffn_norm.weight", d);
    L.w_gate = b.matrix(p + "ffn_gate.weight", d, c.ffn_dim);
    L.w_up = b.matrix(p + "ffn_up.weight", d, c.ffn_dim);
    L.w_down = b.matrix(p + "ffn_down.weight", c.ffn_dim, d);
  }
  b.finish();
  m.total_bytes = b.bytes();
  return m;
}

}  // namespace vsynth::kernels
