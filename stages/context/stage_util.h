// Helpers the context.* stages share: checked JSON-pointer parameters and task lookups.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "graph/stage.h"

namespace vsynth::stages::context {

// Parameter `name` of stage `ctx` as a JSON pointer; throws ContextError naming the stage and
// parameter when it is not one.
nlohmann::json::json_pointer pointer_param(const graph::StageContext& ctx, const char* name);

// The value at `p` in `data`, or null when absent.
const nlohmann::json* lookup(const nlohmann::json& data, const nlohmann::json::json_pointer& p);

}  // namespace vsynth::stages::context
