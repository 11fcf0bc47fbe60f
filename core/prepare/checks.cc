#include "core/prepare/checks.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>

#include "core/bridge/bridge.h"
#include "core/bridge/impl_words.h"
#include "core/bridge/py_errors.h"

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

// Whether some element of `a` and some element of `b` share a byte, decided
// exactly: is there an index i of a and j of b with
//   a.data + sum(i_d * a.stride_d) - b.data - sum(j_d * b.stride_d)
// (in bytes) inside (-itemsize(a), itemsize(b))? Each dim is a term d * step
// with d in a range; terms of equal step merge (a's and b's columns of one
// matrix give one term), and a depth-first search over the terms, largest
// step first, prunes every choice that the remaining terms cannot bring into
// the target. Strides of real tensors make that search a few steps; a
// pathological pair runs out of budget and is reported as undecided.
enum class Overlap { kNone, kSome, kUndecided };

// Byte offsets of both views and their differences, without overflow.
__extension__ typedef __int128 Wide;

Overlap FindOverlap(const TensorRef& a, const TensorRef& b) {
  struct Term {
    Wide step;  // > 0
    Wide lo, hi;
  };
  Term terms[2 * kMaxRank + 2];
  int n = 0;
  auto add = [&](int64_t stride, int64_t size, int64_t itemsize, bool neg) {
    if (size <= 1 || stride == 0) return;
    Wide step = static_cast<Wide>(stride) * itemsize;
    Wide lo = 0, hi = size - 1;
    if (neg) lo = -hi, hi = 0;  // b's terms count negatively
    if (step < 0) step = -step, std::swap(lo, hi), lo = -lo, hi = -hi;
    for (int t = 0; t < n; ++t) {
      if (terms[t].step == step) {
        terms[t].lo += lo;
        terms[t].hi += hi;
        return;
      }
    }
    terms[n++] = {step, lo, hi};
  };
  const int64_t isa = Dtype(a.dtype).itemsize, isb = Dtype(b.dtype).itemsize;
  if (a.view.ndim > kMaxRank || b.view.ndim > kMaxRank) {
    return Overlap::kUndecided;
  }
  for (int d = 0; d < a.view.ndim; ++d) {
    add(a.view.strides[d], a.view.shape[d], isa, false);
  }
  for (int d = 0; d < b.view.ndim; ++d) {
    add(b.view.strides[d], b.view.shape[d], isb, true);
  }
  std::sort(terms, terms + n,
            [](const Term& x, const Term& y) { return x.step > y.step; });
  // The sums the terms from k on can still reach.
  Wide reach_lo[2 * kMaxRank + 3], reach_hi[2 * kMaxRank + 3];
  reach_lo[n] = reach_hi[n] = 0;
  for (int k = n - 1; k >= 0; --k) {
    reach_lo[k] = reach_lo[k + 1] + terms[k].lo * terms[k].step;
    reach_hi[k] = reach_hi[k + 1] + terms[k].hi * terms[k].step;
  }
  const Wide gap = static_cast<Wide>(reinterpret_cast<intptr_t>(b.view.data)) -
                   reinterpret_cast<intptr_t>(a.view.data);
  const Wide target_lo = gap - (isa - 1), target_hi = gap + (isb - 1);
  auto floor_div = [](Wide x, Wide y) {
    return x >= 0 ? x / y : -((-x + y - 1) / y);
  };
  int budget = 4096;
  // Is there a choice for terms k.. that lands the sum in the target?
  auto search = [&](auto&& self, int k, Wide partial) -> Overlap {
    if (k == n) {
      return partial >= target_lo && partial <= target_hi ? Overlap::kSome
                                                          : Overlap::kNone;
    }
    const Term& t = terms[k];
    const Wide lo = std::max(
        t.lo, -floor_div(-(target_lo - partial - reach_hi[k + 1]), t.step));
    const Wide hi = std::min(
        t.hi, floor_div(target_hi - partial - reach_lo[k + 1], t.step));
    if (k == n - 1) return lo <= hi ? Overlap::kSome : Overlap::kNone;
    for (Wide d = lo; d <= hi; ++d) {
      if (--budget < 0) return Overlap::kUndecided;
      const Overlap o = self(self, k + 1, partial + d * t.step);
      if (o != Overlap::kNone) return o;
    }
    return Overlap::kNone;
  };
  return search(search, 0, 0);
}

getter g_requires_grad_get = nullptr;  // TensorBase.requires_grad's getter
void* g_requires_grad_closure = nullptr;

// c10::TensorImpl::requires_grad() const, which libc10 exports: torch's own
// answer (autograd_meta_ && autograd_meta_->requires_grad(): the flag, or a
// grad_fn, or a view's base that requires grad), read from the TensorImpl
// with no Python, so a subclass's __torch_function__ is never asked. A
// member function taking only `this`, called as a function of it (Itanium
// C++ ABI); trusted only once it has agreed with the getter at start-up.
using ImplRequiresGrad = bool (*)(const void*);
ImplRequiresGrad g_impl_requires_grad = nullptr;
constexpr char kImplRequiresGrad[] = "_ZNK3c1010TensorImpl13requires_gradEv";
std::string g_grad_detail;

