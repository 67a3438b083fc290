// Row-level encode/decode for every element type the CPU kernels compute with:
// F32, F16, BF16, Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K.
//
// A "row" is n consecutive elements (one weight row, one embedding). Quantized rows are n / B
// blocks of the layouts in kernels/quant/blocks.h (B = 32 or 256), so n must be a multiple of B.
// These functions are the portable reference: tests use them as ground truth, and the GGUF
// writer uses quantize_row to make small synthetic models.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace vsynth::kernels {

// True for the types listed above (what quantize_row / dequantize_row / matvec accept).
bool quant_supported(DType t);

// Elements per block of t (1 for F32/F16/BF16). Throws QuantError for an unsupported type.
int64_t quant_block_elems(DType t);

// Bytes of a row of n elements of type t. Throws QuantError when t is unsupported or n is
// negative or not a multiple of quant_block_elems(t).
size_t row_size(DType t, int64_t n);

// Encodes n floats as type t into out (row_size(t, n) bytes, returned). Throws QuantError for an
// unsupported type, a bad n, or a non-finite input value (its index is in the message).
//
// Scales are chosen to keep the reconstruction error small, then the integer codes are computed
// against the fp16-rounded scale actually stored, so the per-element error bound does not pick
// up the fp16 rounding. Q4_0 / Q5_0 / Q8_0 use ggml's conventions (scale from the signed
// absolute maximum); Q4_K / Q5_K / Q6_K use our own least-squares search per sub-block.
size_t quantize_row(DType t, const float* x, int64_t n, void* out);

// Decodes n elements of type t at src into y[n] floats (the reference scalar decoder).
// Throws QuantError for an unsupported type or bad n.
void dequantize_row(DType t, const void* src, float* y, int64_t n);

}  // namespace vsynth::kernels
