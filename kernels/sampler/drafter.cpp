#include "kernels/sampler/drafter.h"

namespace vsynth::kernels {

const char* to_string(DrafterKind k) {
  switch (k) {
    case DrafterKind::None:
      return "none";
    case DrafterKind::Ngram:
      return "ngram";
  }
  return "?";
}

std::optional<DrafterKind> parse_drafter_kind(std::string_view name) {
  if (name == "none") return DrafterKind::None;
  if (name == "ngram") return DrafterKind::Ngram;
  return std::nullopt;
}

std::unique_ptr<Drafter> make_drafter(DrafterKind kind) {
  switch (kind) {
    case DrafterKind::None:
      return nullptr;
    case DrafterKind::Ngram:
      return std::make_unique<NgramDrafter>();
  }
  return nullptr;
}

}  // namespace vsynth::kernels
