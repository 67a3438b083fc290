// Q8_0 and Q5_0 matrices regrouped at load for the SIMD kernels (the layouts: kernels/quant/
// blocks.h, "Grouped weight rows"). The dot kernels of plain rows unpack and transpose every
// group of 8 blocks, and convert its 8 fp16 scales one by one, on each call: at decode's 1-8
// token columns that is most of a group's work. A grouped row holds the codes already in the
// activations' lane order (Q5_0's still 5 bits each) and the scales side by side, so each call
// only loads them (and, for Q5_0, shifts and masks); results are bit-identical to the plain rows
// (the same integer block sums and float steps, kernels_x86_grouped.inc), so regrouping is an
// internal speed choice the engine makes (kernels/engine.cpp), never a numerical one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernels/cpu/huge_buffer.h"
#include "kernels/cpu/matvec.h"

namespace vsynth::kernels {

// Whether the active CPU path has a grouped kernel for type t (the avx2 and avx512vnni ones
// have them for Q8_0 and Q5_0).
bool grouping_available(DType t);

// Whether VSYNTH_GROUPED=env_value asks for matrices of type t to be regrouped (for A/B runs):
// empty or "1" every type, "0" none, "q8_0" or "q5_0" that type only. Throws QuantError for any
// other value, naming the valid ones.
bool grouping_wanted(std::string_view env_value, DType t);

// Bytes of one grouped row of k elements of type t (Q8_0 or Q5_0; k a multiple of 32).
size_t grouped_row_bytes(DType t, int64_t k);

// A matrix regrouped into memory it owns; view.layout is WeightLayout::Grouped and view.data
// points into `data`.
struct GroupedWeight {
  HugeBuffer data;
  WeightView view;
};

// The bytes w regrouped takes (rows x grouped_row_bytes). Throws QuantError, as group_weight,
// when w cannot be regrouped.
size_t grouped_matrix_bytes(const WeightView& w);

// w (Q8_0 or Q5_0, plain layout, valid) regrouped into dst, which holds grouped_matrix_bytes(w)
// zero bytes (the padding blocks stay zero); returns the grouped view of dst, keeping w's name.
// Throws QuantError for another type or layout, or when the active CPU path has no grouped
// kernel for it.
WeightView group_weight_into(const WeightView& w, std::byte* dst);

// w regrouped into memory of its own (a HugeBuffer).
GroupedWeight group_weight(const WeightView& w);

// One grouped row of k elements of type t decoded to k floats: the values dequantize_row gives
// for the plain row (get_rows' decoder).
void dequantize_grouped_row(DType t, const void* row, int64_t k, float* out);

}  // namespace vsynth::kernels
