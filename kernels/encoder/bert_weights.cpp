#include "kernels/encoder/bert_weights.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/quant/quantize.h"

namespace vsynth::kernels::encoder_detail {

namespace {

std::vector<float> copy_floats(const SafetensorsTensor& t) {
  std::vector<float> v(static_cast<size_t>(t.elements()));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));  // unaligned-safe
  return v;
}

// A NaN or infinity in a weight would make every embedding that touches it NaN, silently: refuse
// the file instead (one pass over the 90 MB at load, ~10 ms, while the pages come in anyway).
void check_finite(const SafetensorsTensor& t, const std::string& label) {
  std::array<float, 1024> buf;
  const int64_t n = t.elements();
  for (int64_t i0 = 0; i0 < n; i0 += int64_t{buf.size()}) {
    const int64_t m = std::min<int64_t>(int64_t{buf.size()}, n - i0);
    std::memcpy(buf.data(), t.data.data() + i0 * 4, static_cast<size_t>(m) * 4);
    bool ok = true;
    for (int64_t i = 0; i < m; ++i) ok &= std::isfinite(buf[static_cast<size_t>(i)]);
    if (ok) continue;
    for (int64_t i = 0; i < m; ++i) {
      if (!std::isfinite(buf[static_cast<size_t>(i)])) {
        throw EncoderError(label + ": tensor '" + t.name + "' element " + std::to_string(i0 + i) +
                           " is " + (std::isnan(buf[static_cast<size_t>(i)]) ? "NaN" : "infinite") +
                           " (weights must be finite)");
      }
    }
  }
}

const SafetensorsTensor& need(const SafetensorsFile& f, const std::string& name,
                              std::initializer_list<int64_t> shape) {
  const std::vector<int64_t> s(shape);
  const SafetensorsTensor& t = f.require(name, StDType::F32, s);
  check_finite(t, f.label());
  return t;
}

LayerNormParams bind_ln(const SafetensorsFile& f, const std::string& prefix, int64_t hidden) {
  return {copy_floats(need(f, prefix + ".weight", {hidden})),
          copy_floats(need(f, prefix + ".bias", {hidden}))};
}

// A [rows, cols] F32 weight as matmul reads it: the mapping itself when 4-byte aligned, else an
// aligned copy; with q8_0, its rows quantized into owned storage.
WeightView weight_view(const SafetensorsTensor& t, int64_t rows, int64_t cols, bool q8_0,
                       BertWeights& w) {
  const auto* src = t.data.data();
  const bool aligned = reinterpret_cast<uintptr_t>(src) % alignof(float) == 0;
  if (!q8_0) {
    if (aligned) return make_weight_view(DType::F32, rows, cols, src, t.name);
    auto copy = std::make_unique<std::byte[]>(t.data.size());
    std::memcpy(copy.get(), src, t.data.size());
    w.owned.push_back(std::move(copy));
    return make_weight_view(DType::F32, rows, cols, w.owned.back().get(), t.name);
  }
  const size_t row_bytes = row_size(DType::Q8_0, cols);
  auto q = std::make_unique<std::byte[]>(row_bytes * static_cast<size_t>(rows));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(row.data(), src + static_cast<size_t>(r * cols) * sizeof(float),
                row.size() * sizeof(float));
    quantize_row(DType::Q8_0, row.data(), cols, q.get() + static_cast<size_t>(r) * row_bytes);
  }
  w.owned.push_back(std::move(q));
  return make_weight_view(DType::Q8_0, rows, cols, w.owned.back().get(), t.name);
}

// `pack`: F32 weights also packed into GEMM panels (not for query, key and value: the forward
// pass multiplies by their stacked panels, stack_qkv).
Linear bind_linear(const SafetensorsFile& f, const std::string& prefix, int64_t out, int64_t in,
                   bool q8_0, BertWeights& w, bool pack = true) {
  Linear l;
  l.w = weight_view(need(f, prefix + ".weight", {out, in}), out, in, q8_0, w);
  l.bias = copy_floats(need(f, prefix + ".bias", {out}));
  if (!q8_0 && pack) l.packed = pack_panels(static_cast<const float*>(l.w.data), out, in, in);
  return l;
}

// query | key | value as one [3 hidden, hidden] linear (their packed panels and biases).
Linear stack_qkv(const BertLayer& l, int64_t h) {
  std::vector<float> wt(size_t(3 * h * h));
  Linear s;
  for (int i = 0; i < 3; ++i) {
    const Linear& part = i == 0 ? l.query : i == 1 ? l.key : l.value;
    std::memcpy(wt.data() + size_t(i * h * h), part.w.data, size_t(h * h) * sizeof(float));
    s.bias.insert(s.bias.end(), part.bias.begin(), part.bias.end());
  }
  s.packed = pack_panels(wt.data(), 3 * h, h, h);
  return s;
}

}  // namespace

BertWeights bind_bert_weights(const SafetensorsFile& f, const EncoderConfig& c, bool q8_0) {
  const int64_t h = c.hidden, im = c.intermediate;
  if (q8_0 && (h % 32 != 0 || im % 32 != 0)) {
    throw EncoderError(f.label() + ": q8_0 needs hidden_size and intermediate_size multiples of " +
                       "32 (its block), found " + std::to_string(h) + " and " + std::to_string(im));
  }
  BertWeights w;
  const auto& word = need(f, "embeddings.word_embeddings.weight", {c.vocab_size, h});
  // Embedding rows are gathered, never multiplied: they stay F32 even with q8_0.
  w.word = weight_view(word, c.vocab_size, h, false, w);
  w.position = copy_floats(need(f, "embeddings.position_embeddings.weight", {c.max_positions, h}));
  const auto types =
      copy_floats(need(f, "embeddings.token_type_embeddings.weight", {c.type_vocab, h}));
  w.token_type.assign(types.begin(), types.begin() + h);
  w.emb_ln = bind_ln(f, "embeddings.LayerNorm", h);

  for (int32_t i = 0; i < c.layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    BertLayer l;
    l.query = bind_linear(f, p + "attention.self.query", h, h, q8_0, w, false);
    l.key = bind_linear(f, p + "attention.self.key", h, h, q8_0, w, false);
    l.value = bind_linear(f, p + "attention.self.value", h, h, q8_0, w, false);
    l.attn_out = bind_linear(f, p + "attention.output.dense", h, h, q8_0, w);
    l.attn_ln = bind_ln(f, p + "attention.output.LayerNorm", h);
    l.up = bind_linear(f, p + "intermediate.dense", im, h, q8_0, w);
    l.down = bind_linear(f, p + "output.dense", h, im, q8_0, w);
    l.out_ln = bind_ln(f, p + "output.LayerNorm", h);
    if (!q8_0) l.qkv = stack_qkv(l, h);
    w.layers.push_back(std::move(l));
  }
  return w;
}

}  // namespace vsynth::kernels::encoder_detail