// The byte offset of TensorImpl::autograd_meta_, the field after storage_ in
// every torch 2.x, or -1 where start-up could not confirm it. A tensor with
// no autograd metadata cannot require grad, which settles the check for most
// tensors with one load instead of a call.
Py_ssize_t g_autograd_meta_at = -1;

// Tensors whose requires_grad start-up knows from torch's getter (plain
// tensors, no __torch_function__): none with autograd metadata, leaves that
// do and do not require grad, a result of autograd, and a view whose base
// was made to require grad after the view was taken (true only through the
// base). Returns how many it made; null entries where torch failed.
int MakeGradSamples(PyObject* torch_module, PyObject** t) {
  auto call = [](PyObject* o, const char* method, const char* format,
                 auto... args) -> PyObject* {
    return o ? PyObject_CallMethod(o, method, format, args...) : nullptr;
  };
  auto chain = [](PyObject* o, PyObject* r) {  // keeps o, drops the result
    Py_XDECREF(r);
    return r != nullptr ? o : nullptr;
  };
  t[0] = call(torch_module, "empty", "(i)", 4);
  t[1] = call(torch_module, "ones", "(i)", 3);
  t[1] = t[1] ? chain(t[1], call(t[1], "requires_grad_", nullptr)) : nullptr;
  t[2] = call(torch_module, "zeros", "(i)", 2);
  t[2] = t[2] ? chain(t[2], call(t[2], "requires_grad_", nullptr)) : nullptr;
  t[3] = call(t[2], "mul", "(i)", 2);
  t[4] = call(torch_module, "ones", "(i)", 5);
  PyObject* on = call(t[4], "requires_grad_", nullptr);
  PyObject* r = on ? call(t[4], "requires_grad_", "(O)", Py_False) : nullptr;
  Py_XDECREF(on);
  if (r == nullptr) Py_CLEAR(t[4]);
  Py_XDECREF(r);
  t[5] = call(torch_module, "ones", "(i)", 6);
  t[6] = call(t[5], "__getitem__", "(O)", Py_Ellipsis);  // a view of t[5]
  r = t[6] ? call(t[5], "requires_grad_", nullptr) : nullptr;
  if (r == nullptr) Py_CLEAR(t[6]);
  Py_XDECREF(r);
  return 7;
}

// Confirms autograd_meta_'s offset and c10::TensorImpl::requires_grad
// against the getter on the samples.
void ProbeRequiresGrad(PyObject* torch_module) {
  const StorageProbe& storage = Bridge::Get().storage_probe();
  void* lib = Bridge::Get().library().cpu_handle;
  auto fn = reinterpret_cast<ImplRequiresGrad>(
      lib ? dlsym(lib, kImplRequiresGrad) : nullptr);
  const Py_ssize_t at = storage.calibrated()
                            ? storage.storage_at() + Py_ssize_t{sizeof(void*)}
                            : -1;
  PyObject* t[8] = {};
  const int n = MakeGradSamples(torch_module, t);
  bool fn_ok = fn != nullptr, meta_ok = at >= 0, seen[2] = {};
  const void* metas[8] = {};
  for (int i = 0; i < n; ++i) {
    PyObject* value =
        t[i] ? g_requires_grad_get(t[i], g_requires_grad_closure) : nullptr;
    const char* impl = value ? TensorImplOf(t[i]) : nullptr;
    if (impl == nullptr) {
      fn_ok = meta_ok = false;
      Py_XDECREF(value);
      break;
    }
    const bool wants_grad = value == Py_True;
    Py_DECREF(value);
    seen[wants_grad] = true;
    if (fn_ok) fn_ok = fn(impl) == wants_grad;
    if (meta_ok) metas[i] = WordAt<const void*>(impl, at);
  }
  // No metadata for a fresh tensor; distinct metadata for the others.
  meta_ok = meta_ok && metas[0] == nullptr && metas[1] != nullptr &&
            metas[2] != nullptr && metas[1] != metas[2];
  if (meta_ok) g_autograd_meta_at = at;
  if (fn_ok && seen[false] && seen[true]) g_impl_requires_grad = fn;
  for (PyObject* o : t) Py_XDECREF(o);
  PyErr_Clear();
  if (g_impl_requires_grad == nullptr) {
    g_grad_detail = fmt::format(
        "requires_grad read through torch's getter with "
        "__torch_function__ held off ({})",
        fn == nullptr ? "libc10 exports no "
                        "c10::TensorImpl::requires_grad"
                      : "c10::TensorImpl::requires_grad "
                        "disagreed with the getter at start-up");
  } else if (g_autograd_meta_at < 0) {
    g_grad_detail =
        "requires_grad read by c10::TensorImpl::requires_grad for every "
        "tensor (TensorImpl::autograd_meta_ not found)";
  } else {
    g_grad_detail = fmt::format(
        "requires_grad read from the TensorImpl: autograd_meta_ at byte {}, "
        "c10::TensorImpl::requires_grad for tensors that have it",
        g_autograd_meta_at);
  }
  g_grad_detail +=
      "; the getter, held off __torch_function__, only for a tensor whose "
      "TensorImpl is not at hand";
}

