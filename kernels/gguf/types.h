// GGUF metadata value types (numbered as the file format numbers them) and their C++ mapping,
// shared by the reader and the writer.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace vsynth::kernels {

// The type tag stored before every metadata value and array element type. Never renumber.
enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,    // one byte, 0 or 1
  String = 8,  // u64 byte length + UTF-8 bytes, no terminator
  Array = 9,   // u32 element type + u64 count + elements (arrays may nest)
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

inline constexpr uint32_t kGgufTypeCount = 13;

// "u32", "string", "array", ...; "invalid" for a value outside the enum.
std::string_view gguf_type_name(GgufType t);

// The type for a raw id, nullopt when the id is not one of the 13 GGUF value types.
std::optional<GgufType> gguf_type_from_id(uint32_t id);

// Bytes of one value of a fixed-size type; 0 for String and Array.
uint32_t gguf_type_size(GgufType t);

// The C++ types that stand for the fixed-size GGUF types (exactly one C++ type per tag).
template <class T>
concept GgufScalar = std::same_as<T, uint8_t> || std::same_as<T, int8_t> ||
    std::same_as<T, uint16_t> || std::same_as<T, int16_t> || std::same_as<T, uint32_t> ||
    std::same_as<T, int32_t> || std::same_as<T, float> || std::same_as<T, bool> ||
    std::same_as<T, uint64_t> || std::same_as<T, int64_t> || std::same_as<T, double>;

template <GgufScalar T>
constexpr GgufType gguf_type_of() {
  if constexpr (std::same_as<T, uint8_t>) return GgufType::U8;
  if constexpr (std::same_as<T, int8_t>) return GgufType::I8;
  if constexpr (std::same_as<T, uint16_t>) return GgufType::U16;
  if constexpr (std::same_as<T, int16_t>) return GgufType::I16;
  if constexpr (std::same_as<T, uint32_t>) return GgufType::U32;
  if constexpr (std::same_as<T, int32_t>) return GgufType::I32;
  if constexpr (std::same_as<T, float>) return GgufType::F32;
  if constexpr (std::same_as<T, bool>) return GgufType::Bool;
  if constexpr (std::same_as<T, uint64_t>) return GgufType::U64;
  if constexpr (std::same_as<T, int64_t>) return GgufType::I64;
  if constexpr (std::same_as<T, double>) return GgufType::F64;
}

}  // namespace vsynth::kernels
