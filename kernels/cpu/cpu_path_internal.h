// Kernel-table lookup by CPU path (internal to kernels/).
#pragma once

#include "kernels/cpu/cpu_path.h"
#include "kernels/quant/kernel_table.h"

namespace vsynth::kernels::detail {

// The table for path p (the scalar table if p is not available).
const KernelTable& kernels_for(CpuPath p);

// The table of active_cpu_path().
const KernelTable& active_kernels();

}  // namespace vsynth::kernels::detail
