// Which CPU code path the kernels run: the portable scalar code, the AVX2 (+FMA, F16C) code, or
// the same SIMD code with AVX512-VNNI integer dot products (256-bit vectors).
//
// Chosen once, at the first kernel call: the best one cpuid and the OS allow (avx512vnni needs
// avx512f/bw/vl/vnni and the OS saving the AVX-512 state; avx2 needs avx2, fma and f16c) and
// this build has, otherwise scalar. The environment variable VSYNTH_CPU overrides the choice:
// "scalar", "avx2" or "avx512vnni" demand that path (an error when the CPU lacks it), "auto" or
// unset detects. Tests and benchmarks switch paths with set_cpu_path.
#pragma once

#include <string_view>

namespace vsynth::kernels {

enum class CpuPath { Scalar, Avx2, Avx512Vnni };

std::string_view to_string(CpuPath p);

// Whether this build and this CPU can run path p (Scalar: always).
bool cpu_path_available(CpuPath p);

// The path VSYNTH_CPU=env_value selects given which SIMD paths are available. Empty or "auto":
// the best available. Throws QuantError for any other value, or for a path that is unavailable.
CpuPath choose_cpu_path(std::string_view env_value, bool avx2_available,
                        bool avx512vnni_available = false);

// The path in use. The first call reads VSYNTH_CPU (and throws QuantError if it is invalid).
CpuPath active_cpu_path();

// Switches every later kernel call to path p (process-wide). Throws QuantError if p is not
// available. Meant for tests and benchmarks; not synchronised with kernel calls in flight.
void set_cpu_path(CpuPath p);

// Whether this CPU is taken to execute 512-bit vector operations at full width: Intel's AVX-512
// cores. Not AMD's: Zen 4 runs them as two 256-bit halves (the pairs measured slower there), and
// so do some Zen 5 parts (unmeasured here; VSYNTH_ZMM_PAIRS=1 tries). Decides a speed choice only:
// the avx512vnni path's grouped row-pair kernels for 3-8 tokens (kernels/cpu/matvec.cpp), which are
// bit-identical to the 256-bit ones they replace.
bool cpu_full_width_512();

// Whether matmul uses those row-pair kernels: VSYNTH_ZMM_PAIRS=env_value given full_width.
// Empty or "auto": full_width; "1" / "0": on / off (for A/B runs). Throws QuantError for any other
// value.
bool choose_zmm_pairs(std::string_view env_value, bool full_width);

// The choice in use; the first call reads VSYNTH_ZMM_PAIRS (and throws QuantError if invalid).
bool zmm_pairs_enabled();

}  // namespace vsynth::kernels
