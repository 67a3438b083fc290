// The AVX512-VNNI kernel table: kernels_x86.inc compiled with AVX512-F/BW/VL/VNNI on top of
// AVX2 + FMA + F16C (kernels/CMakeLists.local.cmake). Vectors stay 256 bits wide (EVEX-encoded
// vpdpbusd on ymm registers, -mprefer-vector-width=256), so no 512-bit frequency licence is
// involved; the gain is one vpdpbusd for each maddubs + madd pair of the integer dot products
// (~25% faster prefill matmul on q4_0 / q5_0 / q8_0 weights; see docs/performance.md for the
// K-quants).
#include "kernels/quant/kernel_table.h"

#define VS_X86_VNNI 1
#define VS_X86_TABLE_NAME "avx512vnni"
#define VS_X86_TABLE_FN avx512vnni_kernels
#include "kernels/quant/kernels_x86.inc"
