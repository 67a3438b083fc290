// Q8_0 matrices regrouped at load for the SIMD kernels (the layout: kernels/quant/blocks.h,
// "Grouped Q8_0 weight rows"). The dot kernels of plain Q8_0 rows unpack and transpose every
// group of 8 blocks, and convert its 8 fp16 scales one by one, on each call: at decode's 1-8
// token columns that is most of a group's work. A grouped row holds the transposed codes and
// the scales side by side, so each call only loads them; results are bit-identical to the plain
// rows (the same integer block sums and float steps, kernels_x86.inc), so regrouping is an
// internal speed choice the engine makes (kernels/model/engine.cpp), never a numerical one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/cpu/matvec.h"

namespace vsynth::kernels {

// Whether the active CPU path has the grouped Q8_0 kernel (the avx2 and avx512vnni ones do).
bool q8_0_grouping_available();

// Bytes of one grouped row of k elements (k a multiple of 32).
size_t q8_0_grouped_row_bytes(int64_t k);

// A matrix regrouped into memory it owns; view.layout is WeightLayout::Q8_0Grouped and
// view.data points into `data`.
struct GroupedWeight {
  std::unique_ptr<std::byte[]> data;
  WeightView view;
};

// w (Q8_0, plain layout, valid) regrouped, keeping its name. Throws QuantError for another type
// or layout, or when the active CPU path has no grouped kernel.
GroupedWeight group_q8_0(const WeightView& w);

// One grouped row of k elements decoded to k floats: the values dequantize_row gives for the
// plain row (get_rows' decoder).
void dequantize_grouped_q8_0_row(const void* row, int64_t k, float* out);

}  // namespace vsynth::kernels
