#include "stages/generation/task_decode.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "stages/facets/decode_fields.h"

namespace vsynth::stages::generation {

namespace {

using facets::DecodeField;
using facets::DecodeType;

[[noreturn]] void bad(const graph::Item& item, const std::string& key, const std::string& what,
                      const nlohmann::json& got) {
  throw std::invalid_argument(
      fmt::format("task `{}`: /decode/{} must be {} (got {})", item.id(), key, what, got.dump()));
}

// An integer limit as written: seed's 2^64 - 1 is past what a double converts back exactly.
std::string integer_limit(double x) {
  return x >= 1.8e19 ? std::string("18446744073709551615")
                     : std::to_string(static_cast<int64_t>(x));
}

// The value checked against its row of the table (decode_fields.h).
double number(const graph::Item& item, const DecodeField& f, const nlohmann::json& v) {
  const std::string key(f.name);
  if (f.type == DecodeType::Integer) {
    const std::string what =
        fmt::format("an integer in [{}, {}]", integer_limit(f.min), integer_limit(f.max));
    if (!v.is_number_integer()) bad(item, key, what, v);
    if (v.is_number_unsigned()) {
      // Compared as unsigned: seed's 2^64 - 1 does not survive a round trip through double.
      const uint64_t u = v.get<uint64_t>();
      if (static_cast<double>(u) < f.min || (f.max < 1.8e19 && static_cast<double>(u) > f.max)) {
        bad(item, key, what, v);
      }
      return static_cast<double>(u);
    }
    const auto i = v.get<int64_t>();
    if (static_cast<double>(i) < f.min || static_cast<double>(i) > f.max) bad(item, key, what, v);
    return static_cast<double>(i);
  }
  if (!v.is_number() || v.get<double>() < f.min || v.get<double>() > f.max) {
    bad(item, key, fmt::format("a number in [{}, {}]", f.min, f.max), v);
  }
  return v.get<double>();
}

}  // namespace

TaskDecode task_decode(const graph::Item& item, const kernels::GenerateOptions& stage,
                       const LineStops& stage_lines) {
  TaskDecode t;
  t.decode = stage;
  t.lines = stage_lines;
  const nlohmann::json& data = item.task().data;
  const auto it = data.find("decode");
  if (it == data.end() || it->is_null()) return t;
  if (!it->is_object()) {
    throw std::invalid_argument(
        fmt::format("task `{}`: /decode must be an object (got {})", item.id(), it->dump()));
  }
  for (const auto& [key, v] : it->items()) {
    const DecodeField* f = facets::find_decode_field(key);
    if (!f) {
      throw std::invalid_argument(
          fmt::format("task `{}`: /decode/{} is not a decoding setting (valid: {})", item.id(), key,
                      facets::decode_field_names()));
    }
    switch (f->type) {
      case DecodeType::Boolean:
        if (!v.is_boolean()) bad(item, key, "true or false", v);
        break;
      case DecodeType::Strings:
        if (!v.is_array()) bad(item, key, "an array of non-empty strings", v);
        for (const auto& s : v) {
          if (!s.is_string() || s.get_ref<const std::string&>().empty()) {
            bad(item, key, "an array of non-empty strings", v);
          }
        }
        break;
      case DecodeType::Integer:
      case DecodeType::Number:
        number(item, *f, v);
        break;
    }
    if (key == "max_new_tokens") {
      t.decode.max_new_tokens = v.get<int32_t>();
    } else if (key == "temperature") {
      t.decode.sampler.temperature = v.get<float>();
    } else if (key == "top_p") {
      t.decode.sampler.top_p = v.get<float>();
    } else if (key == "stop") {
      for (const auto& s : v) t.decode.stop.push_back(s.get<std::string>());
    } else if (key == "seed") {
      t.seed = v.get<uint64_t>();
    } else if (key == "warmup") {
      t.warmup = v.get<bool>();
    } else if (key == "n_indent") {
      t.lines.n_indent = v.get<int32_t>();
      t.task_n_indent = true;
    } else if (key == "single_line") {
      t.lines.single_line = v.get<bool>();
    } else if (key == "max_predict_ms") {
      t.lines.max_predict_ms = v.get<int64_t>();
    } else {
      throw std::logic_error("/decode field `" + key + "` is in the table but not applied");
    }
  }
  return t;
}

}  // namespace vsynth::stages::generation
