// Run-time selection of the instruction set for the hot loops.
//
// The plugin is built for baseline x86-64 (SSE2) so that it loads anywhere,
// but the loops that carry the work are worth 2-8x more with AVX2, FMA and
// F16C, which torch itself picks at run time. Each hot loop is therefore a
// function template over an Isa tag, instantiated twice: once inside a
// wrapper marked TF_CPU_AVX2 (GCC's target attribute) and once inside a plain
// wrapper; both wrappers are `flatten`, so the body, its functor and the
// conversion helpers are inlined into them and compiled for that wrapper's
// instruction set. The caller picks a wrapper with UseAvx2(), decided once
// from cpuid (which also checks that the OS saves the YMM registers).
//
// Why not a separate -mavx2 translation unit: inline functions from shared
// headers (Load, Store, the functors) would be emitted there with AVX2 code
// under the same symbol names as the baseline copies, and the linker may keep
// either, so a baseline caller could end up in AVX2 code. Why not
// target_clones: GCC does not clone templates or lambdas, which is where the
// loops live. With the wrappers, only functions named *Avx2 and the
// converters in convert.h carry AVX2 code, and they are reached only behind
// UseAvx2().
#pragma once

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace torchferry::cpu {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TF_CPU_HAVE_AVX2_PATH 1
#define TF_CPU_AVX2 __attribute__((target("avx2,fma,f16c")))
#else
#define TF_CPU_HAVE_AVX2_PATH 0
#define TF_CPU_AVX2
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define TF_CPU_FLATTEN __attribute__((flatten))
#else
#define TF_CPU_FLATTEN
#endif

// Tags that select the code path of a loop body.
struct BaselineIsa {
  static constexpr bool kAvx2 = false;
};
struct Avx2Isa {
  static constexpr bool kAvx2 = true;
};

#if TF_CPU_HAVE_AVX2_PATH
// cpuid rather than __builtin_cpu_supports: clang 14 does not know "f16c",
// and the OS must also save the YMM registers (OSXSAVE, then XCR0 bits 1-2).
inline bool CpuHasAvx2FmaF16c() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const bool fma = ecx & (1u << 12), osxsave = ecx & (1u << 27),
             avx = ecx & (1u << 28), f16c = ecx & (1u << 29);
  if (!(fma && osxsave && avx && f16c)) return false;
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 6u) != 6u) return false;  // XMM and YMM state saved
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return ebx & (1u << 5);  // AVX2
}
#endif

inline constexpr char kIsaEnvVar[] = "TORCHFERRY_CPU_ISA";

// TORCHFERRY_CPU_ISA=baseline turns the AVX2 loops off, so that the tests can
// check the baseline instantiations on a machine that has AVX2. Unset or
// empty: the CPU's best. Anything else is a mistake, ignored (the CPU's best)
// but not in silence: the plugin's entry warns through the host's log.
inline bool IsaForcedBaseline(const char* value) {
  return value != nullptr && std::strcmp(value, "baseline") == 0;
}
inline bool IsaSettingValid(const char* value) {
  return value == nullptr || *value == '\0' || IsaForcedBaseline(value);
}

// True when the CPU and OS support AVX2, FMA and F16C and TORCHFERRY_CPU_ISA
// does not say baseline; computed once.
inline bool UseAvx2() {
#if TF_CPU_HAVE_AVX2_PATH
  static const bool use = [] {
    if (IsaForcedBaseline(std::getenv(kIsaEnvVar))) return false;
    return CpuHasAvx2FmaF16c();
  }();
  return use;
#else
  return false;
#endif
}

}  // namespace torchferry::cpu
