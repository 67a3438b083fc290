// Reading a sentence-transformers BERT folder's config (internal to kernels/encoder): config.json
// (the BertModel hyper-parameters) and, when present, 1_Pooling/config.json (must be mean
// pooling). Every problem is an EncoderError naming the file, the field and the valid range.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "kernels/encoder/bert.h"

namespace vsynth::kernels::encoder_detail {

// Parses config.json's text (`label` names it in errors) into an EncoderConfig.
EncoderConfig parse_bert_config(std::string_view json_text, const std::string& label);

// Checks 1_Pooling/config.json's text: mean pooling only, word_embedding_dimension == hidden.
void check_pooling_config(std::string_view json_text, const std::string& label, int32_t hidden);

// The whole file as bytes; EncoderError naming the path when it cannot be read.
std::string read_text_file(const std::filesystem::path& path);

}  // namespace vsynth::kernels::encoder_detail
