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
  const int i = kernel_type_index(t);
  return i < 0 ? ActFormat::F32 : kTypeTraits[i].act;
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

const TypeKernels& type_kernels(const KernelTable& table, DType t) {
  static constexpr TypeKernels kNone{
      .type = DType::F32, .dot = nullptr, .dot_il = nullptr, .unpacked = {}, .grouped = {}};
  const int i = kernel_type_index(t);
  return i < 0 ? kNone : table.types[i];
}

namespace {

// One line of kernel_table_gaps when `has` differs from `wants`.
void check(std::vector<std::string>& gaps, const KernelTable& table, DType t, const char* entry,
           bool has, bool wants) {
  if (has == wants) return;
  const auto info = dtype_info(t);
  std::string line = std::string(table.name) + ": ";
  line += info ? std::string(info->name) : std::to_string(static_cast<uint32_t>(t));
  line += has ? " has a " + std::string(entry) + ", which its traits and the table's forms rule out"
              : " has no " + std::string(entry);
  gaps.push_back(std::move(line));
}

}  // namespace

std::vector<std::string> kernel_table_gaps(const KernelTable& table) {
  std::vector<std::string> gaps;
  const Forms& f = table.forms;
  const auto table_entry = [&](const char* entry, bool has, bool wants) {
    if (has != wants) {
      gaps.push_back(std::string(table.name == nullptr ? "(unnamed)" : table.name) + ": " + entry +
                     (has ? " is set without its form" : " is missing"));
    }
  };
  table_entry("name", table.name != nullptr, true);
  if (table.name == nullptr) return gaps;
  table_entry("quantize_a32", table.quantize_a32 != nullptr, true);
  table_entry("quantize_a256", table.quantize_a256 != nullptr, true);
  table_entry("f16_to_f32", table.f16_to_f32 != nullptr, true);
  table_entry("f32_to_f16", table.f32_to_f16 != nullptr, true);
  table_entry("quantize_a32il", table.quantize_a32il != nullptr, f.il);
  table_entry("quantize_a256il", table.quantize_a256il != nullptr, f.il);
  for (int i = 0; i < kNumKernelTypes; ++i) {
    const TypeTraits& tt = kTypeTraits[i];
    const TypeKernels& r = table.types[i];
    const DType t = tt.type;
    if (r.type != t) {
      check(gaps, table, t, "row in kTypeTraits' order", false, true);
      continue;
    }
    const bool quant = tt.act != ActFormat::F32;
    check(gaps, table, t, "dot", r.dot != nullptr, true);
    check(gaps, table, t, "dot_il", r.dot_il != nullptr, f.il && quant);
    check(gaps, table, t, "unpacked.unpack", r.unpacked.unpack != nullptr, f.unpacked && quant);
    check(gaps, table, t, "unpacked.dot_rows", r.unpacked.dot_rows != nullptr, f.unpacked && quant);
    check(gaps, table, t, "grouped.dot", r.grouped.dot != nullptr, f.grouped && tt.grouped);
    check(gaps, table, t, "grouped.dot_rows", r.grouped.dot_rows != nullptr,
          f.grouped && tt.grouped);
    check(gaps, table, t, "grouped.dot_pairs", r.grouped.dot_pairs != nullptr,
          f.pairs && tt.grouped);
    check(gaps, table, t, "grouped.unpacked.unpack", r.grouped.unpacked.unpack != nullptr,
          f.unpacked && tt.grouped);
    check(gaps, table, t, "grouped.unpacked.dot_rows", r.grouped.unpacked.dot_rows != nullptr,
          f.unpacked && tt.grouped);
  }
  return gaps;
}

}  // namespace vsynth::kernels::detail
