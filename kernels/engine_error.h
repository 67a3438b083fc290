// EngineError: the one exception type of kernels/ (the engine, its KV cache, tokenizers,
// loaders): unknown architecture, missing or misshapen tensors, bad options, a token id outside
// the vocabulary, a sequence past its context length, an exhausted KV pool, a rollback past
// the end. Its own header so that any part of kernels/ throws it without including the model.
#pragma once

#include <stdexcept>

namespace vsynth::kernels {

// Every engine failure; messages name what failed and what would be valid (shapes are listed
// all in one message: name, expected shape, found shape).
class EngineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace vsynth::kernels
