// Which CPU code path the kernels run: the portable scalar code or the AVX2 (+FMA, F16C) code.
//
// Chosen once, at the first kernel call: AVX2 when cpuid reports avx2, fma and f16c (and this
// build has the AVX2 translation unit), otherwise scalar. The environment variable VSYNTH_CPU
// overrides the choice: "scalar" forces the fallback, "avx2" demands AVX2 (an error when the CPU
// lacks it), "auto" or unset detects. Tests and benchmarks switch paths with set_cpu_path.
#pragma once

#include <string_view>

namespace vsynth::kernels {

enum class CpuPath { Scalar, Avx2 };

std::string_view to_string(CpuPath p);

// Whether this build and this CPU can run path p (Scalar: always).
bool cpu_path_available(CpuPath p);

// The path VSYNTH_CPU=env_value selects when AVX2 is (or is not) available. Empty or "auto":
// the best available. Throws QuantError for any other value, or "avx2" without AVX2.
CpuPath choose_cpu_path(std::string_view env_value, bool avx2_available);

// The path in use. The first call reads VSYNTH_CPU (and throws QuantError if it is invalid).
CpuPath active_cpu_path();

// Switches every later kernel call to path p (process-wide). Throws QuantError if p is not
// available. Meant for tests and benchmarks; not synchronised with kernel calls in flight.
void set_cpu_path(CpuPath p);

}  // namespace vsynth::kernels
