// Synthetic decoder models for the CUDA tests and bench_cuda: the exact shapes of the default
// model (gemma3 270M) or of a ~1.5B Llama, random weights from a fixed seed, quantized with our
// reference quantizers in the Q4_K_M recipe's pattern, written by our GgufWriter. No network, no
// model file. Quantization runs on every core (a 1.5B model takes seconds, not minutes).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/gguf/writer.h"
#include "kernels/quant/quantize.h"
#include "kernels/tokenizer/vocab.h"
#include "tests/kernels/decoder_gguf.h"

namespace vsynth::kernels::test {

struct SyntheticSpec {
  std::string name;
  std::string arch;  // gemma3 | llama
  int d = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  uint32_t window = 0;  // gemma3 sliding window
  uint32_t seed = 1;
};

// gemma-3-270m (facts.md): 18 layers, d 640, 4 heads of 256, 1 kv head, ffn 2048, vocab 262144.
inline SyntheticSpec gemma3_270m_spec() {
  return {"gemma3-270m", "gemma3", 640, 18, 4, 1, 256, 2048, 262144, 512, 11};
}
// A Llama of about 1.5B parameters (TinyLlama's width, 24 layers, 128-wide heads, GQA 4:1).
inline SyntheticSpec llama_1_5b_spec() {
  return {"llama-1.5b", "llama", 2048, 24, 16, 4, 128, 8192, 32000, 0, 12};
}

// Element type per tensor, following llama.cpp's Q4_K_M choices for these shapes: K-quants
// where the input width is a multiple of 256, Q5_0 where it is not (640), Q6_K (or Q8_0 when
// 640 wide) for half the attn_v / ffn_down tensors and the embeddings.
inline DType synthetic_type(const SyntheticSpec& s, const std::string& name, int layer,
                            int64_t in) {
  const bool k_ok = in % 256 == 0;
  const bool upgraded = layer >= 0 && layer % 2 == 0;
  if (name == "token_embd.weight" || name == "output.weight")
    return k_ok ? DType::Q6_K : DType::Q8_0;
  if (name.ends_with("attn_v.weight") || name.ends_with("ffn_down.weight")) {
    if (upgraded) return k_ok ? DType::Q6_K : DType::Q8_0;
  }
  (void)s;
  return k_ok ? DType::Q4_K : DType::Q5_0;
}

inline std::filesystem::path write_synthetic_model(const SyntheticSpec& s,
                                                   const std::filesystem::path& path) {
  GgufWriter w;
  const std::string a = s.arch;
  add_decoder_metadata(w, s, 32768, a == "gemma3" ? 1e6f : 10000.0f);

  uint32_t tensor_seed = s.seed;
  // Rows of `in` values uniform in offset +- scale, quantized to `type`, rows split over cores.
  const auto add = [&](const std::string& name, int layer, int64_t in, int64_t out, float scale,
                       float offset, bool vector) {
    const uint32_t seed = tensor_seed++ * 2654435761u + 12345u;
    const DType type = vector ? DType::F32 : synthetic_type(s, name, layer, in);
    const size_t rb = row_size(type, in);
    std::vector<std::byte> bytes(rb * static_cast<size_t>(out));
    const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < nt; ++t) {
      pool.emplace_back([&, t] {
        std::vector<float> row(static_cast<size_t>(in));
        for (int64_t r = t; r < out; r += nt) {
          uint32_t x = seed ^ static_cast<uint32_t>(r * 0x9E3779B9u);
          for (auto& f : row) f = offset + scale * next_uniform(x);
          quantize_row(type, row.data(), in, bytes.data() + static_cast<size_t>(r) * rb);
        }
      });
    }
    for (auto& th : pool) th.join();
    std::vector<uint64_t> ne = {static_cast<uint64_t>(in)};
    if (!vector) ne.push_back(static_cast<uint64_t>(out));
    w.add_tensor(name, type, ne, bytes);
  };
  const int64_t d = s.d, ff = s.ffn, qn = int64_t{s.heads} * s.head_dim;
  const int64_t kn = int64_t{s.kv_heads} * s.head_dim;
  add("token_embd.weight", -1, d, s.vocab, 1.0f, 0.0f, false);
  add("output_norm.weight", -1, d, 1, 0.1f, 1.0f, true);
  if (a == "llama") add("output.weight", -1, d, s.vocab, 0.3f, 0.0f, false);
  const float sd = 1.7f / std::sqrt(static_cast<float>(d));
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", l, d, 1, 0.1f, 1.0f, true);
    add(p + "attn_q.weight", l, d, qn, sd, 0.0f, false);
    add(p + "attn_k.weight", l, d, kn, sd, 0.0f, false);
    add(p + "attn_v.weight", l, d, kn, sd, 0.0f, false);
    add(p + "attn_output.weight", l, qn, d, 1.7f / std::sqrt(static_cast<float>(qn)), 0.0f, false);
    if (a == "gemma3") {
      add(p + "attn_q_norm.weight", l, s.head_dim, 1, 0.1f, 1.0f, true);
      add(p + "attn_k_norm.weight", l, s.head_dim, 1, 0.1f, 1.0f, true);
      add(p + "post_attention_norm.weight", l, d, 1, 0.1f, 1.0f, true);
      add(p + "post_ffw_norm.weight", l, d, 1, 0.1f, 1.0f, true);
    }
    add(p + "ffn_norm.weight", l, d, 1, 0.1f, 1.0f, true);
    add(p + "ffn_gate.weight", l, d, ff, sd, 0.0f, false);
    add(p + "ffn_up.weight", l, d, ff, sd, 0.0f, false);
    add(p + "ffn_down.weight", l, ff, d, 1.7f / std::sqrt(static_cast<float>(ff)), 0.0f, false);
  }
  std::filesystem::create_directories(path.parent_path());
  // Written beside and renamed, so an interrupted run never leaves a truncated model behind.
  std::filesystem::path tmp = path;
  tmp += ".partial";
  w.write(tmp);
  std::filesystem::rename(tmp, path);
  return path;
}

// Prompt tokens for the benchmarks and tests: n ids uniform in [4, vocab), past the specials.
inline std::vector<TokenId> random_tokens(int n, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<TokenId> d(4, vocab - 1);
  std::vector<TokenId> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

// The file under `dir`, written once per spec (kept between runs of the same build).
inline std::filesystem::path synthetic_model(const SyntheticSpec& s,
                                             const std::filesystem::path& dir) {
  const std::filesystem::path p = dir / ("synthetic-" + s.name + ".gguf");
  if (!std::filesystem::exists(p)) write_synthetic_model(s, p);
  return p;
}

}  // namespace vsynth::kernels::test
