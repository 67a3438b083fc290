#include "kernels/quant/kernel_table.h"

#include "kernels/quant/blocks.h"

namespace vsynth::kernels::detail {

size_t act_row_bytes(ActFormat f, int64_t k) {
  switch (f) {
    case ActFormat::F32:
      return static_cast<size_t>(k) * sizeof(float);
    case ActFormat::Q8A32:
      return static_cast<size_t>(k / kQK32) * kQ8A32BytesPerBlock;
    case ActFormat::Q8A256:
      return static_cast<size_t>(k / kQKK) * sizeof(BlockQ8A256);
  }
  return 0;
}

ActFormat act_format(DType t) {
  switch (t) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
      return ActFormat::Q8A32;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return ActFormat::Q8A256;
    default:
      return ActFormat::F32;
  }
}

size_t act_row_bytes_a32il(int64_t k) {
  const int64_t nb = k / kQK32;
  const int64_t g = kQ8A32ILGroup;
  const int64_t padded = nb % g == g / 2 ? nb : (nb + g - 1) / g * g;
  return static_cast<size_t>(padded) * kQ8A32BytesPerBlock;
}

size_t act_row_bytes_a256il(int64_t k) {
  const size_t a = kQ8A256ILRowAlign;
  return (static_cast<size_t>(k / kQKK) * sizeof(BlockQ8A256) + a - 1) / a * a;
}

DotFn dot_il_for(const KernelTable& table, DType t) {
  switch (t) {
    case DType::Q4_0:
      return table.dot_q4_0_il;
    case DType::Q5_0:
      return table.dot_q5_0_il;
    case DType::Q8_0:
      return table.dot_q8_0_il;
    case DType::Q4_K:
      return table.dot_q4_k_il;
    case DType::Q5_K:
      return table.dot_q5_k_il;
    case DType::Q6_K:
      return table.dot_q6_k_il;
    default:
      return nullptr;
  }
}

size_t unpacked_row_bytes(DType t, int64_t k) {
  if (act_format(t) == ActFormat::Q8A256) {
    return static_cast<size_t>(k / kQKK) * kUnpackedKBytesPerBlock;
  }
  const int64_t nbp = static_cast<int64_t>(act_row_bytes_a32il(k) / kQ8A32BytesPerBlock);
  // Whole groups of 8 blocks: 36 bytes a block; a 4-block tail group: 160 (blocks.h).
  return static_cast<size_t>(nbp / 8) * 8 * kUnpackedA32BytesPerBlock +
         (nbp % 8 == 4 ? kUnpackedA32TailBytes : 0);
}

size_t unpacked_bytes(DType t, int64_t k, int64_t rows) {
  return unpacked_row_bytes(t, k) * static_cast<size_t>((rows + 1) / 2 * 2);  // row pairs
}

Unpacked unpacked_for(const KernelTable& table, DType t) {
  switch (t) {
    case DType::Q4_0:
      return table.q4_0_unpacked;
    case DType::Q5_0:
      return table.q5_0_unpacked;
    case DType::Q8_0:
      return table.q8_0_unpacked;
    case DType::Q4_K:
      return table.q4_k_unpacked;
    case DType::Q5_K:
      return table.q5_k_unpacked;
    case DType::Q6_K:
      return table.q6_k_unpacked;
    default:
      return {nullptr, nullptr};
  }
}

Grouped grouped_for(const KernelTable& table, DType t) {
  switch (t) {
    case DType::Q8_0:
      return {table.dot_q8_0_grouped, table.dot_q8_0_grouped_rows, table.dot_q8_0_grouped_pairs,
              table.q8_0_grouped_unpacked};
    case DType::Q5_0:
      return {table.dot_q5_0_grouped, table.dot_q5_0_grouped_rows, table.dot_q5_0_grouped_pairs,
              table.q5_0_grouped_unpacked};
    default:
      return {nullptr, nullptr, nullptr, {nullptr, nullptr}};
  }
}

DotFn dot_for(const KernelTable& table, DType t) {
  switch (t) {
    case DType::F32:
      return table.dot_f32;
    case DType::F16:
      return table.dot_f16;
    case DType::BF16:
      return table.dot_bf16;
    case DType::Q4_0:
      return table.dot_q4_0;
    case DType::Q5_0:
      return table.dot_q5_0;
    case DType::Q8_0:
      return table.dot_q8_0;
    case DType::Q4_K:
      return table.dot_q4_k;
    case DType::Q5_K:
      return table.dot_q5_k;
    case DType::Q6_K:
      return table.dot_q6_k;
    default:
      return nullptr;
  }
}

}  // namespace vsynth::kernels::detail
