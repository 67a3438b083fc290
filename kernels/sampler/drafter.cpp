#include "kernels/sampler/drafter.h"

#include <stdexcept>
#include <string>

#include "kernels/sampler/model_drafter.h"

namespace vsynth::kernels {

const char* to_string(DrafterKind k) {
  switch (k) {
    case DrafterKind::None:
      return "none";
    case DrafterKind::Ngram:
      return "ngram";
    case DrafterKind::Model:
      return "model";
    case DrafterKind::Self:
      return "self";
  }
  return "?";
}

std::optional<DrafterKind> parse_drafter_kind(std::string_view name) {
  if (name == "none") return DrafterKind::None;
  if (name == "ngram") return DrafterKind::Ngram;
  if (name == "model") return DrafterKind::Model;
  if (name == "self") return DrafterKind::Self;
  return std::nullopt;
}

std::unique_ptr<Drafter> make_drafter(DrafterKind kind, std::shared_ptr<const DraftModel> draft) {
  switch (kind) {
    case DrafterKind::None:
      return nullptr;
    case DrafterKind::Ngram:
      return std::make_unique<NgramDrafter>();
    case DrafterKind::Model:
    case DrafterKind::Self:
      if (!draft) {
        throw std::invalid_argument(std::string("the ") + to_string(kind) +
                                    " drafter needs a draft model (SpeculationOptions::draft)");
      }
      return std::make_unique<ModelDrafter>(std::move(draft));
  }
  return nullptr;
}

}  // namespace vsynth::kernels
