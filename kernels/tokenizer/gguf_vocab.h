// Reads a tokenizer vocabulary from GGUF metadata (tokenizer.ggml.*).
#pragma once

#include "kernels/gguf/reader.h"
#include "kernels/tokenizer/vocab.h"

namespace vsynth::kernels {

// Fills a Vocab from `file`'s tokenizer.ggml.* keys:
//   model (string), pre (string), tokens (string[]), scores (f32[] or i32[]),
//   token_type (i32[]), merges (string[], gpt2 only), bos/eos/unknown/padding/eot_token_id
//   (any integer type), add_bos_token / add_eos_token / add_space_prefix (bool).
// Absent special ids take llama.cpp's defaults for the model kind (llama: bos 1, eos 2, unk 0;
// gpt2: bos = eos = 11) when those fall inside the vocabulary. Throws TokenizerError naming the
// file and key for a missing key, an array of the wrong element type, a length mismatch, or a
// special id outside the vocabulary.
Vocab load_vocab(const GgufFile& file);

}  // namespace vsynth::kernels
