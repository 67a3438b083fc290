// A copy of a JSON value cut to a size the report's task table can hold: strings longer than
// `max_string` bytes are cut (at a UTF-8 boundary, saying how much was cut), arrays keep their
// first `max_items` elements, and the whole copy stops growing at about `max_total` bytes. The
// table of a run with huge candidates or sandbox output stays bounded, field by field.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

namespace vsynth::cli::report {

struct JsonBudget {
  std::size_t max_string = 4096;    // bytes per string
  std::size_t max_items = 32;       // elements per array
  std::size_t max_total = 1 << 16;  // bytes per copied value, roughly (strings + keys)
};

nlohmann::json bounded_copy(const nlohmann::json& v, const JsonBudget& budget);

}  // namespace vsynth::cli::report
