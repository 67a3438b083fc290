#include "stages/facets/decode_fields.h"

#include <array>
#include <stdexcept>

namespace vsynth::stages::facets {

namespace {

constexpr double kU64Max = 18446744073709551615.0;

constexpr std::array kFields = {
    DecodeField{"max_new_tokens", DecodeType::Integer, 1, 32768,
                "tokens generated per candidate at most"},
    DecodeField{"temperature", DecodeType::Number, 0.0, 5.0,
                "sampling temperature for attempt 1 (retries add the stage's step); 0: greedy"},
    DecodeField{"top_p", DecodeType::Number, 0.01, 1.0,
                "nucleus: sample from the smallest set of tokens with this mass; 1: off"},
    DecodeField{"stop", DecodeType::Strings, 0, 0,
                "stop strings added to the stage's: the text ends before the first match"},
    DecodeField{"seed", DecodeType::Integer, 0, kU64Max,
                "the candidates' seeds mix it with attempt and index, not with the task id"},
    DecodeField{"warmup", DecodeType::Boolean, 0, 0,
                "true: only prefill the prompt (into the model's prefix KV pool), generate "
                "nothing"},
    DecodeField{"n_indent", DecodeType::Integer, 0, 1024,
                "after the first line, a line indented by fewer than n_indent spaces or tabs "
                "(an empty line too) ends the suggestion before it (llama.cpp's n_indent); 0: "
                "off"},
    DecodeField{"single_line", DecodeType::Boolean, 0, 0,
                "true: the suggestion ends at the first line end that follows non-blank text"},
    DecodeField{"max_predict_ms", DecodeType::Integer, 0, 3600000,
                "milliseconds of generation (after the prompt's prefill) at most: then the "
                "suggestion ends, cut back to its last complete line when it has one (finish "
                "`time`; by its nature the only setting whose result depends on the machine's "
                "speed); 0: no limit"},
};

}  // namespace

const char* to_string(DecodeType t) {
  switch (t) {
    case DecodeType::Integer:
      return "integer";
    case DecodeType::Number:
      return "number";
    case DecodeType::Boolean:
      return "boolean";
    case DecodeType::Strings:
      return "strings";
  }
  return "?";
}

std::span<const DecodeField> decode_fields() {
  return kFields;
}

const DecodeField* find_decode_field(std::string_view name) {
  for (const DecodeField& f : kFields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const DecodeField& decode_field(std::string_view name) {
  if (const DecodeField* f = find_decode_field(name)) return *f;
  throw std::logic_error("no /decode field `" + std::string(name) + "`");
}

std::string decode_field_names() {
  std::string s;
  for (const DecodeField& f : kFields) {
    if (!s.empty()) s += ", ";
    s += f.name;
  }
  return s;
}

}  // namespace vsynth::stages::facets
