#include "kernels/dtype.h"

#include <array>

namespace vsynth::kernels {

namespace {
// Block sizes from the GGML block layouts (d/dmin are fp16): see docs/architecture.md.
constexpr std::array kTypes = {
    DTypeInfo{
        .type = DType::F32, .name = "f32", .block_elems = 1, .block_bytes = 4, .supported = true},
    DTypeInfo{
        .type = DType::F16, .name = "f16", .block_elems = 1, .block_bytes = 2, .supported = true},
    DTypeInfo{.type = DType::Q4_0,
              .name = "q4_0",
              .block_elems = 32,
              .block_bytes = 18,
              .supported = true},
    DTypeInfo{.type = DType::Q4_1,
              .name = "q4_1",
              .block_elems = 32,
              .block_bytes = 20,
              .supported = false},
    DTypeInfo{.type = DType::Q5_0,
              .name = "q5_0",
              .block_elems = 32,
              .block_bytes = 22,
              .supported = true},
    DTypeInfo{.type = DType::Q5_1,
              .name = "q5_1",
              .block_elems = 32,
              .block_bytes = 24,
              .supported = false},
    DTypeInfo{.type = DType::Q8_0,
              .name = "q8_0",
              .block_elems = 32,
              .block_bytes = 34,
              .supported = true},
    DTypeInfo{.type = DType::Q8_1,
              .name = "q8_1",
              .block_elems = 32,
              .block_bytes = 36,
              .supported = false},
    DTypeInfo{.type = DType::Q2_K,
              .name = "q2_K",
              .block_elems = 256,
              .block_bytes = 84,
              .supported = false},
    DTypeInfo{.type = DType::Q3_K,
              .name = "q3_K",
              .block_elems = 256,
              .block_bytes = 110,
              .supported = false},
    DTypeInfo{.type = DType::Q4_K,
              .name = "q4_K",
              .block_elems = 256,
              .block_bytes = 144,
              .supported = true},
    DTypeInfo{.type = DType::Q5_K,
              .name = "q5_K",
              .block_elems = 256,
              .block_bytes = 176,
              .supported = true},
    DTypeInfo{.type = DType::Q6_K,
              .name = "q6_K",
              .block_elems = 256,
              .block_bytes = 210,
              .supported = true},
    DTypeInfo{.type = DType::Q8_K,
              .name = "q8_K",
              .block_elems = 256,
              .block_bytes = 292,
              .supported = false},
    DTypeInfo{
        .type = DType::I8, .name = "i8", .block_elems = 1, .block_bytes = 1, .supported = false},
    DTypeInfo{
        .type = DType::I16, .name = "i16", .block_elems = 1, .block_bytes = 2, .supported = false},
    DTypeInfo{
        .type = DType::I32, .name = "i32", .block_elems = 1, .block_bytes = 4, .supported = false},
    DTypeInfo{
        .type = DType::I64, .name = "i64", .block_elems = 1, .block_bytes = 8, .supported = false},
    DTypeInfo{
        .type = DType::F64, .name = "f64", .block_elems = 1, .block_bytes = 8, .supported = false},
    DTypeInfo{
        .type = DType::BF16, .name = "bf16", .block_elems = 1, .block_bytes = 2, .supported = true},
};
}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t id) {
  for (const auto& t : kTypes) {
    if (static_cast<uint32_t>(t.type) == id) return t;
  }
  return std::nullopt;
}

}  // namespace vsynth::kernels
