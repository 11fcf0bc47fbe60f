#include "call.h"

#include <cstdarg>
#include <cstdio>

namespace torchferry::cpu {

tf_status Fail(const tf_call* call, tf_status status, const char* format, ...) {
  // Long enough for any message below; vsnprintf truncates the rest.
  char message[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  if (call->host == nullptr || call->host->set_error == nullptr) return status;
  return call->host->set_error(call->error_sink, status, message);
}

tf_status CheckArity(const tf_call* call, const char* op, int num_inputs,
                     int num_attrs, int num_outputs) {
  if (call->num_inputs == num_inputs && call->num_attrs == num_attrs &&
      call->num_outputs == num_outputs) {
    return TF_OK;
  }
  return Fail(call, TF_ERROR_INVALID_ARGUMENT,
              "%s expects %d inputs, %d attributes and %d outputs but got "
              "%d, %d and %d; build the call as abi/ABI.md lists for %s",
              op, num_inputs, num_attrs, num_outputs, call->num_inputs,
              call->num_attrs, call->num_outputs, op);
}

tf_status TooManyDims(const tf_call* call, const char* op, int ndim) {
  return Fail(call, TF_ERROR_UNSUPPORTED,
              "%s: the cpu kernels take tensors of at most %d dimensions but "
              "got %d; merge dimensions with reshape first or leave the call "
              "to another backend (the aten plugin takes any rank)",
              op, kMaxRank, ndim);
}

}  // namespace torchferry::cpu
