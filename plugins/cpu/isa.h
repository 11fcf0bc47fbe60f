// Run-time selection of the instruction set for the hot loops.
//
// The plugin is built for baseline x86-64 (SSE2) so that it loads anywhere,
// but the loops that carry the work are worth 2-8x more with AVX2, FMA and
// F16C, and up to 1.7x more again with AVX-512, which torch itself picks at
// run time. Each hot loop is therefore a function template over an Isa tag,
// instantiated once per tier: inside a wrapper marked TF_CPU_AVX512 or
// TF_CPU_AVX2 (GCC's target attribute) and inside a plain wrapper; the
// wrappers are `flatten`, so the body, its functor and the conversion helpers
// are inlined into them and compiled (and vectorised: 16 float lanes under
// AVX-512) for that wrapper's instruction set. The caller picks a wrapper
// with ActiveTier(), decided once.
//
// What the CPU and the OS support comes from Highway (hwy::SupportedTargets,
// which checks CPUID and that the OS saves the YMM, ZMM and mask registers);
// its AVX2 and AVX3 targets are supersets of what each tier's wrappers use.
//
// Why not a separate -mavx2 translation unit: inline functions from shared
// headers (Load, Store, the functors) would be emitted there with AVX2 code
// under the same symbol names as the baseline copies, and the linker may keep
// either, so a baseline caller could end up in AVX2 code. Why not
// target_clones: GCC does not clone templates or lambdas, which is where the
// loops live. With the wrappers, only functions named *Avx2 / *Avx512 and the
// converters in convert.h carry wider code, and they are reached only behind
// ActiveTier().
#pragma once

#include <cstdlib>
#include <cstring>

namespace torchferry::cpu {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TF_CPU_HAVE_AVX2_PATH 1
#define TF_CPU_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TF_CPU_AVX512 \
  __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,f16c")))
#else
#define TF_CPU_HAVE_AVX2_PATH 0
#define TF_CPU_AVX2
#define TF_CPU_AVX512
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define TF_CPU_FLATTEN __attribute__((flatten))
#else
#define TF_CPU_FLATTEN
#endif

// Tags that select the code path of a loop body. The AVX-512 tier has every
// AVX2 path too (kAvx2), and wider explicit vectors where a loop uses them.
struct BaselineIsa {
  static constexpr bool kAvx2 = false;
  static constexpr bool kAvx512 = false;
};
struct Avx2Isa {
  static constexpr bool kAvx2 = true;
  static constexpr bool kAvx512 = false;
};
struct Avx512Isa {
  static constexpr bool kAvx2 = true;
  static constexpr bool kAvx512 = true;
};

// The instruction-set tiers, in order: each includes the ones before it.
enum class Tier { kBaseline, kAvx2, kAvx512 };

inline constexpr char kIsaEnvVar[] = "TORCHFERRY_CPU_ISA";

// TORCHFERRY_CPU_ISA=baseline or =avx2 caps the tier, so that the tests can
// check every instantiation on a machine that has more. Unset or empty: the
// CPU's best. Anything else is a mistake, ignored (the CPU's best) but not in
// silence: the plugin's entry warns through the host's log.
inline bool IsaCap(const char* value, Tier* cap) {
  if (value == nullptr || *value == '\0') return false;
  if (std::strcmp(value, "baseline") == 0) {
    *cap = Tier::kBaseline;
    return true;
  }
  if (std::strcmp(value, "avx2") == 0) {
    *cap = Tier::kAvx2;
    return true;
  }
  return false;
}
inline bool IsaSettingValid(const char* value) {
  Tier cap;
  return value == nullptr || *value == '\0' || IsaCap(value, &cap);
}

// The best tier the CPU and OS support (isa.cc, on Highway).
Tier SupportedTier();

// SupportedTier() capped by TORCHFERRY_CPU_ISA; computed once.
inline Tier ActiveTier() {
  static const Tier tier = [] {
    const Tier best = SupportedTier();
    Tier cap;
    if (IsaCap(std::getenv(kIsaEnvVar), &cap) && cap < best) return cap;
    return best;
  }();
  return tier;
}

inline const char* TierName(Tier tier) {
  switch (tier) {
    case Tier::kAvx512:
      return "AVX-512";
    case Tier::kAvx2:
      return "AVX2, FMA and F16C";
    case Tier::kBaseline:
      break;
  }
  return "baseline x86-64";
}

// Calls Name##Avx512, Name##Avx2 or Name##Base, by the active tier.
#define TF_CPU_DISPATCH(Name, ...) \
  do {                             \
    switch (ActiveTier()) {        \
      case Tier::kAvx512:          \
        Name##Avx512(__VA_ARGS__); \
        break;                     \
      case Tier::kAvx2:            \
        Name##Avx2(__VA_ARGS__);   \
        break;                     \
      case Tier::kBaseline:        \
        Name##Base(__VA_ARGS__);   \
        break;                     \
    }                              \
  } while (0)

}  // namespace torchferry::cpu
