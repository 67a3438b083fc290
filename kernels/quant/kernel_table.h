// The per-instruction-set kernel table behind matvec/matmul (internal to kernels/).
//
// One table per code path: kernels_scalar.cpp (portable C++), kernels_avx2.cpp (AVX2 + FMA +
// F16C, compiled with those flags only in that file) and kernels_avx512vnni.cpp (the same
// kernels with AVX512-VNNI integer dot products). kernels/cpu/cpu_path.h picks one at run
// time. All tables compute the same integer dot products block by block; scalar and SIMD differ
// only in the order floats are summed, so results agree to float rounding, and the two SIMD tables
// give bit-identical results (tests check both).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace vsynth::kernels::detail {

// How a weight type wants its input vector: kept as floats (F32/F16/BF16 weights), or quantized
// to a Q8A32 row (Q4_0/Q5_0/Q8_0) or BlockQ8A256 blocks (Q4_K/Q5_K/Q6_K), see blocks.h.
enum class ActFormat { F32, Q8A32, Q8A256 };

// Bytes of one activation row of k elements in format f (k a multiple of its block size).
size_t act_row_bytes(ActFormat f, int64_t k);

// Activation format and element granularity for weight type t (t supported, see quantize.h).
ActFormat act_format(DType t);

// Most activation columns one dot call handles: matmul feeds up to this many tokens per weight
// row so each weight block is loaded and unpacked once for all of them. A kernel may process
// them in smaller groups internally; every column's result is bit-identical to a one-column call
// (tests check this: prefill and decode give the same logits).
inline constexpr int kMaxCols = 16;

// y[c] = sum_i w[i] * a_c[i] for c in [0, ncols), 1 <= ncols <= kMaxCols.
//   k:      elements per row (a multiple of the weight type's block size)
//   w:      one weight row, k elements of the weight type (2-byte aligned)
//   act:    activation column 0 in the type's ActFormat; column c starts c * act_stride bytes later
//   y:      ncols floats
using DotFn = void (*)(int64_t k, const void* w, const void* act, size_t act_stride, int ncols,
                       float* y);

// The dot of rows [0, rows) of a weight matrix, `row_bytes` apart from w, with columns
// [0, ncols): y[c * y_stride + r], each what the table's DotFn gives for that row. One call for
// many rows: decode's output projection is 262,144 rows of only 640 elements, and a call per
// row paid the column-count dispatch and the columns' setup once per row.
using DotRowsFn = void (*)(int64_t k, const void* w, size_t row_bytes, int64_t rows,
                           const void* act, size_t act_stride, int ncols, float* y,
                           size_t y_stride);

// Prefill on weights unpacked once per matmul tile (the VNNI table): `rows` plain weight rows,
// row_bytes apart at w, written at out as unpacked rows in row pairs, unpacked_bytes(t, k, rows)
// bytes in all (blocks.h, "Unpacked weight rows").
using UnpackRowsFn = void (*)(int64_t k, const void* w, size_t row_bytes, int64_t rows, void* out);

// Bytes of one unpacked row of k elements of type t (Q4_0/Q5_0/Q8_0 or a K-quant; k a multiple
// of its block size), and of `rows` unpacked rows (stored in pairs, so an odd count takes one
// row more).
size_t unpacked_row_bytes(DType t, int64_t k);
size_t unpacked_bytes(DType t, int64_t k, int64_t rows);

// A type's unpacker and the DotRowsFn that takes its unpacked rows (row_bytes: the unpacked
// rows' stride) with the type's interleaved activations (Q8A32 or Q8A256); each output
// bit-identical to the type's prefill kernel dot_*_il on the plain row. Both nullptr where a
// table has none.
struct Unpacked {
  UnpackRowsFn unpack;
  DotRowsFn dot_rows;
};

// x[k] floats -> one Q8A32 row (k / 32 blocks) or k / 256 BlockQ8A256 blocks at out.
using QuantizeActFn = void (*)(const float* x, int64_t k, void* out);

// Bytes of one interleaved Q8A32 activation row of k elements (the prefill layout of the
// 32-element weight types, see blocks.h: padded to whole groups of 8 blocks).
size_t act_row_bytes_a32il(int64_t k);

// Bytes of one interleaved Q8A256 activation row of k elements (the prefill layout of the
// K-quants, see blocks.h: 292 per 256 elements, padded to kQ8A256ILRowAlign).
size_t act_row_bytes_a256il(int64_t k);

// n fp16 values -> n floats, and n floats -> n fp16 values (round to nearest even).
using F16RowFn = void (*)(const uint16_t* x, float* y, int64_t n);
using F32ToF16RowFn = void (*)(const float* x, uint16_t* y, int64_t n);

