// The per-instruction-set kernel table behind matvec/matmul (internal to kernels/).
//
// One table per code path: kernels_scalar.cpp (portable C++), kernels_avx2.cpp (AVX2 + FMA +
// F16C, compiled with those flags only in that file) and kernels_avx512vnni.cpp (the same
// kernels with AVX512-VNNI integer dot products). kernels/cpu/cpu_path.h picks one at run
// time. All tables compute the same integer dot products block by block; scalar and SIMD differ
// only in the order floats are summed, so results agree to float rounding, and the two SIMD tables
// give bit-identical results (tests check both).
//
// A table has one row per weight type (TypeKernels: dot, dot_il, unpacked, grouped), in the
// order of kTypeTraits, the list of the types the kernels compute with. What a row must hold
// follows from the type's traits and the table's Forms; tests/kernels/kernel_table_test.cpp walks
// every type of every table and fails on a kernel missing (or one set where the type has no use
// for it): kernel_table_gaps().
//
// Adding a weight type (say q3_K), in this order:
//  1. kernels/dtype.cpp: the type's geometry with supported = true (dtype.h has its GGUF id).
//  2. kernels/quant/blocks.h: its block as a struct with a static size assert.
//  3. kernels/quant/quantize.cpp: quantize_row / dequantize_row, the portable reference (and
//     quant_supported, quant_block_elems, row_size: its cases there).
//  4. kTypeTraits below: its row (activation format, grouped rows or not, CUDA or not).
//  5. kernels_scalar.cpp: a one-column dot, in the scalar table's row.
//  6. x86: its kernels in the family's file (kernels_x86_float.inc, kernels_x86_a32.inc,
//     kernels_x86_kquants.inc; a new family: a new file, included by kernels_x86.inc) and its row
//     in kernels_x86.inc's table: dot; dot_il on interleaved activations; with VNNI the
//     unpacked-row pair (blocks.h, "Unpacked weight rows"). Each must be bit-identical to the
//     other forms and across the AVX2 / VNNI tables (tests/kernels/quant_prefill_test.cpp).
//  7. CUDA (traits.cuda): kernels/cuda/quant_unpack.cuh (a QT tag, block_bytes, unpack<T>) and
//     the switch of ops_quant.cu (visit_type).
//  8. kernel_table_test fails until 1, 3, 4, 5 and 6 agree; then add the type to the type lists
//     of tests/kernels/quant_*_test.cpp (bounds, bit-identity across forms and tables).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "kernels/dtype.h"

