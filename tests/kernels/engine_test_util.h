// Helpers for the engine tests: the golden logits files written by
// scripts/golden/make_logits_golden.py, and comparing our logits with them.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/engine.h"
#include "kernels/quant/fp16.h"

namespace vsynth::kernels::test {

inline const std::filesystem::path kGoldenDir =
    std::filesystem::path(VSYNTH_SOURCE_DIR) / "tests/data/golden";
// llama.cpp's logits (not committed): scripts/test.sh writes them (golden/setup-logits.sh).
inline const std::filesystem::path kLogitsGoldenDir =
    std::filesystem::path(VSYNTH_SOURCE_DIR) / ".cache/golden-logits";

// One logits golden file (layout in make_logits_golden.py's docstring).
struct LogitsGolden {
  std::vector<int32_t> tokens;
  uint32_t vocab = 0, top_k = 0;
  std::vector<int32_t> top_ids;    // [n][top_k]
  std::vector<float> top_logits;   // [n][top_k]
  std::vector<float> lse;          // [n] log-sum-exp of each row
  std::vector<float> next_logit;   // [n] logit of tokens[i+1] at row i
  std::vector<uint32_t> full_pos;  // positions with a whole row
  std::vector<float> full_rows;    // [n_full][vocab]

  size_t size() const { return tokens.size(); }
  int32_t top1(size_t pos) const { return top_ids[pos * top_k]; }
};

inline LogitsGolden read_logits_golden(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot open " + path.string() +
                             ": run scripts/golden/setup-logits.sh (scripts/test.sh does), which "
                             "writes llama.cpp's logits there");
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  size_t off = 0;
  const auto take = [&](void* dst, size_t n) {
    if (off + n > bytes.size()) throw std::runtime_error(path.string() + ": truncated");
    std::memcpy(dst, bytes.data() + off, n);
    off += n;
  };
  char magic[4];
  take(magic, 4);
  if (std::memcmp(magic, "VSLG", 4) != 0) throw std::runtime_error(path.string() + ": bad magic");
  uint32_t hdr[5];
  take(hdr, sizeof hdr);
  if (hdr[0] != 2) throw std::runtime_error(path.string() + ": unknown version (expected 2)");
  LogitsGolden g;
  const size_t n = hdr[1];
  g.vocab = hdr[2];
  g.top_k = hdr[3];
  const size_t n_full = hdr[4];
  g.tokens.resize(n);
  take(g.tokens.data(), n * 4);
  g.top_ids.resize(n * g.top_k);
  take(g.top_ids.data(), g.top_ids.size() * 4);
  g.top_logits.resize(n * g.top_k);
  take(g.top_logits.data(), g.top_logits.size() * 4);
  g.lse.resize(n);
  take(g.lse.data(), n * 4);
  g.next_logit.resize(n);
  take(g.next_logit.data(), n * 4);
  g.full_pos.resize(n_full);
  take(g.full_pos.data(), n_full * 4);
  std::vector<uint16_t> half(n_full * g.vocab);
  take(half.data(), half.size() * 2);
  g.full_rows.resize(half.size());
  for (size_t i = 0; i < half.size(); ++i) g.full_rows[i] = fp16_to_fp32(half[i]);
  if (off != bytes.size()) throw std::runtime_error(path.string() + ": trailing bytes");
  return g;
}

inline int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Agreement of our logits with a golden file, accumulated row by row.
struct LogitsComparison {
  size_t rows = 0;
  size_t top1_agree = 0;
  // Over the stored top-k logits: |ours - ref| / max_k |ref| of that row.
  double top_max_rel = 0, top_sum_rel = 0;
  size_t top_count = 0;
  // Over whole stored rows: max |ours - ref| / max |ref|, and mean |ours - ref| / mean |ref|.
  double full_max_rel = 0, full_mean_rel = 0;
  size_t full_count = 0;
  std::vector<int32_t> our_top1;  // per row, for comparing two runs of ours
  // Teacher-forced negative log-likelihood of the next token (rows 0 .. n-2), ours and ref.
  double nll_ours = 0, nll_ref = 0;
  size_t nll_count = 0;
  // |our log p(ref top-1) - ref log p(ref top-1)|, summed.
  double sum_dlogp = 0;
  // Per row, how far the reference's top-1 logit leads its runner-up (+inf with top_k < 2).
  // Rows with a small lead are near-ties that any change of rounding may flip (see
  // engine_golden_test.cpp); agreement on decisive rows is the sharper check of the maths.
  std::vector<float> ref_margin;

