#include "core/checks.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/py_errors.h"

namespace torchferry {
namespace {

const char* DeviceName(const tf_device& d) {
  return d.device_type == TF_DEVICE_CPU ? "cpu" : "cuda";
}

std::string DeviceText(const tf_device& d) {
  if (d.device_type == TF_DEVICE_CPU) return "cpu";
  return fmt::format("{}:{}", DeviceName(d), d.device_id);
}

// [lo, hi) of the bytes a view can touch; empty for zero elements.
void MemorySpan(const TensorRef& r, uintptr_t* lo, uintptr_t* hi) {
  const tf_tensor& v = r.view;
  if (r.numel == 0) {
    *lo = *hi = 0;
    return;
  }
  int64_t low = 0, high = 0;
  for (int d = 0; d < v.ndim; ++d) {
    int64_t reach = (v.shape[d] - 1) * v.strides[d];
    if (reach < 0)
      low += reach;
    else
      high += reach;
  }
  const int64_t size = Dtype(r.dtype).itemsize;
  auto base = reinterpret_cast<uintptr_t>(v.data);
  *lo = base + low * size;
  *hi = base + (high + 1) * size;
}

bool SameLayout(const tf_tensor& a, const tf_tensor& b) {
  if (a.data != b.data || a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.shape[d] != b.shape[d]) return false;
    if (a.shape[d] > 1 && a.strides[d] != b.strides[d]) return false;
  }
  return true;
}

PyObject* g_requires_grad_descr = nullptr;  // TensorBase.requires_grad
getter g_requires_grad_get = nullptr;
void* g_requires_grad_closure = nullptr;

}  // namespace

std::string ShapeText(int ndim, const int64_t* shape) {
  std::string s = "[";
  for (int d = 0; d < ndim; ++d) {
    s += fmt::format("{}{}", d ? ", " : "", shape[d]);
  }
  return s + "]";
}

bool CheckSameDevice(const char* op, const char* what, const TensorRef& ref,
                     const TensorRef& first) {
  const tf_device& a = ref.view.device;
  const tf_device& b = first.view.device;
  if (a.device_type == b.device_type && a.device_id == b.device_id) {
    return true;
  }
  return RaiseError(PyExc_ValueError,
                    fmt::format("{}(): expected all tensors on one device, "
                                "but input is on {} and {} is on {}",
                                op, DeviceText(b), what, DeviceText(a)));
}

bool CheckSameDtype(const char* op, const char* what, const TensorRef& ref,
                    const TensorRef& first) {
  if (ref.dtype == first.dtype) return true;
  return RaiseError(
      PyExc_TypeError,
      fmt::format("{}(): expected {} to have dtype {} like "
                  "input, got {}; torchferry does not promote "
                  "types, cast first",
                  op, what, Dtype(first.dtype).name, Dtype(ref.dtype).name));
}

bool CheckFloat(const char* op, const TensorRef& ref) {
  if (Dtype(ref.dtype).is_float) return true;
  return RaiseError(PyExc_TypeError,
                    fmt::format("{}(): expected a floating-point input "
                                "(float32, float64, float16 or bfloat16), "
                                "got {}",
                                op, Dtype(ref.dtype).name));
}

bool CheckShape(const char* op, const char* what, const TensorRef& ref,
                int ndim, const int64_t* shape) {
  const tf_tensor& v = ref.view;
  bool same = v.ndim == ndim;
  for (int d = 0; same && d < ndim; ++d) same = v.shape[d] == shape[d];
  if (same) return true;
  return RaiseError(
      PyExc_ValueError,
      fmt::format("{}(): expected {} of shape {}, got {}", op, what,
                  ShapeText(ndim, shape), ShapeText(v.ndim, v.shape)));
}

bool CheckWritable(const char* op, const TensorRef& out) {
  if (out.numel == 0) return true;  // nothing is written
  const tf_tensor& v = out.view;
  for (int d = 0; d < v.ndim; ++d) {
    if (v.shape[d] > 1 && v.strides[d] == 0) {
      return RaiseError(
          PyExc_ValueError,
          fmt::format("{}(): out has stride 0 on dim {} of size {} (an "
                      "expanded tensor), so several results would land in "
                      "one element; pass a tensor with its own memory",
                      op, d, v.shape[d]));
    }
  }
  return true;
}

