// Writes a starting corpus for fuzz_gguf into the folder given as argv[1]: a few small valid
// GGUF files covering every value type, nested arrays, several tensor types, version 2 and a
// non-default alignment. Mutating valid files reaches deep parser states far sooner than
// random bytes do.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/gguf/writer.h"
#include "tests/kernels/gguf_test_util.h"

using namespace vsynth::kernels;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  int n = 0;
  auto save = [&](const GgufWriter& w) {
    w.write(dir / ("seed-" + std::to_string(n++) + ".gguf"));
  };

  save(test::small_writer());

  GgufWriter v2 = test::small_writer();
  v2.set_version(2);
  save(v2);

  GgufWriter all(64);
  all.add("u8", uint8_t{1});
  all.add("i8", int8_t{-1});
  all.add("u16", uint16_t{2});
  all.add("i16", int16_t{-2});
  all.add("u32", uint32_t{3});
  all.add("i32", int32_t{-3});
  all.add("f32", 0.5f);
  all.add("bool", true);
  all.add("u64", uint64_t{4});
  all.add("i64", int64_t{-4});
  all.add("f64", 0.25);
  all.add("str", "text");
  all.add_array("strs", std::vector<std::string>{"a", "bc"});
  all.add_array("bools", std::vector<bool>{true, false});
  const std::vector<GgufMetaValue> rows = {GgufMetaValue::array(std::vector<int32_t>{1, 2})};
  all.add_value("nested", GgufMetaValue::array_of_arrays(rows));
  all.add_tensor("q4k", DType::Q4_K, {256}, test::some_bytes(144, 4));
  all.add_tensor("q6k", DType::Q6_K, {256}, test::some_bytes(210, 5));
  all.add_tensor("bf16", DType::BF16, {2, 2, 2, 2}, test::some_bytes(32, 6));
  save(all);

  GgufWriter meta_only;
  meta_only.add("general.architecture", "none");
  save(meta_only);

  std::printf("wrote %d seeds to %s\n", n, dir.string().c_str());
  return 0;
}
