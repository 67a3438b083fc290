// The CUDA backend of the decoder engine: the same model files, configuration and Sequence
// interface as the CPU engine (kernels/engine.h), with the weights uploaded once, the KV cache
// paged in device memory, and each decode step replayed as a captured CUDA graph.
//
//   auto model = cuda::CudaModel::load("models/gemma-3-270m-q4_k_m.gguf", {.kv_type =
//   KvType::Int8}); std::unique_ptr<Sequence> seq = model->new_sequence();     // a
//   kernels::Sequence std::span<const float> logits = seq->prefill(prompt); logits =
//   seq->decode(next);                                // one graph launch + one sync TokenId t =
//   model->sample(*seq, {.temperature = 0.8f, .top_k = 40, .uniform = u}, &mask);
//
// A CudaModel is a kernels::Model (the accessors are the engine's virtual interface), so stages
// hold either backend the same way. It also keeps a host Model (mapped file, config, tokenizer;
// its CPU KV pool is allocated lazily and stays empty) for the tokenizer and the file's checks.
//
// Per step (decode): token and position are copied from pinned memory into device scratch, then
// embedding, per layer RMSNorm -> q/k/v GEMV -> q/k norm -> RoPE -> KV write -> split-K paged
// attention -> o GEMV -> fused residual add + norm -> gate/up GEMV -> gated activation -> down
// GEMV -> fused add + norm, then the output GEMV and a copy of the logits into pinned memory; all
// of it is one graph, launched and waited for once. Prefill runs the same ops eagerly over chunks
// of up to 512 tokens with cuBLAS GEMMs for the linear layers.
//
// Differences from the CPU engine (numerics are compared in tests/cuda):
//   - activations for quantized GEMVs are quantized per 32 elements (the CPU uses 256 for the
//     K-quants); GEMMs run in fp16 with fp32 accumulation; softmax without fp16 rounding.
//   - INT8 KV uses per-token key scales (CPU: per-channel per block), see ops.h KvLayout.
//   - sliding-window layers keep every block (the window is applied when reading), so
//     min_rollback_position() is always 0.
//   - head_dim_k must equal head_dim_v and be 32, 64, 128 or 256.
// Threading: as the CPU engine; steps of different sequences of one model are serialised (one
// stream and one set of activation buffers per model).
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/cuda/ops.h"
#include "kernels/engine.h"
#include "kernels/sampler/sampler.h"

namespace vsynth::kernels::cuda {

struct CudaOptions {
  int device = -1;         // -1: the first device
  bool use_graphs = true;  // capture decode steps as CUDA graphs (false: launch eagerly)
  int max_batch = 64;      // most sequences decode_batch takes at once
};

class CudaModel final : public Model {
 public:
  // Loads the file on the host (config, tokenizer, tensor checks: the CPU engine's errors), then
  // on the device: throws CudaError when there is no usable device (with the reason), when the
  // model's shapes are outside what the kernels support, or when device memory is short (with
  // the accounting of what was reserved).
  static std::shared_ptr<CudaModel> load(const std::filesystem::path& path,
                                         const ModelOptions& options = {},
                                         const CudaOptions& cuda = {});
  ~CudaModel();

  const Model& host() const;
  const ModelConfig& config() const override;
  const ModelOptions& options() const override;
  const Tokenizer& tokenizer() const override;
  const DeviceInfo& device() const;
  std::size_t weight_bytes() const override;  // bytes uploaded for weights
  KvStats kv_stats() const override;
  std::string backend() const override;  // "cuda:0 NVIDIA H200"
  // Device memory by purpose: "weights 253.4 MiB, kv 288.0 MiB, activations ..., cuda:0 ...".
  std::string memory_report() const;

  std::unique_ptr<Sequence> new_sequence() override;

  // Draws the next token of `seq` (a sequence of this model) from its last logits on the device
  // with `mask` applied (banned ids; `allowed` turns into a ban of everything else). kNoToken when
  // the mask leaves nothing. Repetition penalties are not applied on this path.
  TokenId sample(const Sequence& seq, const DeviceSampling& p, const TokenMask* mask = nullptr);

  // One decode step for several sequences of this model at once (batched GEMMs, per-row block
  // tables in attention); returns each sequence's greedy next token (argmax on the device), so
  // no logits cross PCIe. Each sequence's last_logits() becomes empty.
  std::vector<TokenId> decode_batch_greedy(std::span<Sequence* const> seqs,
                                           std::span<const TokenId> tokens);

  struct Impl;

 private:
  explicit CudaModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vsynth::kernels::cuda