struct KernelTable {
  const char* name;  // "scalar", "avx2" or "avx512vnni"
  QuantizeActFn quantize_a32;
  QuantizeActFn quantize_a256;
  F16RowFn f16_to_f32;
  F32ToF16RowFn f32_to_f16;
  DotFn dot_f32;
  DotFn dot_f16;
  DotFn dot_bf16;
  DotFn dot_q4_0;
  DotFn dot_q5_0;
  DotFn dot_q8_0;
  DotFn dot_q4_k;
  DotFn dot_q5_k;
  DotFn dot_q6_k;
  // Prefill (matmul) kernels of the 32-element types, on interleaved Q8A32 activation rows
  // (blocks.h; quantize_a32il writes them, act_row_bytes_a32il(k) apart). Each output is
  // bit-identical to the row kernel above on the same weights and input (the same exact integer
  // block sums, the same float operations in the same order). nullptr where a table has none
  // (scalar): matmul then uses the row kernels.
  QuantizeActFn quantize_a32il;
  DotFn dot_q4_0_il;
  DotFn dot_q5_0_il;
  DotFn dot_q8_0_il;
  // The same for the K-quants, on interleaved Q8A256 rows (blocks.h; quantize_a256il writes
  // them, act_row_bytes_a256il(k) apart).
  QuantizeActFn quantize_a256il;
  DotFn dot_q4_k_il;
  DotFn dot_q5_k_il;
  DotFn dot_q6_k_il;
  // Q8_0 / Q5_0 weights in the grouped row layouts (blocks.h, made at load by
  // kernels/cpu/grouped.h), on interleaved Q8A32 activation rows, for matvec and matmul alike:
  // bit-identical to dot_q8_0 / dot_q8_0_il (dot_q5_0 / dot_q5_0_il) on the plain rows.
  // nullptr where a table has none (scalar): the engine then keeps the rows plain.
  // The *_rows entries: the same over many rows in one call (bit-identical row by row).
  DotFn dot_q8_0_grouped;
  DotRowsFn dot_q8_0_grouped_rows;
  DotFn dot_q5_0_grouped;
  DotRowsFn dot_q5_0_grouped_rows;
  // The *_rows entries' form on two rows per 512-bit vector (bit-identical, any column count;
  // the VNNI table only). matmul takes it for a batched decode step's 3-8 columns where the CPU
  // runs 512-bit operations at full width (kernels/cpu/matvec.cpp).
  DotRowsFn dot_q8_0_grouped_pairs;
  DotRowsFn dot_q5_0_grouped_pairs;
  // Prefill on unpacked rows (matmul prefers it where set: the VNNI table, whose 32 zmm
  // registers hold a tile of four or six rows by four tokens).
  Unpacked q4_0_unpacked;
  Unpacked q5_0_unpacked;
  Unpacked q8_0_unpacked;
  Unpacked q4_k_unpacked;
  Unpacked q5_k_unpacked;
  Unpacked q6_k_unpacked;
  // From grouped rows to the same unpacked row pairs (and the same dot_rows) as the plain
  // Q8_0 / Q5_0 rows give.
  Unpacked q8_0_grouped_unpacked;
  Unpacked q5_0_grouped_unpacked;
};

// Whether every entry of t is set. Tables are written with designated initializers (an entry is
// named, so it cannot land in a neighbour's slot; GCC's -Wmissing-field-initializers, an error
// here, catches one left out) and tests/kernels/quant_dot_test.cpp asserts this for every
// table on every compiler (the optional entries quantize_a32il, quantize_a256il, dot_*_il, the
// grouped entries and the unpacked ones excepted). Not a static_assert: under
// -fsanitize=undefined GCC does not treat a function's address compared with nullptr as a constant
// expression.
constexpr bool complete(const KernelTable& t) {
  return t.name != nullptr && t.quantize_a32 != nullptr && t.quantize_a256 != nullptr &&
         t.f16_to_f32 != nullptr && t.f32_to_f16 != nullptr && t.dot_f32 != nullptr &&
         t.dot_f16 != nullptr && t.dot_bf16 != nullptr && t.dot_q4_0 != nullptr &&
         t.dot_q5_0 != nullptr && t.dot_q8_0 != nullptr && t.dot_q4_k != nullptr &&
         t.dot_q5_k != nullptr && t.dot_q6_k != nullptr;
}

// The dot kernel of table for weight type t; nullptr if t has none.
DotFn dot_for(const KernelTable& table, DType t);

// The interleaved-activation (prefill) dot kernel of table for t; nullptr if t has none there.
DotFn dot_il_for(const KernelTable& table, DType t);

// The unpacked-row prefill kernels of table for t; both nullptr if t has none there.
Unpacked unpacked_for(const KernelTable& table, DType t);

// The grouped-row kernels of table for t (Q8_0, Q5_0): the dot, its form over many rows, and
// the unpacker of grouped tiles; each nullptr where the table (or the type) has none.
struct Grouped {
  DotFn dot;
  DotRowsFn dot_rows;
  DotRowsFn dot_pairs;
  Unpacked unpacked;
};
Grouped grouped_for(const KernelTable& table, DType t);

const KernelTable& scalar_kernels();
// nullptr when this build has no AVX2 translation unit (non-x86 targets). Whether the CPU can
// run it is a separate question (kernels/cpu/cpu_path.h).
const KernelTable* avx2_kernels();
// nullptr when the build has no AVX512-VNNI translation unit (see kernels/CMakeLists.local.cmake).
const KernelTable* avx512vnni_kernels();

}  // namespace vsynth::kernels::detail
