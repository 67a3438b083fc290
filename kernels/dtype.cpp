#include "kernels/dtype.h"

#include <array>

namespace vsynth::kernels {

namespace {
// Block sizes from the GGML block layouts (d/dmin are fp16): see docs/architecture.md.
constexpr std::array kTypes = {
    DTypeInfo{DType::F32, "f32", 1, 4, true},       DTypeInfo{DType::F16, "f16", 1, 2, true},
    DTypeInfo{DType::Q4_0, "q4_0", 32, 18, true},   DTypeInfo{DType::Q4_1, "q4_1", 32, 20, false},
    DTypeInfo{DType::Q5_0, "q5_0", 32, 22, true},   DTypeInfo{DType::Q5_1, "q5_1", 32, 24, false},
    DTypeInfo{DType::Q8_0, "q8_0", 32, 34, true},   DTypeInfo{DType::Q8_1, "q8_1", 32, 36, false},
    DTypeInfo{DType::Q2_K, "q2_K", 256, 84, false}, DTypeInfo{DType::Q3_K, "q3_K", 256, 110, false},
    DTypeInfo{DType::Q4_K, "q4_K", 256, 144, true}, DTypeInfo{DType::Q5_K, "q5_K", 256, 176, true},
    DTypeInfo{DType::Q6_K, "q6_K", 256, 210, true}, DTypeInfo{DType::Q8_K, "q8_K", 256, 292, false},
    DTypeInfo{DType::I8, "i8", 1, 1, false},        DTypeInfo{DType::I16, "i16", 1, 2, false},
    DTypeInfo{DType::I32, "i32", 1, 4, false},      DTypeInfo{DType::I64, "i64", 1, 8, false},
    DTypeInfo{DType::F64, "f64", 1, 8, false},      DTypeInfo{DType::BF16, "bf16", 1, 2, true},
};
}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t id) {
  for (const auto& t : kTypes) {
    if (static_cast<uint32_t>(t.type) == id) return t;
  }
  return std::nullopt;
}

}  // namespace vsynth::kernels
