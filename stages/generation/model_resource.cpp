#include "stages/generation/model_resource.h"

#include "kernels/gguf/reader.h"
#ifdef VSYNTH_HAVE_CUDA
#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/device.h"
#endif

#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace vsynth::stages::generation {

namespace fs = std::filesystem;

fs::path resolve_model_path(const std::string& path) {
  if (!path.empty()) {
    if (!fs::exists(path)) {
      throw std::runtime_error("model file `" + path + "` does not exist (model.gguf `path`)");
    }
    return path;
  }
  if (const char* env = std::getenv("VSYNTH_MODEL"); env && *env) {
    if (!fs::exists(env)) {
      throw std::runtime_error(std::string("model file `") + env +
                               "` named by $VSYNTH_MODEL does not exist");
    }
    return env;
  }
  std::vector<fs::path> tried{fs::current_path() / kDefaultModelFile};
#ifdef VSYNTH_SOURCE_ROOT
  tried.push_back(fs::path(VSYNTH_SOURCE_ROOT) / kDefaultModelFile);
#endif
  for (const fs::path& p : tried) {
    if (fs::exists(p)) return p;
  }
  std::string where;
  for (const fs::path& p : tried) where += "\n  " + p.string();
  throw std::runtime_error(
      "no model given (model.gguf `path` is empty and $VSYNTH_MODEL is not set) and the default "
      "model is not at:" +
      where + "\nrun scripts/setup-model.sh, set VSYNTH_MODEL, or give `path`");
}

ModelSettings model_settings(const graph::Params& params) {
  ModelSettings s;
  s.path = params.string("path");
  s.device = params.string("device");
  s.kv_cache = params.string("kv_cache");
  s.threads = static_cast<int>(params.integer("threads"));
  s.context_length = static_cast<int32_t>(params.integer("context_length"));
  s.kv_pool_mb = params.integer("kv_pool_mb");
  s.batching = params.boolean("batching.enabled");
  s.batch_window_ms = params.number("batching.window_ms");
  s.batch_max_tokens = static_cast<int32_t>(params.integer("batching.max_batch_tokens"));
  s.batch_max_rows = static_cast<int32_t>(params.integer("batching.max_rows"));
  return s;
}

std::shared_ptr<ModelResource> load_model(const ModelSettings& s) {
  if (s.device != "auto" && s.device != "cpu" && s.device != "cuda") {
    throw std::runtime_error("model.gguf: unknown device `" + s.device +
                             "` (valid: auto, cpu, cuda)");
  }
  bool use_cuda = false;
#ifdef VSYNTH_HAVE_CUDA
  if (s.device == "cuda") {
    use_cuda = true;  // CudaModel::load says why when there is no usable device
  } else if (s.device == "auto") {
    use_cuda = !kernels::cuda::query_devices().devices.empty();
  }
#else
  (void)use_cuda;
  if (s.device == "cuda") {
    throw std::runtime_error(
        "model.gguf: device `cuda`: this build has no CUDA backend (nvcc was not found when it "
        "was configured, or it was configured with -DVSYNTH_CUDA=OFF); use device: cpu or auto");
  }
#endif
  kernels::ModelOptions options;
  if (s.kv_cache == "f16") {
    options.kv_type = kernels::KvType::F16;
  } else if (s.kv_cache == "int8") {
    options.kv_type = kernels::KvType::Int8;
  } else {
    throw std::runtime_error("model.gguf: unknown kv_cache `" + s.kv_cache +
                             "` (valid: f16, int8)");
  }
  options.threads = s.threads;
  options.context_length = s.context_length;
  options.prefix_cache_bytes = s.kv_pool_mb << 20;
  const fs::path path = resolve_model_path(s.path);
  try {
    std::shared_ptr<kernels::Model> model;
#ifdef VSYNTH_HAVE_CUDA
    if (use_cuda) model = kernels::cuda::CudaModel::load(path, options);
#endif
    if (!model) model = kernels::Model::load(path, options);
    const kernels::GgufFile file = kernels::GgufFile::open(path);  // metadata only
    std::string chat_template(file.get_string_optional("tokenizer.chat_template").value_or(""));
    auto resource = std::make_shared<ModelResource>(model, path, std::move(chat_template));
    if (s.batching) {
      kernels::SchedulerOptions so;
      so.window_ms = s.batch_window_ms;
      so.max_batch_tokens = s.batch_max_tokens;
      so.max_rows = s.batch_max_rows;
      resource->set_scheduler(std::make_shared<kernels::Scheduler>(model, so));
    }
    return resource;
  } catch (const std::exception& e) {
    const bool pool = std::string_view(e.what()).find("prefix_cache_bytes") != std::string::npos;
    throw std::runtime_error(
        "cannot load model `" + path.string() + "`: " + e.what() +
        (pool ? " (model.gguf `kv_pool_mb`: " + std::to_string(s.kv_pool_mb) + ")"
              : std::string()));
  }
}

