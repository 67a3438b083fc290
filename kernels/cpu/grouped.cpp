#include "kernels/cpu/grouped.h"

#include <cstring>
#include <string>

#include "kernels/cpu/cpu_path_internal.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernel_table.h"
#include "kernels/quant/quant_error.h"
#include "kernels/quant/quantize.h"

namespace vsynth::kernels {

namespace {

// Blocks of a grouped row: those of the interleaved activation row it is multiplied with
// (blocks.h: padded to whole groups of 8, except a tail of exactly 4 blocks).
int64_t grouped_blocks(int64_t k) {
  return static_cast<int64_t>(detail::act_row_bytes_a32il(k) / kQ8A32BytesPerBlock);
}

// Where block b's scale and its code 4i + e lie in a grouped row of nbp blocks.
struct Place {
  size_t scale;  // byte offset of the fp16 scale
  size_t code0;  // byte offset of code 4i (codes 4i + 1..3 follow)
};
Place place(int64_t b, int i, int64_t nbp) {
  const int64_t g = b / 8, j = b % 8;
  const size_t base = static_cast<size_t>(g) * 8 * sizeof(BlockQ8_0);
  if (nbp - 8 * g == 4) {  // the 4-block tail group: 4 scales, then 4 vectors
    return {base + 2 * j, base + 8 + 32 * (i % 4) + 16 * (i / 4) + 4 * j};
  }
  return {base + 2 * j, base + 16 + 32 * i + 4 * j};
}

}  // namespace

bool q8_0_grouping_available() {
  return detail::active_kernels().dot_q8_0_grouped != nullptr;
}

size_t q8_0_grouped_row_bytes(int64_t k) {
  return static_cast<size_t>(grouped_blocks(k)) * sizeof(BlockQ8_0);
}

GroupedWeight group_q8_0(const WeightView& w) {
  const std::string what = w.name.empty() ? "weight" : "tensor '" + std::string(w.name) + "'";
  if (w.type != DType::Q8_0 || w.layout != WeightLayout::Plain) {
    throw QuantError("group_q8_0: " + what + " is not a plain q8_0 matrix");
  }
  if (!q8_0_grouping_available()) {
    throw QuantError("group_q8_0: the " + std::string(detail::active_kernels().name) +
                     " CPU path has no grouped q8_0 kernel");
  }
  validate_weight_view(w);
  // Phase 1: the destination, zeroed (padding blocks: codes and scale 0).
  const int64_t nb = w.cols / kQK32, nbp = grouped_blocks(w.cols);
  const size_t out_row = q8_0_grouped_row_bytes(w.cols);
  GroupedWeight gw;
  gw.data.reset(new std::byte[out_row * static_cast<size_t>(w.rows)]());
  // Phase 2: every block's scale and codes to their places, row by row.
  const auto* src = static_cast<const std::byte*>(w.data);
  for (int64_t r = 0; r < w.rows; ++r) {
    const auto* blocks =
        reinterpret_cast<const BlockQ8_0*>(src + static_cast<size_t>(r) * w.row_bytes);
    std::byte* dst = gw.data.get() + static_cast<size_t>(r) * out_row;
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0 blk;
      std::memcpy(&blk, blocks + b, sizeof blk);
      std::memcpy(dst + place(b, 0, nbp).scale, &blk.d, sizeof blk.d);
      for (int i = 0; i < 8; ++i) std::memcpy(dst + place(b, i, nbp).code0, blk.qs + 4 * i, 4);
    }
  }
  gw.view = w;
  gw.view.layout = WeightLayout::Q8_0Grouped;
  gw.view.data = gw.data.get();
  gw.view.row_bytes = out_row;
  return gw;
}

void dequantize_grouped_q8_0_row(const void* row, int64_t k, float* out) {
  const auto* src = static_cast<const std::byte*>(row);
  const int64_t nb = k / kQK32, nbp = grouped_blocks(k);
  // Each block rebuilt in GGUF's form and decoded by the reference decoder: the same floats.
  for (int64_t b = 0; b < nb; ++b) {
    BlockQ8_0 blk;
    std::memcpy(&blk.d, src + place(b, 0, nbp).scale, sizeof blk.d);
    for (int i = 0; i < 8; ++i) std::memcpy(blk.qs + 4 * i, src + place(b, i, nbp).code0, 4);
    dequantize_row(DType::Q8_0, &blk, out + b * kQK32, kQK32);
  }
}

}  // namespace vsynth::kernels
