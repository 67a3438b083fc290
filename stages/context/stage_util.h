// Helpers the context.* stages share: task lookups.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "graph/stage.h"

namespace vsynth::stages::context {

// The value at `p` in `data`, or null when absent.
const nlohmann::json* lookup(const nlohmann::json& data, const nlohmann::json::json_pointer& p);

}  // namespace vsynth::stages::context
