#include "core/python/infer_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/kernel_cache.h"
#include "core/prepare/prepare.h"
#include "core/python/dispatch.h"
#include "core/python/op_functions.h"

namespace torchferry {
namespace {

// (shape[0], ..., shape[ndim-1]) as a new tuple, or nullptr with an exception.
PyObject* ShapeTuple(int ndim, const int64_t* shape) {
  PyObject* dims = PyTuple_New(ndim);
  for (int d = 0; dims != nullptr && d < ndim; ++d) {
    PyObject* size = PyLong_FromLongLong(shape[d]);
    if (size == nullptr)
      Py_CLEAR(dims);
    else
      PyTuple_SET_ITEM(dims, d, size);
  }
  return dims;
}

// Answers the preparation rule for tensors that are only specs: a
// (shape, dtype) tuple stands for a contiguous tensor on `device`. Each spec
// gets an address range of its own, so that the overlap checks see distinct
// tensors; nothing is allocated, and infer never reads data (ABI.md).
class SpecSource : public TensorSource {
 public:
  explicit SpecSource(tf_device device) : device_(device) {}
  ~SpecSource() override = default;

  bool Take(PyObject* obj, const char* what, bool writable,
            TensorRef* ref) override {
    (void)writable;
    Spec& s = specs_.emplace_back();
    if (!Parse(obj, what, &s)) return false;
    *ref = TensorRef{};
    tf_tensor& v = ref->view;
    // Far apart, never dereferenced: only the overlap checks look at them.
    v.data =
        reinterpret_cast<void*>(static_cast<uintptr_t>(specs_.size()) << 44);
    v.device = device_;
    v.ndim = static_cast<int32_t>(s.shape.size());
    v.dtype = Dtype(s.dtype).dtype;
    v.shape = s.shape.data();
    v.strides = s.strides.data();
    v.source_kind = TF_SOURCE_NONE;
    v.flags = TF_TENSOR_CONTIGUOUS;
    ref->dtype = s.dtype;
    ref->numel = s.numel;
    ref->object = obj;
    return true;
  }

  PyObject* Allocate(const TensorRef& like, DtypeIndex dtype, int ndim,
                     const int64_t* shape) override {
    (void)like;
    PyObject* dims = ShapeTuple(ndim, shape);
    return dims == nullptr ? nullptr
                           : Py_BuildValue("(Ns)", dims, Dtype(dtype).name);
  }

 private:
  struct Spec {
    std::vector<int64_t> shape, strides;
    DtypeIndex dtype = kNoDtype;
    int64_t numel = 1;
  };

  static bool Parse(PyObject* obj, const char* what, Spec* s) {
    PyObject* dims = nullptr;
    const char* dtype = nullptr;
    if (!PyTuple_Check(obj) || !PyArg_ParseTuple(obj, "Os", &dims, &dtype) ||
        !PyTuple_Check(dims)) {
      PyErr_Clear();
      return RaiseError(PyExc_TypeError,
                        fmt::format("{}: expected a (shape tuple, dtype name) "
                                    "spec, got {}",
                                    what, Py_TYPE(obj)->tp_name));
    }
    for (int d = 0; d < kNumDtypes; ++d) {
      if (std::string(Dtype(static_cast<DtypeIndex>(d)).name) == dtype) {
        s->dtype = static_cast<DtypeIndex>(d);
      }
    }
    if (s->dtype == kNoDtype) {
      return RaiseError(PyExc_TypeError,
                        fmt::format("{}: unknown dtype '{}'; expected one "
                                    "ABI.md lists, e.g. 'float32'",
                                    what, dtype));
    }
    const Py_ssize_t ndim = PyTuple_GET_SIZE(dims);
    if (ndim > TF_MAX_NDIM) {
      return RaiseError(PyExc_ValueError,
                        fmt::format("{}: expected at most {} dims, got {}",
                                    what, TF_MAX_NDIM, ndim));
    }
    s->shape.resize(ndim);
    s->strides.resize(ndim);
    for (Py_ssize_t d = 0; d < ndim; ++d) {
      const long long size = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, d));
      if (size == -1 && PyErr_Occurred()) return false;
      if (size < 0) {
        return RaiseError(PyExc_ValueError,
                          fmt::format("{}: expected sizes >= 0, got {} on dim "
                                      "{}",
                                      what, size, d));
      }
      s->shape[d] = size;
    }
    // The spec stands for a contiguous tensor: its strides, element count
    // and bytes must fit in int64, as any tensor torch makes does.
    int64_t stride = 1, bytes = 0;
    bool overflow = false;
    for (Py_ssize_t d = ndim - 1; d >= 0; --d) {
      s->strides[d] = stride;
      overflow |= __builtin_mul_overflow(
                      stride, std::max<int64_t>(s->shape[d], 1), &stride) ||
                  __builtin_mul_overflow(s->numel, s->shape[d], &s->numel);
    }
    overflow |=
        __builtin_mul_overflow(s->numel, Dtype(s->dtype).itemsize, &bytes);
    if (overflow) {
      return RaiseError(
          PyExc_ValueError,
          fmt::format("{}: a spec of shape {} holds more than 2**63 - 1 "
                      "bytes of {}; expected the shape of a tensor torch can "
                      "make",
                      what, ShapeText(static_cast<int>(ndim), s->shape.data()),
                      Dtype(s->dtype).name));
    }
    return true;
  }

