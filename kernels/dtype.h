// Tensor element types as GGUF numbers them (ggml_type), with their block geometry.
//
// A quantized tensor row of n elements is n / block_elems blocks of block_bytes each; n must be
// a multiple of block_elems. Numeric values are part of the GGUF file format: never renumber.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vsynth::kernels {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

struct DTypeInfo {
  DType type;
  std::string_view name;  // as llama.cpp prints it: "q4_K", "f32", ...
  uint32_t block_elems;   // elements per block (1 for plain types)
  uint32_t block_bytes;   // bytes per block
  bool supported;         // our kernels compute with it
};

// Geometry of a GGUF type id; nullopt for ids this build does not know.
std::optional<DTypeInfo> dtype_info(uint32_t id);
inline std::optional<DTypeInfo> dtype_info(DType t) { return dtype_info(static_cast<uint32_t>(t)); }

}  // namespace vsynth::kernels