graph::ResourceContract model_contract() {
  graph::ResourceContract c;
  c.kind = "model.gguf";
  c.interface = "model";
  c.summary = "A GGUF decoder model (gemma3, llama, qwen2) loaded once and shared by stages";
  c.params = {
      graph::P::string("path", "",
                       "the .gguf file; empty: $VSYNTH_MODEL, else "
                       "models/gemma-3-270m-q4_k_m.gguf under the working directory, then "
                       "under the source tree"),
      graph::P::choice(
          "device", "auto", {"auto", "cpu", "cuda"},
          "where to run; auto: the first CUDA device when this build has the CUDA backend and a "
          "GPU is present, else the cpu"),
      graph::P::choice("kv_cache", "f16", {"f16", "int8"},
                       "KV cache element type (int8: half the memory, some quantization error)"),
      graph::P::integer("threads", 0, 0, 1024, "compute threads; 0: every core"),
      graph::P::integer("context_length", 4096, 0, 1 << 20,
                        "positions per sequence; 0: the model's trained length"),
      graph::P::integer(
          "kv_pool_mb", 0, 0, 1 << 20,
          "prefix KV cache in MiB (cpu backend); 0: off. Every prompt's full 32-token KV blocks "
          "are kept (shared, LRU, least recently used evicted first) so a later prompt with the "
          "same beginning (a retry, another task on the same file) evaluates only the rest. A "
          "prompt whose blocks alone need more than this (tokens / 32 x layers x one block; "
          "gemma-3-270m f16: 576 KiB per 32 tokens) falls back to a plain prefill, its record "
          "saying why; below one block of every layer the model refuses to load"),
      graph::P::boolean(
          "batching.enabled", false,
          "continuous batching (`batching: { enabled: true, window_ms: 5, max_batch_tokens: "
          "512 }`): one scheduler thread owns the model's forward passes and evaluates the "
          "sequences of every concurrent generation (items in flight, candidates, speculative "
          "verify steps) as rows of one batched step; decodes go before prefills and long "
          "prefills run in 256-token chunks between them. Outputs are unchanged (each row's "
          "logits are bit-identical to the sequence run alone). false: each generation runs its "
          "own forward passes, as before. Measured in docs/performance.md (Continuous "
          "batching)"),
      graph::P::number("batching.window_ms", 5.0, 0.0, 1000.0,
                       "how long the oldest queued evaluation waits for others to join its step "
                       "(ms); 0: none (a step starts as soon as anything is queued)"),
      graph::P::integer("batching.max_batch_tokens", 512, 1, 1 << 16,
                        "tokens per batched step at most, every row together (a single longer "
                        "row still runs, alone)"),
      graph::P::integer(
          "batching.max_rows", 16, 1, 1024,
          "sequences per batched step at most (generate.llm's `workers` default to it). More "
          "rows pay while a step's cost grows slower than its rows: on a 2-core CPU that stops "
          "near 8 (16 rows cost twice 8; docs/performance.md), past which a burst of requests "
          "only shares the same throughput among more of them, raising their mean latency"),
  };
  return c;
}

}  // namespace vsynth::stages::generation
