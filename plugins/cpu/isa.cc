// The CPU's instruction-set tier, from Highway's run-time detection.
#include "isa.h"

#include <hwy/targets.h>

namespace torchferry::cpu {

Tier SupportedTier() {
#if TF_CPU_HAVE_AVX2_PATH
  // HWY_AVX3 is AVX-512 F, VL, DQ and BW with the OS saving the ZMM and mask
  // registers; HWY_AVX2 is AVX2, FMA, F16C and BMI1/2 with YMM saved.
  const int64_t targets = hwy::SupportedTargets();
  if (targets & (HWY_AVX3 | HWY_AVX3_DL)) return Tier::kAvx512;
  if (targets & HWY_AVX2) return Tier::kAvx2;
#endif
  return Tier::kBaseline;
}

}  // namespace torchferry::cpu
