// The default model (scripts/setup-model.sh puts it in models/): the facts the gemma3 loader
// relies on. Fails without the model, unless VSYNTH_ALLOW_MISSING_MODEL=1 makes it a skip
// (tests/test_skip.h).
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>

#include "kernels/gguf/reader.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;

TEST_CASE("gguf model: gemma-3-270m-q4_k_m.gguf has the expected layout", "[gguf][model]") {
  if (!vsynth::test::have_default_model()) return;
  const std::filesystem::path path = vsynth::test::default_model();
  const GgufFile f = GgufFile::open(path);
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.architecture() == "gemma3");
  CHECK(f.get<uint32_t>("gemma3.block_count") == 18);
  CHECK(f.get<uint32_t>("gemma3.embedding_length") == 640);
  CHECK(f.get<uint32_t>("gemma3.feed_forward_length") == 2048);
  CHECK(f.get<uint32_t>("gemma3.context_length") == 32768);
  CHECK(f.get<uint32_t>("gemma3.attention.head_count") == 4);
  CHECK(f.get<uint32_t>("gemma3.attention.head_count_kv") == 1);
  CHECK(f.get<uint32_t>("gemma3.attention.key_length") == 256);
  CHECK(f.get<uint32_t>("gemma3.attention.value_length") == 256);
  CHECK(f.get<uint32_t>("gemma3.attention.sliding_window") == 512);
  CHECK(f.get<float>("gemma3.attention.layer_norm_rms_epsilon") == 1e-6f);
  CHECK(f.get<float>("gemma3.rope.freq_base") == 1e6f);

  CHECK(f.get_string("tokenizer.ggml.model") == "llama");
  CHECK(f.get_string_array("tokenizer.ggml.tokens").size() == 262144);
  CHECK(f.get_array<float>("tokenizer.ggml.scores").size() == 262144);
  CHECK(f.get_array<int32_t>("tokenizer.ggml.token_type").size() == 262144);
  CHECK(f.get<uint32_t>("tokenizer.ggml.bos_token_id") == 2);
  CHECK(f.get<uint32_t>("tokenizer.ggml.eos_token_id") == 1);
  CHECK(f.get<bool>("tokenizer.ggml.add_bos_token"));

  REQUIRE(f.tensors().size() == 236);
  const GgufTensor& embd = f.tensor("token_embd.weight");
  CHECK(embd.n_dims == 2);
  CHECK(embd.ne[0] == 640);
  CHECK(embd.ne[1] == 262144);
  CHECK(embd.dtype() == DType::Q8_0);
  CHECK(f.find_tensor("output.weight") == nullptr);  // tied to token_embd
  CHECK(f.tensor("blk.17.attn_q.weight").ne[1] == 1024);
  CHECK(f.tensor("blk.0.attn_k_norm.weight").ne[0] == 256);

  // Q4_K_M on a 640-wide model: K-quants only where ne[0] is a multiple of 256.
  const std::set<DType> allowed = {DType::F32, DType::Q4_K, DType::Q5_0, DType::Q6_K, DType::Q8_0};
  for (const GgufTensor& t : f.tensors()) {
    INFO(std::string(t.name));
    CHECK(allowed.count(t.dtype()) == 1);
    CHECK(t.data.data() == f.bytes().data() + t.file_offset);
  }
}
