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

size_t block_bytes(DType t) {
  return t == DType::Q8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ5_0);
}

// Where block b's bytes lie in a grouped row of nbp blocks (blocks.h), for a block of type t:
// its fp16 scale, and the 4 bytes of dword i (i in 0..7 for Q8_0's codes 4i..4i+3; 0..3 for
// Q5_0's nibble bytes 4i..4i+3) and, for Q5_0, its 4 bit-plane bytes.
struct Place {
  size_t scale;
  size_t codes;   // dword 0; dword i is at codes + step * i
  size_t step;    // bytes from one dword of the block to the next
  size_t planes;  // Q5_0: the bit-plane bytes 4j..4j+3 of block j
};
Place place(DType t, int64_t b, int64_t nbp) {
  const int64_t g = b / 8, j = b % 8;
  const size_t base = static_cast<size_t>(g) * 8 * block_bytes(t);
  const bool tail = nbp - 8 * g == 4;
  const size_t kn = tail ? 4 : 8, scales = 2 * kn;
  if (t == DType::Q8_0) {
    // Whole groups: dword i of block j at 32i + 4j. The tail: dwords i and i + 4 in the two
    // halves of vector i % 4 (q8_code_offset below).
    return {base + 2 * j, base + scales + 4 * j, 32, 0};
  }
  const size_t nibbles = kn * 16;  // 4 vectors of 32 bytes, or of 16 for the tail
  return {base + 2 * j, base + scales + 4 * j, tail ? 16u : 32u, base + scales + nibbles + 4 * j};
}

// Q8_0: byte offset of dword i of block b, whose Place is p.
size_t q8_code_offset(const Place& p, int64_t b, int i, int64_t nbp) {
  if (nbp - 8 * (b / 8) == 4) return p.codes + 32 * (i % 4) + 16 * (i / 4);
  return p.codes + p.step * i;
}

// Q5_0's fifth bits as bit planes: plane byte e of block j, bit i = bit 4i + e of qh.
void q5_planes(const uint8_t qh[4], uint8_t out[4]) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  for (int e = 0; e < 4; ++e) {
    uint8_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint8_t>(((bits >> (4 * i + e)) & 1u) << i);
    out[e] = v;
  }
}

void q5_unplanes(const uint8_t planes[4], uint8_t qh[4]) {
  uint32_t bits = 0;
  for (int e = 0; e < 4; ++e) {
    for (int i = 0; i < 8; ++i) bits |= ((planes[e] >> i) & 1u) << (4 * i + e);
  }
  std::memcpy(qh, &bits, sizeof bits);
}

void place_block(DType t, const std::byte* src, int64_t b, int64_t nbp, std::byte* dst) {
  const Place p = place(t, b, nbp);
  if (t == DType::Q8_0) {
    BlockQ8_0 blk;
    std::memcpy(&blk, src, sizeof blk);
    std::memcpy(dst + p.scale, &blk.d, sizeof blk.d);
    for (int i = 0; i < 8; ++i) std::memcpy(dst + q8_code_offset(p, b, i, nbp), blk.qs + 4 * i, 4);
    return;
  }
  BlockQ5_0 blk;
  std::memcpy(&blk, src, sizeof blk);
  std::memcpy(dst + p.scale, &blk.d, sizeof blk.d);
  for (int i = 0; i < 4; ++i) std::memcpy(dst + p.codes + p.step * i, blk.qs + 4 * i, 4);
  uint8_t planes[4];
  q5_planes(blk.qh, planes);
  std::memcpy(dst + p.planes, planes, 4);
}

void decode_block(DType t, const std::byte* row, int64_t b, int64_t nbp, float* out) {
  const Place p = place(t, b, nbp);
  if (t == DType::Q8_0) {
    BlockQ8_0 blk;
    std::memcpy(&blk.d, row + p.scale, sizeof blk.d);
    for (int i = 0; i < 8; ++i) std::memcpy(blk.qs + 4 * i, row + q8_code_offset(p, b, i, nbp), 4);
    dequantize_row(t, &blk, out, kQK32);
    return;
  }
  BlockQ5_0 blk;
  std::memcpy(&blk.d, row + p.scale, sizeof blk.d);
  for (int i = 0; i < 4; ++i) std::memcpy(blk.qs + 4 * i, row + p.codes + p.step * i, 4);
  uint8_t planes[4];
  std::memcpy(planes, row + p.planes, 4);
  q5_unplanes(planes, blk.qh);
  dequantize_row(t, &blk, out, kQK32);
}

}  // namespace

bool grouping_available(DType t) {
  return detail::type_kernels(detail::active_kernels(), t).grouped.dot != nullptr;
}

bool grouping_wanted(std::string_view env_value, DType t) {
  if (env_value.empty() || env_value == "1") return true;
  if (env_value == "0") return false;
  if (env_value != "q8_0" && env_value != "q5_0") {
    throw QuantError("VSYNTH_GROUPED='" + std::string(env_value) +
                     "' is not valid; use 1 (the default: every type), 0 (none), q8_0 or q5_0");
  }
  return env_value == dtype_info(t)->name;
}

size_t grouped_row_bytes(DType t, int64_t k) {
  return static_cast<size_t>(grouped_blocks(k)) * block_bytes(t);
}

size_t grouped_matrix_bytes(const WeightView& w) {
  const std::string what = w.name.empty() ? "weight" : "tensor '" + std::string(w.name) + "'";
  if ((w.type != DType::Q8_0 && w.type != DType::Q5_0) || w.layout != WeightLayout::Plain) {
    throw QuantError("group_weight: " + what + " is not a plain q8_0 or q5_0 matrix");
  }
  if (!grouping_available(w.type)) {
    throw QuantError("group_weight: the " + std::string(detail::active_kernels().name) +
                     " CPU path has no grouped kernel for " + what);
  }
  validate_weight_view(w);
  return grouped_row_bytes(w.type, w.cols) * static_cast<size_t>(w.rows);
}

WeightView group_weight_into(const WeightView& w, std::byte* dst) {
  grouped_matrix_bytes(w);  // the checks
  // Every block's bytes to their places, row by row (dst is zero: padding blocks have codes,
  // bits and scale 0).
  const int64_t nb = w.cols / kQK32, nbp = grouped_blocks(w.cols);
  const size_t out_row = grouped_row_bytes(w.type, w.cols), bb = block_bytes(w.type);
  const auto* src = static_cast<const std::byte*>(w.data);
  for (int64_t r = 0; r < w.rows; ++r) {
    const std::byte* row = src + static_cast<size_t>(r) * w.row_bytes;
    std::byte* out = dst + static_cast<size_t>(r) * out_row;
    for (int64_t b = 0; b < nb; ++b) place_block(w.type, row + b * bb, b, nbp, out);
  }
  WeightView g = w;
  g.layout = WeightLayout::Grouped;
  g.data = dst;
  g.row_bytes = out_row;
  return g;
}

GroupedWeight group_weight(const WeightView& w) {
  GroupedWeight gw;
  gw.data = HugeBuffer::allocate(grouped_matrix_bytes(w));
  gw.view = group_weight_into(w, gw.data.data());
  return gw;
}

void dequantize_grouped_row(DType t, const void* row, int64_t k, float* out) {
  const auto* src = static_cast<const std::byte*>(row);
  const int64_t nb = k / kQK32, nbp = grouped_blocks(k);
  // Each block rebuilt in GGUF's form and decoded by the reference decoder: the same floats.
  for (int64_t b = 0; b < nb; ++b) decode_block(t, src, b, nbp, out + b * kQK32);
}

}  // namespace vsynth::kernels
