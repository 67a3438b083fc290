#include "kernels/gguf/types.h"

#include <array>

namespace vsynth::kernels {

namespace {
struct TypeRow {
  std::string_view name;
  uint32_t size;  // bytes; 0 = variable (string, array)
};
// Indexed by the GGUF type id.
constexpr std::array<TypeRow, kGgufTypeCount> kRows = {{
    {"u8", 1},
    {"i8", 1},
    {"u16", 2},
    {"i16", 2},
    {"u32", 4},
    {"i32", 4},
    {"f32", 4},
    {"bool", 1},
    {"string", 0},
    {"array", 0},
    {"u64", 8},
    {"i64", 8},
    {"f64", 8},
}};
}  // namespace

std::optional<GgufType> gguf_type_from_id(uint32_t id) {
  if (id >= kGgufTypeCount) return std::nullopt;
  return static_cast<GgufType>(id);
}

std::string_view gguf_type_name(GgufType t) {
  const auto id = static_cast<uint32_t>(t);
  return id < kGgufTypeCount ? kRows[id].name : std::string_view("invalid");
}

uint32_t gguf_type_size(GgufType t) {
  const auto id = static_cast<uint32_t>(t);
  return id < kGgufTypeCount ? kRows[id].size : 0;
}

}  // namespace vsynth::kernels
