#include "stages/context/stage_util.h"

namespace vsynth::stages::context {

const nlohmann::json* lookup(const nlohmann::json& data, const nlohmann::json::json_pointer& p) {
  return data.contains(p) ? &data.at(p) : nullptr;
}

}  // namespace vsynth::stages::context
