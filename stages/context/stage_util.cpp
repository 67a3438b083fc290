#include "stages/context/stage_util.h"

#include <fmt/format.h>

#include "stages/context/error.h"

namespace vsynth::stages::context {

nlohmann::json::json_pointer pointer_param(const graph::StageContext& ctx, const char* name) {
  const std::string& text = ctx.params.string(name);
  try {
    return nlohmann::json::json_pointer(text);
  } catch (const nlohmann::json::exception&) {
    throw ContextError(
        fmt::format("stage `{}` ({}): `{}` must be a JSON pointer such as /files, got `{}`",
                    ctx.name, ctx.contract.kind, name, text));
  }
}

const nlohmann::json* lookup(const nlohmann::json& data, const nlohmann::json::json_pointer& p) {
  return data.contains(p) ? &data.at(p) : nullptr;
}

}  // namespace vsynth::stages::context
