// `vsynth generate`: one prompt through the model, the answer streamed to stdout as it decodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vsynth::cli {

struct GenerateArgs {
  std::string prompt;
  std::string prompt_file;  // read the prompt from here instead ("-": stdin), for any length
  int max_new_tokens = 256;
  uint64_t seed = 0;
  float temperature = 0.2f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  std::vector<std::string> stop;
  std::string draft = "none";  // speculative decoding: none | ngram | model | self
  int max_draft = 4;
  std::string draft_model;  // --draft model: its GGUF
  int self_layers = 0;      // --draft self: as generate.llm's speculative.self_layers
  int self_vocab = 32768;   // --draft self: as speculative.self_vocab
  std::string model;        // empty: $VSYNTH_MODEL, then the default model
  std::string kv_cache = "f16";
  std::string device = "auto";  // auto | cpu | cuda
  int threads = 0;
  bool raw = false;    // continue the text as is (no chat template)
  bool chat = false;   // wrap it in the chat template even for a base model
  bool quiet = false;  // no statistics line on stderr
};

int cmd_generate(const GenerateArgs& args);

}  // namespace vsynth::cli
