// The engine hook behind the self-draft (kernels/model/self_draft.h): a view of a loaded CPU
// model that shares its mapped weights but runs only its first `layers` layers and scores only
// the tokens in `output_rows`. Its sequences return logit rows of output_rows.size() floats:
// entry i is the score of token output_rows[i] (the view's config().vocab_size stays the full
// vocabulary, so every token id is still a valid input). Those output rows are the one copy
// (output_rows.size() x the output row's bytes); everything else points into the base's mapping.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/engine.h"

namespace vsynth::kernels {

struct ModelViewSpec {
  int32_t layers = 0;                // 1 .. base n_layers
  std::vector<TokenId> output_rows;  // token ids in logit order; empty: every token, in id order
};

// The view keeps `base` alive. Its options are the base's with the prefix cache off; its
// weight_bytes() counts the layers it runs and its output rows (what one decode step reads).
// Throws EngineError when `base` is not the CPU engine, `layers` is out of range, or a row is
// outside the vocabulary (the message names the model and the value).
std::shared_ptr<Model> make_model_view(const std::shared_ptr<const Model>& base,
                                       const ModelViewSpec& spec);

}  // namespace vsynth::kernels