bool CheckNoOverlap(const char* op, const char* what, const TensorRef& input,
                    const TensorRef& out, bool exact_alias_ok) {
  uintptr_t in_lo, in_hi, out_lo, out_hi;
  MemorySpan(input, &in_lo, &in_hi);
  MemorySpan(out, &out_lo, &out_hi);
  if (in_lo == in_hi || out_lo == out_hi) return true;
  if (in_hi <= out_lo || out_hi <= in_lo) return true;
  if (exact_alias_ok && input.dtype == out.dtype &&
      SameLayout(input.view, out.view)) {
    return true;
  }
  return RaiseError(
      PyExc_ValueError,
      fmt::format("{}(): out overlaps {} in memory{}; pass a separate out "
                  "tensor",
                  op, what,
                  exact_alias_ok ? " without being exactly the same view"
                                 : " (this op does not work in place)"));
}

bool InitGradCheck(PyObject* torch_module) {
  PyObject* c = PyObject_GetAttrString(torch_module, "_C");
  PyObject* base = c ? PyObject_GetAttrString(c, "TensorBase") : nullptr;
  Py_XDECREF(c);
  if (base == nullptr) {
    PyErr_Clear();
    base = PyObject_GetAttrString(torch_module, "Tensor");
    if (base == nullptr) return false;
  }
  PyObject* descr = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(base),
                                   PyUnicode_InternFromString("requires_grad"));
  Py_DECREF(base);
  if (descr == nullptr || !PyObject_TypeCheck(descr, &PyGetSetDescr_Type)) {
    return RaiseError(PyExc_ImportError,
                      "torch.Tensor.requires_grad is not a C getter in this "
                      "torch; torchferry cannot check autograd cheaply");
  }
  Py_INCREF(descr);
  g_requires_grad_descr = descr;
  auto* gs = reinterpret_cast<PyGetSetDescrObject*>(descr)->d_getset;
  g_requires_grad_get = gs->get;
  g_requires_grad_closure = gs->closure;
  return true;
}

bool CheckNoGrad(const char* op, const TensorRef& ref) {
  if (ref.view.source_kind != TF_SOURCE_ATEN) return true;  // not torch's
  PyObject* value = g_requires_grad_get(ref.object, g_requires_grad_closure);
  if (value == nullptr) return false;
  bool requires = value == Py_True;
  Py_DECREF(value);
  if (!requires) return true;
  return RaiseError(PyExc_RuntimeError,
                    fmt::format("{}(): functions with out=... arguments don't "
                                "support automatic differentiation, but one "
                                "of the arguments requires grad; call it "
                                "under torch.no_grad() or pass detached "
                                "tensors",
                                op));
}

bool BroadcastShapes(const char* op, const TensorRef& x, const TensorRef& y,
                     int* ndim, int64_t* shape) {
  const tf_tensor& a = x.view;
  const tf_tensor& b = y.view;
  int n = std::max(a.ndim, b.ndim);
  if (n > kMaxRank) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}(): broadcasting supports up to {} "
                                  "dims, got {}",
                                  op, kMaxRank, n));
  }
  for (int d = 0; d < n; ++d) {
    int da = d - (n - a.ndim), db = d - (n - b.ndim);
    int64_t sa = da >= 0 ? a.shape[da] : 1;
    int64_t sb = db >= 0 ? b.shape[db] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      return RaiseError(
          PyExc_ValueError,
          fmt::format("{}(): the size of tensor a ({}) must match the size "
                      "of tensor b ({}) at non-singleton dimension {}; "
                      "shapes {} and {} do not broadcast",
                      op, sa, sb, d, ShapeText(a.ndim, a.shape),
                      ShapeText(b.ndim, b.shape)));
    }
    shape[d] = sa == 1 ? sb : sa;
  }
  *ndim = n;
  return true;
}

bool BroadcastTo(const char* op, CallFrame& frame, TensorRef* ref, int ndim,
                 const int64_t* shape) {
  tf_tensor& v = ref->view;
  if (v.ndim == ndim &&
      std::equal(shape, shape + ndim, static_cast<const int64_t*>(v.shape))) {
    return true;
  }
  int64_t* new_shape = frame.Arena(ndim);
  int64_t* new_strides = frame.Arena(ndim);
  if (new_shape == nullptr || new_strides == nullptr) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}(): too many broadcast operands", op));
  }
  for (int d = 0; d < ndim; ++d) {
    int src = d - (ndim - v.ndim);
    new_shape[d] = shape[d];
    new_strides[d] = (src < 0 || v.shape[src] == 1) ? 0 : v.strides[src];
  }
  v.ndim = ndim;
  v.shape = new_shape;
  v.strides = new_strides;
  v.flags = 0;  // stride 0 on a dim of size > 1 is never compact
  for (int d = 0; d < ndim; ++d) {
    if (new_shape[d] == 0) v.flags = TF_TENSOR_CONTIGUOUS;
  }
  return true;
}

}  // namespace torchferry
