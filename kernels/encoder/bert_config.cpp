#include "kernels/encoder/bert_config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace vsynth::kernels::encoder_detail {

namespace {

using nlohmann::json;

json parse_object(std::string_view text, const std::string& label) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw EncoderError(label + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw EncoderError(label + ": expected a JSON object at the top level");
  return j;
}

// An integer field in [lo, hi]; `fallback` < lo means required.
int32_t int_field(const json& j, const std::string& label, const char* key, int64_t lo, int64_t hi,
                  int64_t fallback = -1) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (fallback >= lo) return static_cast<int32_t>(fallback);
    throw EncoderError(label + ": field '" + key + "' is missing (required, an integer in [" +
                       std::to_string(lo) + ", " + std::to_string(hi) + "])");
  }
  if (!it->is_number_integer()) {
    throw EncoderError(label + ": field '" + key + "' = " + it->dump() +
                       " is not an integer (valid: [" + std::to_string(lo) + ", " +
                       std::to_string(hi) + "])");
  }
  const int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX)
                        ? INT64_MAX
                        : it->get<int64_t>();
  if (v < lo || v > hi) {
    throw EncoderError(label + ": field '" + key + "' = " + it->dump() + " is out of range [" +
                       std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return static_cast<int32_t>(v);
}

// A string field that, when present, must equal `want` (what the encoder implements).
void string_field_is(const json& j, const std::string& label, const char* key,
                     std::string_view want) {
  const auto it = j.find(key);
  if (it == j.end()) return;
  if (!it->is_string() || it->get<std::string>() != want) {
    throw EncoderError(label + ": field '" + key + "' = " + it->dump() + " is not supported (the " +
                       "encoder implements \"" + std::string(want) + "\")");
  }
}

void check_architecture(const json& j, const std::string& label) {
  const auto arch = j.find("architectures");
  if (arch == j.end()) {
    // Older configs name only the model type.
    const auto mt = j.find("model_type");
    if (mt == j.end() || !mt->is_string() || mt->get<std::string>() != "bert") {
      throw EncoderError(label + ": neither 'architectures' nor model_type \"bert\" says this is " +
                         "a BertModel (the only architecture the encoder implements)");
    }
    return;
  }
  if (arch->is_array()) {
    for (const auto& a : *arch) {
      if (a.is_string() && a.get<std::string>() == "BertModel") return;
    }
  }
  throw EncoderError(label + ": field 'architectures' = " + arch->dump() +
                     " does not name \"BertModel\" (the only architecture the encoder implements)");
}

}  // namespace

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw EncoderError(path.string() + ": cannot open (missing or unreadable)");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw EncoderError(path.string() + ": read error");
  return std::move(ss).str();
}

EncoderConfig parse_bert_config(std::string_view json_text, const std::string& label) {
  const json j = parse_object(json_text, label);
  check_architecture(j, label);
  // HF's BertConfig defaults: hidden_act gelu (the erf form), absolute positions.
  string_field_is(j, label, "hidden_act", "gelu");
  string_field_is(j, label, "position_embedding_type", "absolute");

  // Ranges: what fits the int32 index arithmetic of the forward pass with room to spare.
  EncoderConfig c;
  c.vocab_size = int_field(j, label, "vocab_size", 1, 1 << 24);
  c.hidden = int_field(j, label, "hidden_size", 1, 16384);
  c.layers = int_field(j, label, "num_hidden_layers", 1, 256);
  c.heads = int_field(j, label, "num_attention_heads", 1, c.hidden);
  c.intermediate = int_field(j, label, "intermediate_size", 1, 65536);
  c.max_positions = int_field(j, label, "max_position_embeddings", 1, 65536);
  c.type_vocab = int_field(j, label, "type_vocab_size", 1, 1024, 2);
  if (c.hidden % c.heads != 0) {
    throw EncoderError(label + ": hidden_size " + std::to_string(c.hidden) +
                       " is not a multiple of num_attention_heads " + std::to_string(c.heads));
  }

  const auto eps = j.find("layer_norm_eps");
  if (eps != j.end()) {
    const double v = eps->is_number() ? eps->get<double>() : -1.0;
    if (!(v > 0.0 && v < 1.0)) {
      throw EncoderError(label + ": field 'layer_norm_eps' = " + eps->dump() +
                         " is not a number in (0, 1)");
    }
    c.layer_norm_eps = static_cast<float>(v);
  }
  return c;
}

void check_pooling_config(std::string_view json_text, const std::string& label, int32_t hidden) {
  const json j = parse_object(json_text, label);
  const auto flag = [&](const char* key) {
    const auto it = j.find(key);
    if (it == j.end()) return false;
    if (!it->is_boolean()) {
      throw EncoderError(label + ": field '" + key + "' = " + it->dump() + " is not a boolean");
    }
    return it->get<bool>();
  };
  if (!flag("pooling_mode_mean_tokens")) {
    throw EncoderError(label + ": pooling_mode_mean_tokens is not true (the encoder implements " +
                       "mean pooling only)");
  }
  for (const char* other :
       {"pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
        "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"}) {
    if (flag(other)) {
      throw EncoderError(label + ": " + other +
                         " is true (the encoder implements mean pooling only)");
    }
  }
  const auto dim = j.find("word_embedding_dimension");
  if (dim != j.end() && (!dim->is_number_integer() || dim->get<int64_t>() != hidden)) {
    throw EncoderError(label + ": word_embedding_dimension = " + dim->dump() +
                       " differs from config.json's hidden_size " + std::to_string(hidden));
  }
}

}  // namespace vsynth::kernels::encoder_detail
