// model.gguf: the `model` resource. Loads a GGUF decoder once per run (weights mmap'd) and
// shares it with every stage that names it (generate.llm now; context.prune's token counting
// and the retrieval encoder later).
//
//   resources:
//     coder: { use: model.gguf, with: { path: "${VSYNTH_MODEL:-}", kv_cache: f16, threads: 2 } }
//
// Parameters (defaults in model_contract()):
//   path            the .gguf file; empty: $VSYNTH_MODEL, else models/gemma-3-270m-q4_k_m.gguf
//                   under the working directory, then under the source tree
//   device          auto | cpu | cuda (cuda is refused until the CUDA backend lands; auto = cpu)
//   kv_cache        f16 | int8. Default f16. Measured on the default model (700 tokens of C++
//                   teacher-forced through both): int8 gives mean KL(f16 || int8) 0.011 nats per
//                   token and flips the top-1 token at 5.4% of positions (perplexity 11.21 vs
//                   11.17: a wash), at the same speed (one 256-wide KV head per layer is
//                   ~18 KiB per token in f16, so the cache is never the bottleneck here). Pick
//                   int8 for long contexts or many concurrent sequences of a larger model.
//   threads         compute threads (0: every core)
//   context_length  positions per sequence (0: the model's trained length)
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "graph/contract.h"
#include "graph/params.h"
#include "graph/resource.h"
#include "kernels/engine.h"

namespace vsynth::stages::generation {

inline constexpr const char* kDefaultModelFile = "models/gemma-3-270m-q4_k_m.gguf";

class ModelResource : public graph::Resource {
 public:
  ModelResource(std::shared_ptr<kernels::Model> model, std::filesystem::path path,
                std::string chat_template = {})
      : model_(std::move(model)),
        path_(std::move(path)),
        chat_template_(std::move(chat_template)) {}
  kernels::Model& model() const { return *model_; }
  std::shared_ptr<kernels::Model> share() const { return model_; }
  const std::filesystem::path& path() const { return path_; }
  // The GGUF's tokenizer.chat_template (Jinja text, never executed), empty when absent. Its
  // absence marks a base (pretrained) model: generate.llm's `auto` mode then prompts by
  // completion, the way base models are evaluated, instead of with a chat turn.
  const std::string& chat_template() const { return chat_template_; }
  bool chat_tuned() const { return !chat_template_.empty(); }

 private:
  std::shared_ptr<kernels::Model> model_;
  std::filesystem::path path_;
  std::string chat_template_;
};

// The model file to load: `path` when non-empty (it must exist), else $VSYNTH_MODEL, else the
// default file under the working directory, then under the source tree. Throws
// std::runtime_error naming every place it looked.
std::filesystem::path resolve_model_path(const std::string& path);

struct ModelSettings {
  std::string path;
  std::string device = "auto";
  std::string kv_cache = "f16";
  int threads = 0;
  int32_t context_length = 4096;
};
ModelSettings model_settings(const graph::Params& params);

// Resolves, checks the device and loads. Throws std::runtime_error with the file and reason.
std::shared_ptr<ModelResource> load_model(const ModelSettings& settings);

graph::ResourceContract model_contract();

}  // namespace vsynth::stages::generation
