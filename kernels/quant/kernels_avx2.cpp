// The AVX2 + FMA + F16C kernel table (kernels/CMakeLists.local.cmake compiles this file alone
// with those flags). The kernels themselves are in kernels_x86.inc and the family files it
// includes (kernels_x86_{common,float,a32,grouped,kquants}.inc), shared with the AVX512-VNNI
// table.
#include "kernels/quant/kernel_table.h"

#define VS_X86_VNNI 0
#define VS_X86_TABLE_NAME "avx2"
#define VS_X86_TABLE_FN avx2_kernels
#include "kernels/quant/kernels_x86.inc"