namespace vsynth::kernels::detail {

// How a weight type wants its input vector: kept as floats (F32/F16/BF16 weights), or quantized
// to a Q8A32 row (Q4_0/Q5_0/Q8_0) or BlockQ8A256 blocks (Q4_K/Q5_K/Q6_K), see blocks.h.
enum class ActFormat { F32, Q8A32, Q8A256 };

// Bytes of one activation row of k elements in format f (k a multiple of its block size).
size_t act_row_bytes(ActFormat f, int64_t k);

// What the kernels know of a weight type, whatever the table.
struct TypeTraits {
  DType type;
  ActFormat act;  // how its dot kernels take the input vector
  bool grouped;   // has the grouped row layout (blocks.h; kernels/cpu/grouped.h makes it at load)
  // The CUDA backend computes with it: kernels/cuda/quant_unpack.cuh has its unpack<T> and
  // ops_quant.cu's visit_type its case. Kept in step by hand: the CUDA sources build only where
  // nvcc is, and no test here reaches them.
  bool cuda;
};

// The weight types the CPU kernels compute with (quant_supported), in the order of every
// table's rows.
inline constexpr TypeTraits kTypeTraits[] = {
    {.type = DType::F32, .act = ActFormat::F32, .grouped = false, .cuda = true},
    {.type = DType::F16, .act = ActFormat::F32, .grouped = false, .cuda = true},
    {.type = DType::BF16, .act = ActFormat::F32, .grouped = false, .cuda = true},
    {.type = DType::Q4_0, .act = ActFormat::Q8A32, .grouped = false, .cuda = true},
    {.type = DType::Q5_0, .act = ActFormat::Q8A32, .grouped = true, .cuda = true},
    {.type = DType::Q8_0, .act = ActFormat::Q8A32, .grouped = true, .cuda = true},
    {.type = DType::Q4_K, .act = ActFormat::Q8A256, .grouped = false, .cuda = true},
    {.type = DType::Q5_K, .act = ActFormat::Q8A256, .grouped = false, .cuda = true},
    {.type = DType::Q6_K, .act = ActFormat::Q8A256, .grouped = false, .cuda = true},
};
inline constexpr int kNumKernelTypes = static_cast<int>(std::size(kTypeTraits));

// The index of t's row in kTypeTraits and in every table; -1 for a type the kernels do not
// compute with.
constexpr int kernel_type_index(DType t) {
  for (int i = 0; i < kNumKernelTypes; ++i) {
    if (kTypeTraits[i].type == t) return i;
  }
  return -1;
}

// Activation format of weight type t (F32 for a type the kernels do not compute with).
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
// bit-identical to the type's prefill kernel dot_il on the plain row. Both nullptr where a
// table has none.
struct Unpacked {
  UnpackRowsFn unpack;
  DotRowsFn dot_rows;
};

// The kernels of Q8_0 / Q5_0 weights in the grouped row layouts (blocks.h, made at load by
// kernels/cpu/grouped.h), on interleaved Q8A32 activation rows, for matvec and matmul alike:
// bit-identical to the type's dot / dot_il on the plain rows. Each nullptr where the table (or
// the type) has none: the engine then keeps the rows plain.
struct Grouped {
  DotFn dot;
  DotRowsFn dot_rows;  // the same over many rows in one call (bit-identical row by row)
  // dot_rows' form on two rows per 512-bit vector (bit-identical, any column count; the VNNI
  // table only). matmul takes it for a batched decode step's 3-8 columns where the CPU runs
  // 512-bit operations at full width (kernels/cpu/matvec.cpp).
  DotRowsFn dot_pairs;
  // From grouped rows to the same unpacked row pairs (and the same dot_rows) as the plain rows
  // give.
  Unpacked unpacked;
};

// One weight type's kernels in one table.
struct TypeKernels {
  DType type;  // kTypeTraits' type of the same index
  DotFn dot;   // every type, every table
  // Prefill (matmul) kernel of a quantized type on interleaved activation rows (Q8A32 rows from
  // quantize_a32il, act_row_bytes_a32il(k) apart; Q8A256 ones from quantize_a256il; blocks.h).
  // Each output is bit-identical to dot on the same weights and input (the same exact integer
  // block sums, the same float operations in the same order). nullptr where a table has none
  // (scalar): matmul then uses dot.
  DotFn dot_il;
  // Prefill on unpacked rows (matmul prefers it where set: the VNNI table, whose 32 zmm
  // registers hold a tile of four or six rows by four tokens).
  Unpacked unpacked;
  Grouped grouped;  // the types with grouped rows (TypeTraits::grouped)
};

// The kernel forms a table has beyond each type's dot: what kernel_table_gaps asks of its rows.
struct Forms {
  bool il;        // quantize_a32il / quantize_a256il and every quantized type's dot_il
  bool grouped;   // grouped.dot and grouped.dot_rows of the types with grouped rows
  bool pairs;     // grouped.dot_pairs
  bool unpacked;  // every quantized type's unpacked, and grouped.unpacked
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
  Forms forms;
  QuantizeActFn quantize_a32;
  QuantizeActFn quantize_a256;
  F16RowFn f16_to_f32;
  F32ToF16RowFn f32_to_f16;
  QuantizeActFn quantize_a32il;        // forms.il
  QuantizeActFn quantize_a256il;       // forms.il
  TypeKernels types[kNumKernelTypes];  // kTypeTraits' order (rows_in_order)
};

// Whether t's rows name kTypeTraits' types in its order (a static_assert beside each table).
constexpr bool rows_in_order(const KernelTable& t) {
  for (int i = 0; i < kNumKernelTypes; ++i) {
    if (t.types[i].type != kTypeTraits[i].type) return false;
  }
  return true;
}

// What table t lacks, or holds where it should not, one line each ("avx2: q4_K has no dot_il");
// empty when every entry the forms and the types' traits ask for is set and no other.
// Tables are written with designated initializers (an entry is named, so it cannot land in a
// neighbour's slot; GCC's -Wmissing-field-initializers, an error here, catches one left out).
// Not a static_assert: under -fsanitize=undefined GCC does not treat a function's address
// compared with nullptr as a constant expression; tests/kernels/kernel_table_test.cpp checks
// every table this build has.
std::vector<std::string> kernel_table_gaps(const KernelTable& t);

// Table's row for weight type t; a row of nullptrs for a type the kernels do not compute with.
const TypeKernels& type_kernels(const KernelTable& table, DType t);

const KernelTable& scalar_kernels();
// nullptr when this build has no AVX2 translation unit (non-x86 targets). Whether the CPU can
// run it is a separate question (kernels/cpu/cpu_path.h).
const KernelTable* avx2_kernels();
// nullptr when the build has no AVX512-VNNI translation unit (see kernels/CMakeLists.local.cmake).
const KernelTable* avx512vnni_kernels();

}  // namespace vsynth::kernels::detail