  tf_device device_;
  std::deque<Spec> specs_;  // the views point into these
};

// (shape, dtype name) of the frame's output(i).
PyObject* OutputSpec(CallFrame& frame, int i) {
  const tf_tensor& t = frame.output(i);
  PyObject* dims = ShapeTuple(t.ndim, t.shape);
  return dims == nullptr
             ? nullptr
             : Py_BuildValue("(Ns)", dims, Dtype(frame.written(i)->dtype).name);
}

}  // namespace

PyObject* InferSpec(const Registry& registry, PyObject* args) {
  const char *name, *device;
  PyObject* values;
  PyObject* out;
  if (!PyArg_ParseTuple(args, "ssO!O", &name, &device, &PyTuple_Type, &values,
                        &out)) {
    return nullptr;
  }
  tf_device dev;
  if (!DeviceNamed(device, &dev)) return nullptr;
  const OpFunction* found = FunctionNamed(registry, name);
  if (found == nullptr) return nullptr;
  const OpFunction& fn = *found;
  if (fn.entry->geometry == Geometry::kNoop) {
    RaiseError(PyExc_ValueError, "noop has no output to infer");
    return nullptr;
  }
  if (PyTuple_GET_SIZE(values) != fn.signature.num_params) {
    RaiseError(PyExc_TypeError,
               fmt::format("{}: expected {} argument values, got {}", name,
                           fn.signature.num_params, PyTuple_GET_SIZE(values)));
    return nullptr;
  }
  ParsedArgs parsed{};
  for (int i = 0; i < fn.signature.num_params; ++i) {
    parsed.values[i] = PyTuple_GET_ITEM(values, i);
  }
  parsed.out = out;
  SpecSource source(dev);
  CallFrame frame(Bridge::Get(), fn.name.c_str());
  frame.set_source(&source);
  // The very preparation an eager call runs, declared ops' infer and its
  // checks included; only the tensors are specs.
  if (!PrepareCall(fn, parsed, frame)) return nullptr;
  if (frame.dispatch_ref() == nullptr) Py_RETURN_NONE;  // no tensor: no output
  const tf_device& key = frame.dispatch_ref()->view.device;
  const OpId kernel_op =
      frame.kernel_op() >= 0 ? static_cast<OpId>(frame.kernel_op()) : fn.id;
  if (KernelCache::Get().Find(kernel_op, key, frame.dispatch_ref()->dtype) ==
      nullptr) {
    RaiseNoKernel(fn.name.c_str(), key, frame.dispatch_ref()->dtype);
    return nullptr;
  }
  if (frame.num_returned() > 1) {  // several returns: a list of their specs
    PyObject* specs = PyList_New(frame.num_returned());
    for (int i = 0; specs != nullptr && i < frame.num_returned(); ++i) {
      PyObject* spec = OutputSpec(frame, i);
      if (spec == nullptr) {
        Py_CLEAR(specs);
        break;
      }
      PyList_SET_ITEM(specs, i, spec);
    }
    return specs;
  }
  if (frame.result() == nullptr) Py_RETURN_NONE;  // writes only in place
  return OutputSpec(frame, 0);
}

}  // namespace torchferry
