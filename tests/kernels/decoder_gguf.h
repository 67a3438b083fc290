// What the test model writers share (engine_test_util.h's tiny f32 models, tests/cuda's
// synthetic quantized ones): a decoder's GGUF hyperparameters and SentencePiece vocabulary, and
// the xorshift generator their random weights come from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gguf/writer.h"

namespace vsynth::kernels::test {

// The next value of a xorshift32 state `x`, as a float uniform in [-1, 1).
inline float next_uniform(uint32_t& x) {
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return static_cast<float>(x >> 8) / static_cast<float>(1u << 23) - 1.0f;
}

// general.architecture and the <arch>.* hyperparameters of a decoder shaped as `s` (fields
// arch, d, layers, ffn, heads, kv_heads, head_dim, window: TinySpec, SyntheticSpec), then a
// llama (SentencePiece) vocabulary of s.vocab tokens: <pad> <eos> <bos> <unk> t4 t5 ...
template <class Spec>
void add_decoder_metadata(GgufWriter& w, const Spec& s, uint32_t context_length,
                          float rope_freq_base) {
  const std::string a = s.arch;
  w.add("general.architecture", a);
  w.add(a + ".context_length", context_length);
  w.add(a + ".embedding_length", static_cast<uint32_t>(s.d));
  w.add(a + ".block_count", static_cast<uint32_t>(s.layers));
  w.add(a + ".feed_forward_length", static_cast<uint32_t>(s.ffn));
  w.add(a + ".attention.head_count", static_cast<uint32_t>(s.heads));
  w.add(a + ".attention.head_count_kv", static_cast<uint32_t>(s.kv_heads));
  w.add(a + ".attention.key_length", static_cast<uint32_t>(s.head_dim));
  w.add(a + ".attention.value_length", static_cast<uint32_t>(s.head_dim));
  w.add(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
  w.add(a + ".rope.freq_base", rope_freq_base);
  if (a == "gemma3") w.add(a + ".attention.sliding_window", s.window);
  std::vector<std::string> toks = {"<pad>", "<eos>", "<bos>", "<unk>"};
  for (int i = 4; i < s.vocab; ++i) toks.push_back("t" + std::to_string(i));
  std::vector<float> scores(toks.size(), 0.0f);
  std::vector<int32_t> types(toks.size(), 1);
  types[0] = types[1] = types[2] = 3;
  types[3] = 2;
  w.add("tokenizer.ggml.model", "llama");
  w.add_array("tokenizer.ggml.tokens", toks);
  w.add_array("tokenizer.ggml.scores", scores);
  w.add_array("tokenizer.ggml.token_type", types);
  w.add("tokenizer.ggml.bos_token_id", uint32_t{2});
  w.add("tokenizer.ggml.eos_token_id", uint32_t{1});
  w.add("tokenizer.ggml.unknown_token_id", uint32_t{3});
}

}  // namespace vsynth::kernels::test