  // Top-1 agreement of `ours` with the reference over rows where the reference leads by at
  // least `margin` logits: {agreeing, rows}.
  std::pair<size_t, size_t> decisive_agreement(float margin) const {
    return count_decisive(margin, ref_top1);
  }
  // The same between two runs of ours (e.g. INT8 vs FP16 KV), on the reference's decisive rows.
  std::pair<size_t, size_t> decisive_agreement(const LogitsComparison& other, float margin) const {
    return count_decisive(margin, other.our_top1);
  }
  std::pair<size_t, size_t> count_decisive(float margin, const std::vector<int32_t>& top1) const {
    size_t agree = 0, n = 0;
    for (size_t i = 0; i < ref_margin.size() && i < top1.size(); ++i) {
      if (ref_margin[i] < margin) continue;
      ++n;
      agree += our_top1[i] == top1[i];
    }
    return {agree, n};
  }
  std::vector<int32_t> ref_top1;

  double agreement() const { return rows ? static_cast<double>(top1_agree) / rows : 0.0; }
  double top_mean_rel() const { return top_count ? top_sum_rel / top_count : 0.0; }
  double ppl_ours() const {
    return std::exp(nll_ours / static_cast<double>(std::max<size_t>(1, nll_count)));
  }
  double ppl_ref() const {
    return std::exp(nll_ref / static_cast<double>(std::max<size_t>(1, nll_count)));
  }
  double mean_dlogp() const { return rows ? sum_dlogp / static_cast<double>(rows) : 0.0; }

  void add(const LogitsGolden& g, size_t pos, std::span<const float> row) {
    ++rows;
    const int32_t mine = argmax(row);
    our_top1.push_back(mine);
    if (mine == g.top1(pos)) ++top1_agree;
    ref_top1.push_back(g.top1(pos));
    ref_margin.push_back(g.top_k >= 2
                             ? g.top_logits[pos * g.top_k] - g.top_logits[pos * g.top_k + 1]
                             : std::numeric_limits<float>::infinity());
    double mx = row[0];
    for (float v : row) mx = std::max(mx, static_cast<double>(v));
    double se = 0;
    for (float v : row) se += std::exp(static_cast<double>(v) - mx);
    const double lse = mx + std::log(se);
    sum_dlogp += std::fabs((row[static_cast<size_t>(g.top1(pos))] - lse) -
                           (static_cast<double>(g.top_logits[pos * g.top_k]) - g.lse[pos]));
    if (pos + 1 < g.size()) {
      nll_ours += lse - row[static_cast<size_t>(g.tokens[pos + 1])];
      nll_ref += static_cast<double>(g.lse[pos]) - g.next_logit[pos];
      ++nll_count;
    }
    double scale = 0;
    for (uint32_t j = 0; j < g.top_k; ++j) {
      scale = std::max(scale, std::fabs(static_cast<double>(g.top_logits[pos * g.top_k + j])));
    }
    scale = std::max(scale, 1e-6);
    for (uint32_t j = 0; j < g.top_k; ++j) {
      const int32_t id = g.top_ids[pos * g.top_k + j];
      const double rel =
          std::fabs(row[static_cast<size_t>(id)] - g.top_logits[pos * g.top_k + j]) / scale;
      top_max_rel = std::max(top_max_rel, rel);
      top_sum_rel += rel;
      ++top_count;
    }
    for (size_t f = 0; f < g.full_pos.size(); ++f) {
      if (g.full_pos[f] != pos) continue;
      const float* ref = g.full_rows.data() + f * g.vocab;
      double max_diff = 0, max_ref = 0, sum_diff = 0, sum_ref = 0;
      for (uint32_t i = 0; i < g.vocab; ++i) {
        const double diff = std::fabs(static_cast<double>(row[i]) - ref[i]);
        max_diff = std::max(max_diff, diff);
        max_ref = std::max(max_ref, std::fabs(static_cast<double>(ref[i])));
        sum_diff += diff;
        sum_ref += std::fabs(static_cast<double>(ref[i]));
      }
      full_max_rel = std::max(full_max_rel, max_diff / std::max(max_ref, 1e-6));
      full_mean_rel = std::max(full_mean_rel, sum_diff / std::max(sum_ref, 1e-6));
      ++full_count;
    }
  }
};

// Teacher-forces the golden sequence through a fresh sequence of `model`: prefill_all in chunks
// of `chunk` tokens (chunk = 1: decode() token by token). Compares the first `limit` positions.
inline LogitsComparison run_golden(Model& model, const LogitsGolden& g, int32_t chunk,
                                   size_t limit = SIZE_MAX) {
  LogitsComparison cmp;
  auto seq = model.new_sequence();
  const size_t n = std::min(limit, g.size());
  const size_t V = g.vocab;
  for (size_t pos = 0; pos < n;) {
    const size_t m = std::min<size_t>(static_cast<size_t>(chunk), n - pos);
    std::span<const int32_t> ids(g.tokens.data() + pos, m);
    const std::span<const float> lg = chunk == 1 ? seq->decode(ids[0]) : seq->prefill_all(ids);
    for (size_t i = 0; i < m; ++i) cmp.add(g, pos + i, lg.subspan(i * V, V));
    pos += m;
  }
  return cmp;
}

}  // namespace vsynth::kernels::test