// What torch's TensorImpl says, or -1 where this tensor's TensorImpl or the
// function is not at hand.
int ImplRequiresGradOf(const TensorRef& ref) {
  const AtenTensorHandle handle = ref.probe_handle();
  if (handle == nullptr) return -1;
  const char* impl = TensorImplOfHandle(handle);
  if (g_autograd_meta_at >= 0 &&
      WordAt<const void*>(impl, g_autograd_meta_at) == nullptr) {
    return 0;
  }
  if (g_impl_requires_grad == nullptr) return -1;
  return g_impl_requires_grad(impl) ? 1 : 0;
}

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

bool CheckResultFits(const char* op, DtypeIndex dtype, int ndim,
                     const int64_t* shape) {
  // The strides of a contiguous result, in bytes: the product of the sizes
  // (a size of 0 counting as 1, as torch counts it, so that an empty result
  // of shape [0, 2**62, 4] is refused as torch refuses it) times itemsize.
  int64_t bytes = dtype == kNoDtype ? 1 : Dtype(dtype).itemsize;
  bool overflow = false;
  for (int d = 0; d < ndim; ++d) {
    overflow |=
        __builtin_mul_overflow(bytes, std::max<int64_t>(shape[d], 1), &bytes);
  }
  if (!overflow) return true;
  return RaiseError(
      PyExc_ValueError,
      fmt::format("{}(): the inputs' sizes give a result of shape {}, whose "
                  "sizes multiply past 2**63 - 1 bytes of {}; expected a "
                  "result whose strides and size in bytes fit in int64",
                  op, ShapeText(ndim, shape),
                  dtype == kNoDtype ? "elements" : Dtype(dtype).name));
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

bool CheckNoOverlap(const char* op, const char* what, const TensorRef& input,
                    const TensorRef& out, bool exact_alias_ok,
                    const char* out_name) {
  uintptr_t in_lo, in_hi, out_lo, out_hi;
  MemorySpan(input, &in_lo, &in_hi);
  MemorySpan(out, &out_lo, &out_hi);
  if (in_lo == in_hi || out_lo == out_hi) return true;
  if (in_hi <= out_lo || out_hi <= in_lo) return true;
  const bool same_view =
      input.dtype == out.dtype && SameLayout(input.view, out.view);
  if (exact_alias_ok && same_view) return true;
  // The byte ranges meet; the elements may still not (m[:, 0] and m[:, 1]).
  const Overlap overlap = same_view ? Overlap::kSome : FindOverlap(input, out);
  if (overlap == Overlap::kNone) return true;
  if (overlap == Overlap::kUndecided) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}(): {} and {} interleave in memory in a way too "
                    "costly to check element by element, so they may share "
                    "elements; pass a separate {} tensor",
                    op, out_name, what, out_name));
  }
  return RaiseError(
      PyExc_ValueError,
      fmt::format("{}(): {} overlaps {} in memory{}; pass a separate {} "
                  "tensor",
                  op, out_name, what,
                  exact_alias_ok ? " without being exactly the same view"
                                 : " (this op does not work in place)",
                  out_name));
}

bool CheckNoOverlap(const char* op, int n, const char* const* names,
                    const TensorRef* const* inputs, const TensorRef& out,
                    bool exact_alias_ok, const char* out_name) {
  for (int i = 0; i < n; ++i) {
    if (!CheckNoOverlap(op, names[i], *inputs[i], out, exact_alias_ok,
                        out_name)) {
      return false;
    }
  }
  return true;
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
  auto* gs = reinterpret_cast<PyGetSetDescrObject*>(descr)->d_getset;
  g_requires_grad_get = gs->get;
  g_requires_grad_closure = gs->closure;
  ProbeRequiresGrad(torch_module);
  return true;
}

const std::string& GradCheckDetail() { return g_grad_detail; }

bool CheckNoGrad(const char* op, const TensorRef& ref, bool out_given,
                 CallFrame& f, bool* getter_ran) {
  if (!ref.is_torch()) return true;  // not torch's
  int grad = ImplRequiresGradOf(ref);
  if (grad < 0) {
    // torch's getter itself, never the object's class's, with
    // __torch_function__ held off: a subclass or a mode has no say.
    const Bridge::HeldOff held(Bridge::Get(), ref.object);
    if (!held.quiet()) {
      f.NotePython();
      *getter_ran = true;
    }
    PyObject* value = g_requires_grad_get(ref.object, g_requires_grad_closure);
    if (value == nullptr) return false;
    grad = value == Py_True;
    Py_DECREF(value);
  }
  if (!grad) return true;
  return RaiseError(
      PyExc_RuntimeError,
      fmt::format("{}(): {} support automatic differentiation, but one of "
                  "the arguments requires grad; call it under "
                  "torch.no_grad() or pass detached tensors",
                  op,
                  out_given ? "functions with out=... arguments don't"
                            : "torchferry ops don't"));
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
