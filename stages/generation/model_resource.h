// model.gguf: the `model` resource. Loads a GGUF decoder once per run (weights mmap'd; on the
// CPU, or on a CUDA device when the build has the backend and `device` asks for or allows it)
// and shares it, as a facets::ModelResource (stages/facets/model.h), with every stage that
// names it: generate.llm decodes with it, context.prune counts tokens with its tokenizer.
// Its parameters are documented in model_contract() (`vsynth stages model.gguf`).
//
//   resources:
//     coder: { use: model.gguf, with: { path: "${VSYNTH_MODEL:-}", kv_cache: f16, threads: 2,
//                                       kv_pool_mb: 256 } }
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "graph/contract.h"
#include "graph/params.h"
#include "stages/facets/model.h"

namespace vsynth::stages::generation {

inline constexpr const char* kDefaultModelFile = "models/gemma-3-270m-q4_k_m.gguf";

using facets::ModelResource;

// The model file to load: `path` when non-empty (it must exist), else $VSYNTH_MODEL, else the
// default file under the working directory, then under the source tree. Throws
// std::runtime_error naming every place it looked.
std::filesystem::path resolve_model_path(const std::string& path);

struct ModelSettings {
  std::string path;
  std::string device = "auto";
  // f16 by default: measured on the default model (700 tokens of C++ teacher-forced through
  // both), int8 gives mean KL(f16 || int8) 0.011 nats per token and flips the top-1 token at
  // 5.4% of positions (perplexity 11.21 vs 11.17) at the same speed (one 256-wide KV head per
  // layer is ~18 KiB per token in f16, never the bottleneck here). int8 pays off for long
  // contexts or many concurrent sequences of a larger model.
  std::string kv_cache = "f16";
  int threads = 0;
  int32_t context_length = 4096;
  int64_t kv_pool_mb = 0;  // prefix KV cache budget in MiB; 0: off
  // Continuous batching through a scheduler thread (kernels/sched/scheduler.h); cpu backend.
  bool batching = false;
  double batch_window_ms = 5.0;
  int32_t batch_max_tokens = 512;
  int32_t batch_max_rows = 16;
};
ModelSettings model_settings(const graph::Params& params);

// Resolves, checks the device and loads. Throws std::runtime_error with the file and reason.
std::shared_ptr<ModelResource> load_model(const ModelSettings& settings);

graph::ResourceContract model_contract();

}  // namespace vsynth::stages::generation
