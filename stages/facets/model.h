// ModelResource: what a `model` resource (model.gguf, stages/generation) hands to the stages
// that name it: the loaded decoder, shared. generate.llm decodes with it; context.prune counts
// tokens with its tokenizer. Loading is generation's (generation/model_resource.h); readers need
// only this.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "graph/resource.h"
#include "kernels/engine.h"
#include "kernels/sched/scheduler.h"

namespace vsynth::stages::facets {

class ModelResource : public graph::Resource {
 public:
  ModelResource(std::shared_ptr<kernels::Model> model, std::filesystem::path path,
                std::string chat_template = {})
      : model_(std::move(model)),
        path_(std::move(path)),
        chat_template_(std::move(chat_template)) {}
  kernels::Model& model() const { return *model_; }
  // Continuous batching (model.gguf `batching.*`): when set, sequences come from the model's
  // scheduler thread, so evaluations of concurrent items share forward passes (same results).
  void set_scheduler(std::shared_ptr<kernels::Scheduler> s) { scheduler_ = std::move(s); }
  kernels::Scheduler* scheduler() const { return scheduler_.get(); }
  // A new sequence: the scheduler's when batching is on, else the engine's.
  std::unique_ptr<kernels::Sequence> new_sequence() const {
    return scheduler_ ? scheduler_->new_sequence() : model_->new_sequence();
  }
  std::unique_ptr<kernels::Sequence> new_sequence_with_prefix(
      std::span<const kernels::TokenId> prompt, kernels::PrefixUse* use) const {
    return scheduler_ ? scheduler_->new_sequence_with_prefix(prompt, use)
                      : model_->new_sequence_with_prefix(prompt, use);
  }
  std::shared_ptr<kernels::Model> share() const { return model_; }
  const std::filesystem::path& path() const { return path_; }
  // The GGUF's tokenizer.chat_template (Jinja text, never executed), empty when absent. Its
  // absence marks a base (pretrained) model: generate.llm's `auto` mode then prompts by
  // completion, the way base models are evaluated, instead of with a chat turn.
  const std::string& chat_template() const { return chat_template_; }
  bool chat_tuned() const { return !chat_template_.empty(); }

  // What the stages decoding with this model did, for the run summary (thread-safe).
  struct DecodeTally {
    int64_t generations = 0;
    int64_t drafted = 0, accepted = 0, verify_steps = 0;
    int64_t speculation_fallbacks = 0;  // generations whose drafter failed (plain decoding)
    int64_t kv_pool_fallbacks = 0;      // prefills whose cached path failed (plain prefill)
  };
  void add(const DecodeTally& t);
  // The prefix KV pool's counters (when kv_pool_mb is on) and the decode tally.
  std::vector<graph::ResourceCounter> counters() const override;

 private:
  std::shared_ptr<kernels::Model> model_;
  std::shared_ptr<kernels::Scheduler> scheduler_;
  std::filesystem::path path_;
  std::string chat_template_;
  std::atomic<int64_t> generations_{0}, drafted_{0}, accepted_{0}, verify_steps_{0},
      speculation_fallbacks_{0}, kv_pool_fallbacks_{0};
};

}  // namespace vsynth::stages::facets
