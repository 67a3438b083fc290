// Writes a starting corpus for fuzz_safetensors into the folder given as argv[1]: a few small
// valid files (every dtype, metadata, a 0-d scalar, zero-sized tensors, unpadded and padded
// headers) made with the tests' writer. Mutating valid files reaches the entry and range checks
// far sooner than random bytes do.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/kernels/gguf_test_util.h"
#include "tests/kernels/safetensors_test_util.h"

using namespace vsynth::kernels;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  int n = 0;
  auto save = [&](const std::vector<std::byte>& bytes) {
    (void)SafetensorsFile::parse(bytes, "seed");  // a seed the reader rejects would be wasted
    std::ofstream out(dir / ("seed-" + std::to_string(n++) + ".safetensors"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  };
  using test::some_bytes;

  // An encoder-like file: metadata, an I64 id table, F32 weights.
  save(test::safetensors_bytes(
      {{"embeddings.position_ids", "I64", {1, 4}, some_bytes(32, 1)},
       {"embeddings.word_embeddings.weight", "F32", {3, 2}, some_bytes(24, 2)},
       {"encoder.layer.0.attention.self.query.bias", "F32", {2}, some_bytes(8, 3)}},
      {{"format", "pt"}}));
  // Every dtype once, header unpadded.
  std::vector<test::StSpec> all;
  const std::vector<std::pair<const char*, std::size_t>> dtypes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},
      {"I32", 4},  {"U32", 4}, {"F32", 4}, {"F64", 8}, {"I64", 8}, {"U64", 8}};
  uint32_t seed = 10;
  for (const auto& [name, size] : dtypes) {
    all.push_back({std::string("t.") + name, name, {2}, some_bytes(2 * size, seed++)});
  }
  save(test::safetensors_bytes(all, {}, 1));
  // A 0-d scalar between zero-sized tensors, header padded to 64 bytes.
  save(test::safetensors_bytes({{"empty", "F32", {0, 3}, {}},
                                {"scalar", "F64", {}, some_bytes(8, 30)},
                                {"none", "U8", {0}, {}}},
                               {{"a", "1"}, {"b", ""}}, 64));
  // No tensors at all.
  save(test::safetensors_bytes({}));

  std::printf("wrote %d seeds to %s\n", n, dir.string().c_str());
  return 0;
}
