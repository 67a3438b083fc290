#include "stages/generation/task_decode.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace vsynth::stages::generation {

namespace {

[[noreturn]] void bad(const graph::Item& item, const std::string& key, const std::string& what,
                      const nlohmann::json& got) {
  throw std::invalid_argument(
      fmt::format("task `{}`: /decode/{} must be {} (got {})", item.id(), key, what, got.dump()));
}

double number_in(const graph::Item& item, const std::string& key, const nlohmann::json& v,
                 double lo, double hi) {
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi) {
    bad(item, key, fmt::format("a number in [{}, {}]", lo, hi), v);
  }
  return v.get<double>();
}

}  // namespace

TaskDecode task_decode(const graph::Item& item, const kernels::GenerateOptions& stage) {
  TaskDecode t;
  t.decode = stage;
  const nlohmann::json& data = item.task().data;
  const auto it = data.find("decode");
  if (it == data.end() || it->is_null()) return t;
  if (!it->is_object()) {
    throw std::invalid_argument(
        fmt::format("task `{}`: /decode must be an object (got {})", item.id(), it->dump()));
  }
  for (const auto& [key, v] : it->items()) {
    if (key == "max_new_tokens") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 32768) {
        bad(item, key, "an integer in [1, 32768]", v);
      }
      t.decode.max_new_tokens = static_cast<int32_t>(v.get<int64_t>());
    } else if (key == "temperature") {
      t.decode.sampler.temperature = static_cast<float>(number_in(item, key, v, 0.0, 5.0));
    } else if (key == "top_p") {
      t.decode.sampler.top_p = static_cast<float>(number_in(item, key, v, 0.01, 1.0));
    } else if (key == "stop") {
      if (!v.is_array()) bad(item, key, "an array of non-empty strings", v);
      for (const auto& s : v) {
        if (!s.is_string() || s.get_ref<const std::string&>().empty()) {
          bad(item, key, "an array of non-empty strings", v);
        }
        t.decode.stop.push_back(s.get<std::string>());
      }
    } else if (key == "seed") {
      if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) {
        bad(item, key, "a non-negative integer", v);
      }
      t.seed = v.get<uint64_t>();
    } else if (key == "warmup") {
      if (!v.is_boolean()) bad(item, key, "true or false", v);
      t.warmup = v.get<bool>();
    } else {
      throw std::invalid_argument(fmt::format(
          "task `{}`: /decode/{} is not a decoding setting (valid: max_new_tokens, temperature, "
          "top_p, stop, seed, warmup)",
          item.id(), key));
    }
  }
  return t;
}

}  // namespace vsynth::stages::generation
