#include "tools/vsynth/serve/dialects/dialect.h"

namespace vsynth::serve {

std::optional<nlohmann::json> Dialect::stage_event(std::string_view, std::string_view) const {
  return std::nullopt;
}

nlohmann::json Dialect::retraction(std::size_t bytes) const {
  return {{"vsynth", {{"retract", bytes}}}};
}

const Dialect& dialect_for(Endpoint e) {
  switch (e) {
    case Endpoint::Completions:
      return openai_completions();
    case Endpoint::Chat:
      return openai_chat();
    case Endpoint::Infill:
      return llama_infill();
    case Endpoint::Completion:
      return llama_completion();
    case Endpoint::Tabby:
      return tabby_completions();
    case Endpoint::Tasks:
      return vsynth_tasks();
  }
  return openai_completions();
}

}  // namespace vsynth::serve
