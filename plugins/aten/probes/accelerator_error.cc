// Compiles where torch has c10::AcceleratorError (torch >= 2.8), which
// reports a failed device apart from ATen's argument checks; older torches
// raise a plain c10::Error there. Sets TORCHFERRY_ATEN_HAS_ACCELERATOR_ERROR.
#include <c10/util/Exception.h>
const c10::AcceleratorError* error = nullptr;
