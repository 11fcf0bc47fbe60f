#include "kernel_boundary.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/util/Exception.h>

#include <exception>
#include <new>
#include <string>

#include "cuda_stream.h"
#include "kernel_error.h"
#include "kernel_table.h"
#include "strategy.h"
#include "tensor_binding.h"

namespace torchferry::aten {
namespace {

// Never throws, whatever it is asked to say: it runs inside catch blocks.
tf_status Report(const tf_call& call, const KernelState& state,
                 tf_status status, const char* what,
                 const char* detail) noexcept {
  try {
    const std::string message =
        std::string(state.op) + " on " +
        (state.device_type == TF_DEVICE_CUDA ? "cuda" : "cpu") + ": " + what +
        detail;
    return call.host->set_error(call.error_sink, status, message.c_str());
  } catch (...) {
    return call.host->set_error(call.error_sink, status, detail);
  }
}

}  // namespace

tf_status RunKernel(const tf_call* call) {
  auto& state = *static_cast<KernelState*>(call->kernel_data);
  try {
    // The caller's tensors may require grad; these out= calls are not part
    // of any autograd graph, and ATen refuses out= on such tensors above
    // the autograd keys.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    CallStreamGuard on_call_stream(*call, state.device_type);
    BoundTensors tensors(*call, state.pools, CurrentStrategy());
    state.body(tensors, *call);
    tensors.Finish();
    return TF_OK;
  } catch (const KernelError& e) {
    return Report(*call, state, e.status(), "", e.what());
  } catch (const c10::OutOfMemoryError& e) {
    return Report(*call, state, TF_ERROR_OUT_OF_MEMORY,
                  "ATen ran out of memory: ", e.what_without_backtrace());
  } catch (const c10::NotImplementedError& e) {
    return Report(
        *call, state, TF_ERROR_UNSUPPORTED,
        "ATen does not implement this case: ", e.what_without_backtrace());
#if TORCHFERRY_ATEN_HAS_ACCELERATOR_ERROR
  } catch (const c10::AcceleratorError& e) {
    return Report(*call, state, TF_ERROR_DEVICE,
                  "the device failed: ", e.what_without_backtrace());
#endif
  } catch (const c10::Error& e) {
    // What remains of c10's errors are ATen's own argument checks.
    return Report(*call, state, TF_ERROR_INVALID_ARGUMENT,
                  "ATen rejected the arguments: ", e.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    return Report(*call, state, TF_ERROR_OUT_OF_MEMORY, "",
                  "out of host memory");
  } catch (const std::exception& e) {
    return Report(*call, state, TF_ERROR_INTERNAL,
                  "unexpected error: ", e.what());
  } catch (...) {
    return Report(*call, state, TF_ERROR_INTERNAL, "",
                  "unexpected non-standard exception");
  }
}

}  // namespace torchferry::aten
