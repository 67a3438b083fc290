// The AVX512-VNNI kernel table: kernels_x86.inc compiled with AVX512-F/BW/VL/VNNI on top of
// AVX2 + FMA + F16C (kernels/CMakeLists.local.cmake). Vectors stay 256 bits wide
// (-mprefer-vector-width=256: EVEX-encoded vpdpbusd on ymm registers, one for each maddubs +
// madd pair of the AVX2 integer dot products), except in matmul's kernels on unpacked rows,
// which hold a pair of weight rows in one 512-bit vector (kernels_x86.inc explains why; on the
// Zen 4 machines this was measured on, 512-bit vectors run at the same clock as 256-bit ones).
#include "kernels/quant/kernel_table.h"

#define VS_X86_VNNI 1
#define VS_X86_TABLE_NAME "avx512vnni"
#define VS_X86_TABLE_FN avx512vnni_kernels
#include "kernels/quant/kernels_x86.inc"
