#include "kernels/cpu/cpu_path.h"

#include <atomic>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "kernels/cpu/cpu_path_internal.h"
#include "kernels/quant/quant_error.h"

namespace vsynth::kernels {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// XCR0: which register states the OS saves on a context switch.
uint64_t xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
#endif

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  // cpuid directly: clang 14's __builtin_cpu_supports does not know "f16c".
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool fma = c & bit_FMA, f16c = c & bit_F16C, osxsave = c & bit_OSXSAVE;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool avx2 = b & bit_AVX2;
  if (!(fma && f16c && avx2 && osxsave)) return false;
  return (xcr0() & 0x6u) == 0x6u;  // XMM and YMM state
#else
  return false;
#endif
}

bool cpu_has_avx512vnni() {
#if defined(__x86_64__) || defined(__i386__)
  if (!cpu_has_avx2()) return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool f = b & bit_AVX512F, bw = b & bit_AVX512BW, vl = b & bit_AVX512VL;
  const bool vnni = c & bit_AVX512VNNI;
  if (!(f && bw && vl && vnni)) return false;
  return (xcr0() & 0xE6u) == 0xE6u;  // plus opmask, ZMM0-15 upper halves, ZMM16-31
#else
  return false;
#endif
}

// cpuid leaf 0's vendor string is Intel's.
bool cpu_is_intel() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  return std::string_view(vendor) == "GenuineIntel";
#else
  return false;
#endif
}

bool avx2_usable() {
  static const bool usable = detail::avx2_kernels() != nullptr && cpu_has_avx2();
  return usable;
}

bool avx512vnni_usable() {
  static const bool usable = detail::avx512vnni_kernels() != nullptr && cpu_has_avx512vnni();
  return usable;
}

// -1: not chosen yet; otherwise a CpuPath value.
std::atomic<int> g_path{-1};
std::once_flag g_init;

}  // namespace

bool cpu_full_width_512() {
  static const bool full = cpu_is_intel();
  return full;
}

bool choose_zmm_pairs(std::string_view env_value, bool full_width) {
  if (env_value.empty() || env_value == "auto") return full_width;
  if (env_value == "1") return true;
  if (env_value == "0") return false;
  throw QuantError("VSYNTH_ZMM_PAIRS='" + std::string(env_value) +
                   "' is not valid; use auto (the default: on where the CPU runs 512-bit "
                   "operations at full width), 1 or 0");
}

bool zmm_pairs_enabled() {
  static const bool on = [] {
    const char* env = std::getenv("VSYNTH_ZMM_PAIRS");
    return choose_zmm_pairs(env ? env : "", cpu_full_width_512());
  }();
  return on;
}

std::string_view to_string(CpuPath p) {
  switch (p) {
    case CpuPath::Avx2:
      return "avx2";
    case CpuPath::Avx512Vnni:
      return "avx512vnni";
    case CpuPath::Scalar:
      break;
  }
  return "scalar";
}

bool cpu_path_available(CpuPath p) {
  switch (p) {
    case CpuPath::Avx2:
      return avx2_usable();
    case CpuPath::Avx512Vnni:
      return avx512vnni_usable();
    case CpuPath::Scalar:
      break;
  }
  return true;
}

CpuPath choose_cpu_path(std::string_view env_value, bool avx2_available,
                        bool avx512vnni_available) {
  if (env_value.empty() || env_value == "auto") {
    return avx512vnni_available ? CpuPath::Avx512Vnni
           : avx2_available     ? CpuPath::Avx2
                                : CpuPath::Scalar;
  }
  struct Named {
    std::string_view name;
    CpuPath path;
    bool available;
    const char* needs;  // what the CPU, build and OS must provide
  };
  const Named paths[] = {{"scalar", CpuPath::Scalar, true, ""},
                         {"avx2", CpuPath::Avx2, avx2_available, "AVX2+FMA+F16C"},
                         {"avx512vnni", CpuPath::Avx512Vnni, avx512vnni_available,
                          "AVX512-F/BW/VL/VNNI (and AVX2+FMA+F16C)"}};
  for (const Named& n : paths) {
    if (env_value != n.name) continue;
    if (!n.available) {
      throw QuantError("VSYNTH_CPU=" + std::string(n.name) +
                       " but this CPU (or build, or OS) has no " + n.needs +
                       "; use VSYNTH_CPU=auto or a path it has (scalar always works)");
    }
    return n.path;
  }
  throw QuantError("VSYNTH_CPU='" + std::string(env_value) +
                   "' is not a CPU path; valid values: auto, scalar, avx2, avx512vnni");
}

CpuPath active_cpu_path() {
  int p = g_path.load(std::memory_order_acquire);
  if (p >= 0) return static_cast<CpuPath>(p);
  std::call_once(g_init, [] {
    if (g_path.load(std::memory_order_acquire) >= 0) return;  // set_cpu_path came first
    const char* env = std::getenv("VSYNTH_CPU");
    const CpuPath chosen = choose_cpu_path(env ? env : "", avx2_usable(), avx512vnni_usable());
    g_path.store(static_cast<int>(chosen), std::memory_order_release);
  });
  return static_cast<CpuPath>(g_path.load(std::memory_order_acquire));
}

void set_cpu_path(CpuPath p) {
  if (!cpu_path_available(p)) {
    throw QuantError("CPU path " + std::string(to_string(p)) +
                     " is not available on this CPU or build");
  }
  g_path.store(static_cast<int>(p), std::memory_order_release);
}

const detail::KernelTable& detail::kernels_for(CpuPath p) {
  if (p == CpuPath::Avx512Vnni && avx512vnni_usable()) return *avx512vnni_kernels();
  if (p == CpuPath::Avx2 && avx2_usable()) return *avx2_kernels();
  return scalar_kernels();
}

const detail::KernelTable& detail::active_kernels() {
  return kernels_for(active_cpu_path());
}

}  // namespace vsynth::kernels
