#include "core/python/dispatch.h"

#include <fmt/format.h>

#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/kernel_cache.h"

namespace torchferry {
namespace {

// Below this many elements a CPU kernel finishes in about the time it takes
// to drop and retake the GIL, so it keeps it; above, other Python threads
// run meanwhile. CUDA kernels only enqueue work and always keep it.
constexpr int64_t kReleaseGilWork = 1 << 16;

bool ResolveStream(const char* op, const StreamArg& stream,
                   const tf_device& device, void** result) {
  *result = stream.handle;
  if (device.device_type != TF_DEVICE_CUDA) {
    if (!stream.given) return true;
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}(): stream= applies to CUDA tensors "
                                  "only; these tensors are on the cpu",
                                  op));
  }
  if (stream.bad_type != nullptr) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}(): expected stream to be a "
                                  "torch.cuda.Stream, an int handle or None, "
                                  "got {}",
                                  op, stream.bad_type));
  }
  if (stream.given) return true;
  const AotiApi& api = Bridge::Get().library().api;
  if (api.get_current_cuda_stream == nullptr ||
      api.get_current_cuda_stream(device.device_id, result) != 0) {
    return RaiseError(PyExc_RuntimeError,
                      fmt::format("{}(): could not read torch's current "
                                  "CUDA stream for device {}",
                                  op, device.device_id));
  }
  return true;
}

}  // namespace

bool RaiseNoKernel(const char* op, const tf_device& device, DtypeIndex dtype) {
  return RaiseError(
      PyExc_NotImplementedError,
      fmt::format("{}(): no loaded plugin has a kernel for {} on {}; "
                  "`python -m torchferry info` lists the kernels "
                  "and skipped plugins",
                  op, Dtype(dtype).name,
                  device.device_type == TF_DEVICE_CUDA ? "cuda" : "cpu"));
}

namespace {

// The kernel once, or once per index of the frame's outer dims, stopping at
// the first failure; the tensors' data pointers are back as they were after.
tf_status CallKernel(const KernelEntry& kernel, const tf_call& call,
                     CallFrame::Repeat& r) {
  if (r.ndim == 0) return kernel.fn(&call);
  for (int d = 0; d < r.ndim; ++d) {
    if (r.sizes[d] == 0) return TF_OK;  // nothing to compute
  }
  char* base[CallFrame::Repeat::kMaxTensors];
  int64_t itemsize[CallFrame::Repeat::kMaxTensors];
  for (int t = 0; t < r.num_tensors; ++t) {
    base[t] = static_cast<char*>(r.tensors[t]->data);
    itemsize[t] = r.tensors[t]->dtype.bits / 8;
  }
  int64_t index[kMaxRank] = {};
  tf_status status = TF_OK;
  for (;;) {
    for (int t = 0; t < r.num_tensors; ++t) {
      int64_t offset = 0;
      for (int d = 0; d < r.ndim; ++d) offset += index[d] * r.strides[t][d];
      r.tensors[t]->data = base[t] + offset * itemsize[t];
    }
    status = kernel.fn(&call);
    if (status != TF_OK) break;
    int d = r.ndim - 1;
    while (d >= 0 && ++index[d] == r.sizes[d]) index[d--] = 0;
    if (d < 0) break;
  }
  for (int t = 0; t < r.num_tensors; ++t) r.tensors[t]->data = base[t];
  return status;
}

}  // namespace

PyObject* Dispatch(const OpFunction& fn, CallFrame& f,
                   const StreamArg& stream) {
  const char* name = fn.name.c_str();
  static const tf_device kCpu = {TF_DEVICE_CPU, 0};
  const tf_device& device =
      f.dispatch_ref() ? f.dispatch_ref()->view.device : kCpu;
  const DtypeIndex dtype =
      f.dispatch_ref() ? f.dispatch_ref()->dtype : kFloat32;
  // The kernel a rule found already (a declared op's), or the cache's.
  const KernelEntry* kernel =
      f.kernel() != nullptr
          ? f.kernel()
          : KernelCache::Get().Find(
                f.kernel_op() >= 0 ? static_cast<OpId>(f.kernel_op()) : fn.id,
                device, dtype);
  if (kernel == nullptr) {
    RaiseNoKernel(name, device, dtype);
    return nullptr;
  }
  if (f.num_outputs() > 0 &&
      Bridge::Get().library().api.grad_mode_is_enabled()) {
    // out= was passed when an output is returned that the host did not
    // allocate (an op that writes only in place returns none).
    const bool out_given = f.owned_result() == nullptr &&
                           (f.result() != nullptr || f.num_returned() > 0);
    bool getter_ran = false;
    for (int i = 0; i < f.num_refs(); ++i) {
      if (!CheckNoGrad(name, f.ref(i), out_given, f, &getter_ran)) {
        return nullptr;
      }
    }
    // A __torch_function__ the getter ran may have resized or freed a
    // tensor the call has read: refused, never run on stale views.
    if (getter_ran && !f.Unchanged()) {
      RaiseError(PyExc_RuntimeError,
                 fmt::format("{}(): a tensor argument changed while "
                             "requires_grad was read (a __torch_function__ "
                             "override or mode ran and modified it); pass "
                             "tensors that stay as they are for the call",
                             name));
      return nullptr;
    }
  }
  void* cuda_stream;
  if (!ResolveStream(name, stream, device, &cuda_stream)) return nullptr;

  ErrorSink sink;
  const tf_call call = f.MakeCall(kernel->kernel_data, cuda_stream, &sink);

  tf_status status;
  if (device.device_type == TF_DEVICE_CPU && f.work() >= kReleaseGilWork) {
    Py_BEGIN_ALLOW_THREADS status = CallKernel(*kernel, call, f.repeat());
    Py_END_ALLOW_THREADS
  } else {
    status = CallKernel(*kernel, call, f.repeat());
  }
  // Even a failed kernel may have written part of out: autograd must see it.
  for (int i = 0; i < f.num_outputs(); ++i) {
    const TensorRef* written = f.written(i);
    if (written->is_torch() && !Bridge::Get().versions().Bump(
                                   written->object, written->probe_handle())) {
      return nullptr;
    }
  }
  if (status != TF_OK) {
    RaiseError(ExceptionFor(status),
               fmt::format("{}: {}(): {}", kernel->plugin->name, name,
                           sink.message.empty()
                               ? fmt::format("kernel failed with status {} "
                                             "and no message",
                                             status)
                               : sink.message));
    return nullptr;
  }
  if (f.num_returned() > 1) {  // several returns: their tensors as a tuple
    PyObject* tuple = PyTuple_New(f.num_returned());
    for (int i = 0; tuple != nullptr && i < f.num_returned(); ++i) {
      Py_INCREF(f.written(i)->object);
      PyTuple_SET_ITEM(tuple, i, f.written(i)->object);
    }
    return tuple;
  }
  if (f.result() == nullptr) Py_RETURN_NONE;
  Py_INCREF(f.result());
  return f.result();
}

}  // namespace torchferry
