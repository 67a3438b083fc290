// Helpers shared by the GGUF tests: a small valid file, deterministic bytes, field patching and
// "open this and give me the error text".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "kernels/gguf/reader.h"
#include "kernels/gguf/writer.h"

namespace vsynth::kernels::test {

// n reproducible pseudo-random bytes (xorshift), different per seed.
inline std::vector<std::byte> some_bytes(std::size_t n, uint32_t seed = 1) {
  std::vector<std::byte> out(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::byte>(x >> 24);
  }
  return out;
}

// A small valid model: KV #0 general.architecture, #1 general.name, #2 tiny.block_count (u32),
// #3 tokenizer scores (f32 array), #4 tokens (string array), #5 tiny.flag (bool); tensors #0
// token_embd.weight f32 [4, 3], #1 blk.0.attn_q.weight q8_0 [32, 2], #2 output_norm.weight
// f16 [4].
inline GgufWriter small_writer() {
  GgufWriter w;
  w.add("general.architecture", "tiny");
  w.add("general.name", "tiny test model");
  w.add("tiny.block_count", uint32_t{2});
  w.add_array("tokenizer.ggml.scores", std::vector<float>{0.5f, -1.0f, 2.0f});
  w.add_array("tokenizer.ggml.tokens", std::vector<std::string>{"<s>", "a", "b"});
  w.add("tiny.flag", true);
  w.add_tensor("token_embd.weight", DType::F32, {4, 3}, some_bytes(48, 1));
  w.add_tensor("blk.0.attn_q.weight", DType::Q8_0, {32, 2}, some_bytes(68, 2));
  w.add_tensor("output_norm.weight", DType::F16, {4}, some_bytes(8, 3));
  return w;
}
inline GgufImage small_image() {
  return small_writer().build();
}

// Overwrites sizeof(T) bytes at `offset` with v (little-endian, as the file stores it).
template <class T>
void patch(std::vector<std::byte>& bytes, uint64_t offset, T v) {
  std::memcpy(bytes.data() + offset, &v, sizeof v);
}

// Opens a copy of `bytes` held in an exactly-sized heap buffer (so a sanitizer build sees any
// read past the end) and returns the GgufError text, or "<no error>". Other exception types
// propagate and fail the test.
inline std::string gguf_error_of(std::span<const std::byte> bytes) {
  std::vector<std::byte> copy(bytes.begin(), bytes.end());
  try {
    GgufFile::open_from_memory(copy, "bad.gguf");
  } catch (const GgufError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace vsynth::kernels::test
