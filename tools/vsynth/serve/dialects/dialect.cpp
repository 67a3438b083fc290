#include "tools/vsynth/serve/dialects/dialect.h"

namespace vsynth::serve {

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