#include "kernels/gguf/writer.h"
#include "tests/kernels/decoder_gguf.h"

namespace vsynth::kernels::test {

// A tiny random-weight decoder written with our GgufWriter (f32 weights, a 64-token SPM vocab),
// for tests that need a model but not llama.cpp's numbers: KV cache behaviour, errors.
struct TinySpec {
  std::string arch = "gemma3";  // gemma3 | llama | qwen2
  int d = 64, layers = 6, heads = 2, kv_heads = 1, head_dim = 32, ffn = 128, vocab = 64;
  uint32_t window = 64;  // gemma3 sliding window
  uint32_t seed = 7;
  std::vector<std::string> skip;  // tensor names to leave out (error tests)
  std::vector<std::pair<std::string, std::vector<uint64_t>>> reshape;  // name -> wrong dims
};

inline std::filesystem::path write_tiny_model(const TinySpec& s, const std::string& file) {
  GgufWriter w;
  const std::string a = s.arch;
  add_decoder_metadata(w, s, 4096, 1e6f);

  uint32_t x = s.seed * 2654435761u + 12345u;
  const auto add = [&](const std::string& name, std::vector<uint64_t> ne, float scale,
                       float offset = 0.0f) {
    if (std::find(s.skip.begin(), s.skip.end(), name) != s.skip.end()) return;
    for (const auto& [n, dims] : s.reshape) {
      if (n == name) ne = dims;
    }
    uint64_t count = 1;
    for (uint64_t e : ne) count *= e;
    std::vector<float> v(count);
    for (auto& f : v) f = offset + scale * next_uniform(x);
    w.add_tensor(name, DType::F32, ne, std::as_bytes(std::span<const float>(v.data(), v.size())));
  };
  const uint64_t d = static_cast<uint64_t>(s.d), ff = static_cast<uint64_t>(s.ffn);
  const uint64_t qn = static_cast<uint64_t>(s.heads * s.head_dim);
  const uint64_t kn = static_cast<uint64_t>(s.kv_heads * s.head_dim);
  add("token_embd.weight", {d, static_cast<uint64_t>(s.vocab)}, 1.0f);
  add("output_norm.weight", {d}, 0.1f, 1.0f);
  if (a == "llama") add("output.weight", {d, static_cast<uint64_t>(s.vocab)}, 0.3f);
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const float sd = 1.7f / std::sqrt(static_cast<float>(s.d));
    add(p + "attn_norm.weight", {d}, 0.1f, 1.0f);
    add(p + "attn_q.weight", {d, qn}, sd);
    add(p + "attn_k.weight", {d, kn}, sd);
    add(p + "attn_v.weight", {d, kn}, sd);
    add(p + "attn_output.weight", {qn, d}, 1.7f / std::sqrt(static_cast<float>(qn)));
    if (a == "qwen2") {
      add(p + "attn_q.bias", {qn}, 0.2f);
      add(p + "attn_k.bias", {kn}, 0.2f);
      add(p + "attn_v.bias", {kn}, 0.2f);
    }
    if (a == "gemma3") {
      add(p + "attn_q_norm.weight", {static_cast<uint64_t>(s.head_dim)}, 0.1f, 1.0f);
      add(p + "attn_k_norm.weight", {static_cast<uint64_t>(s.head_dim)}, 0.1f, 1.0f);
      add(p + "post_attention_norm.weight", {d}, 0.1f, 1.0f);
      add(p + "post_ffw_norm.weight", {d}, 0.1f, 1.0f);
    }
    add(p + "ffn_norm.weight", {d}, 0.1f, 1.0f);
    add(p + "ffn_gate.weight", {d, ff}, sd);
    add(p + "ffn_up.weight", {d, ff}, sd);
    add(p + "ffn_down.weight", {ff, d}, 1.7f / std::sqrt(static_cast<float>(s.ffn)));
  }
  // One folder per test process: ctest runs test cases in parallel processes, and callers reuse
  // a file name for models of different specs (a shared path would hand one process another's).
  const std::filesystem::path dir = std::filesystem::path(VSYNTH_BINARY_DIR) / "engine_test" /
                                    std::to_string(static_cast<long>(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / file;
  w.write(path);
  return path;
}

}  // namespace vsynth::kernels::test
