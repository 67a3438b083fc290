// Linear layers on the CPU with weights kept in their GGUF encoding (quantized or float).
//
//   matvec:   y = W x                  decode, one token (memory-bound: streams W once)
//   matmul:   Y = X W^T                prefill, n tokens (X quantized once; tiles of cached
//                                      weight rows x 64 tokens, each weight block unpacked once
//                                      for up to 16 tokens at a time)
//   get_rows: rows of W as floats      embedding lookup
//
// Inputs are quantized to 8 bits per block inside matvec/matmul when the weight type is
// quantized (see kernels/quant/blocks.h, activation blocks): the integer dot products then run
// on both operands quantized. Float weight types (F32/F16/BF16) use float inputs as they are.
// Work is split across the current oneTBB arena; the CPU code path (scalar / AVX2) is the one
// kernels/cpu/cpu_path.h selects.
//
// All functions throw QuantError (kernels/quant/quant_error.h) for a bad view or argument; the
// message names the tensor (WeightView::name) and what would be valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "kernels/dtype.h"

namespace vsynth::kernels {

// How a weight row's blocks lie: as GGUF stores them, or (Q8_0 and Q5_0 only) regrouped at load
// for the SIMD kernels (kernels/cpu/grouped.h; blocks.h gives the layouts).
enum class WeightLayout : uint8_t { Plain, Grouped };

// A 2-D weight tensor as it lies in memory (e.g. mmap'd GGUF data), not owned.
// Row r holds the `cols` input-side elements of output feature r, encoded as `type`, at
// data + r * row_bytes. In GGUF terms cols = ne[0] (contiguous) and rows = ne[1].
struct WeightView {
  DType type = DType::F32;
  int64_t rows = 0;  // output features
  int64_t cols = 0;  // input features; a multiple of the type's block size (32 or 256)
  const void* data = nullptr;
  size_t row_bytes = 0;   // bytes from one row to the next: row_size(type, cols) when dense
  std::string_view name;  // tensor name for error messages; may be empty
  WeightLayout layout = WeightLayout::Plain;
};

// A dense view (row_bytes = row_size(type, cols)). Throws QuantError on a bad type or cols.
WeightView make_weight_view(DType type, int64_t rows, int64_t cols, const void* data,
                            std::string_view name = {});

// Throws QuantError if w is unusable: unsupported type, cols not a multiple of the block size,
// row_bytes too small, null data with rows > 0, data/row_bytes misaligned for the type
// (4 bytes for F32, 2 for the others), or a grouped layout on another type than Q8_0 / Q5_0 or
// on a CPU path without the grouped kernel.
void validate_weight_view(const WeightView& w);

// y[w.rows] = W . x[w.cols]   (x and y are floats and must not overlap).
void matvec(const WeightView& w, const float* x, float* y);

// Y[n][w.rows] = X[n][w.cols] . W^T, row-major: token t reads X + t * w.cols and writes
// Y + t * w.rows. n = 1 is matvec. X and Y must not overlap.
void matmul(const WeightView& w, const float* X, int64_t n, float* Y);

// The same with each token's outputs at its own address: token t = 0..Y.size()-1 reads
// X + t * w.cols and writes Y[t][w.rows] (a batched step's logits straight into each
// sequence's buffer, no gather-and-copy). The outputs must not overlap X or each other.
void matmul(const WeightView& w, const float* X, std::span<float* const> Y);

// out[i][w.cols] = row ids[i] of W decoded to floats, for i < n (embedding lookup).
// Throws QuantError naming the offending position if an id is outside [0, w.rows).
void get_rows(const WeightView& w, const int32_t* ids, int64_t n, float* out);

}  // namespace vsynth::kernels
