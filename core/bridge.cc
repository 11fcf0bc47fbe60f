#include "core/bridge.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "core/dlpack_abi.h"
#include "core/impl_words.h"
#include "core/py_errors.h"

namespace torchferry {
namespace {

constexpr const char* kPathNames[kNumBridgePaths] = {"shim", "offset",
                                                     "dlpack"};
constexpr uint32_t kDlpackMajor = 1;  // the DLPack major this host reads

// Every Read and Release runs with the GIL held, which already serialises
// them: a relaxed load and store (no locked instruction) keeps the counts
// exact at a fraction of an atomic increment's cost. Free-threaded CPython
// has no GIL, so there the count is a real atomic add.
inline void Bump(std::atomic<uint64_t>& counter) {
#ifdef Py_GIL_DISABLED
  counter.fetch_add(1, std::memory_order_relaxed);
#else
  counter.store(counter.load(std::memory_order_relaxed) + 1,
                std::memory_order_relaxed);
#endif
}

uint32_t ContiguityFlag(int64_t ndim, const int64_t* shape,
                        const int64_t* strides) {
  int64_t expected = 1;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;  // any stride is fine on a size-1 dim
    if (shape[d] == 0) return TF_TENSOR_CONTIGUOUS;
    if (strides[d] != expected) return 0;
    // Only a foreign (DLPack) tensor can get here with sizes whose product
    // overflows; such a tensor is refused later, and is not compact.
    if (__builtin_mul_overflow(expected, shape[d], &expected)) return 0;
  }
  return TF_TENSOR_CONTIGUOUS;
}

int64_t Numel(int64_t ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int64_t d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

// A DLPack producer is someone else's code: everything it describes is
// checked before a kernel may walk it. Returns what is wrong ("" when
// nothing), with the Python exception type to raise.
std::string CheckDlpackTensor(const dlpack::Tensor& dl, DtypeIndex* dtype,
                              int64_t* numel, PyObject** error_type) {
  *error_type = PyExc_TypeError;
  if (dl.device.device_type != TF_DEVICE_CPU &&
      dl.device.device_type != TF_DEVICE_CUDA) {
    *error_type = PyExc_NotImplementedError;
    return fmt::format(
        "DLPack device type {} is not carried; expected cpu (1) or cuda (2)",
        dl.device.device_type);
  }
  *dtype = DtypeFromDlpack(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes);
  if (*dtype == kNoDtype) {
    return fmt::format(
        "torchferry does not carry DLPack dtype (code {}, {} bits, {} lanes); "
        "expected a float, int, uint8 or bool dtype",
        dl.dtype.code, dl.dtype.bits, dl.dtype.lanes);
  }
  constexpr int32_t kMaxDims = 64;
  *error_type = PyExc_ValueError;
  if (dl.ndim < 0 || dl.ndim > kMaxDims || (dl.ndim > 0 && !dl.shape)) {
    return fmt::format(
        "the DLPack tensor has {} dims{}; expected 0 to {} "
        "with a shape",
        dl.ndim, dl.shape ? "" : " and no shape", kMaxDims);
  }
  if (dl.strides == nullptr && dl.ndim > 1) {
    *error_type = PyExc_NotImplementedError;
    return "the DLPack tensor has no strides (a DLPack < 0.6 compact "
           "tensor); pass a torch tensor";
  }
  // Elements, and the furthest element in each direction, must fit int64.
  int64_t count = 1, reach = 0;
  for (int32_t d = 0; d < dl.ndim; ++d) {
    const int64_t size = dl.shape[d];
    const int64_t stride = dl.strides ? dl.strides[d] : 1;
    int64_t step;
    if (size < 0) {
      return fmt::format("the DLPack tensor has size {} on dim {}", size, d);
    }
    if (__builtin_mul_overflow(count, size, &count) ||
        (size > 0 &&
         (__builtin_mul_overflow(size - 1, stride, &step) ||
          step == INT64_MIN ||  // has no positive counterpart
          __builtin_add_overflow(reach, step < 0 ? -step : step, &reach)))) {
      return "the DLPack tensor describes more elements or bytes than fit in "
             "int64";
    }
  }
  const int64_t itemsize = Dtype(*dtype).itemsize;
  int64_t span, bytes;
  if (__builtin_add_overflow(reach, 1, &span) ||
      __builtin_mul_overflow(span, itemsize, &bytes) ||
      dl.byte_offset > static_cast<uint64_t>(INT64_MAX - bytes)) {
    return "the DLPack tensor describes more bytes than fit in int64";
  }
  if (dl.data == nullptr && count > 0) {
    return fmt::format(
        "the DLPack tensor has {} elements but a NULL data "
        "pointer",
        count);
  }
  *numel = count;
  return "";
}

}  // namespace

const char* BridgePathName(BridgePath path) {
  return kPathNames[static_cast<int>(path)];
}

Bridge& Bridge::Get() {
  static Bridge* bridge = new Bridge();  // never destroyed: used until exit
  return *bridge;
}

void Bridge::ResetCounts() {
  for (auto& c : counts_) c.store(0);
  shim_created_.store(0);
  shim_deleted_.store(0);
}

bool Bridge::Init(PyObject* torch_module, const char* torch_version) {
  if (initialized_) return true;
  torch_version_ = torch_version;
  int major = 0, minor = 0;
  if (std::sscanf(torch_version, "%d.%d", &major, &minor) != 2) {
    return RaiseError(PyExc_ImportError,
                      fmt::format("torchferry could not parse the torch "
                                  "version '{}'; expected 'X.Y.Z'",
                                  torch_version));
  }
  // Symbols first: what a torch lacks says more than its version does.
  std::string error;
  if (!ResolveTorchLibrary(&lib_, &error) ||
      !VerifyTorchDtypeCodes(lib_.cpu_handle, &error)) {
    return RaiseError(PyExc_ImportError,
                      fmt::format("torchferry cannot use torch {}: {}",
                                  torch_version, error));
  }
  if (major < 2 || (major == 2 && minor < 9)) {
    return RaiseError(
        PyExc_ImportError,
        fmt::format("torchferry needs torch >= 2.9, found torch {}; upgrade "
                    "torch (pip install 'torch>=2.9')",
                    torch_version));
  }
  torch_cpu_ = lib_.api.device_type_cpu();
  torch_cuda_ = lib_.api.device_type_cuda();
  torch_meta_ = lib_.api.device_type_meta();
  strided_ = lib_.api.layout_strided();

  PyObject* tensor = PyObject_GetAttrString(torch_module, "Tensor");
  PyObject* nn = tensor ? PyObject_GetAttrString(torch_module, "nn") : nullptr;
  PyObject* parameter = nn ? PyObject_GetAttrString(nn, "Parameter") : nullptr;
  Py_XDECREF(nn);
  if (parameter == nullptr || !PyType_Check(tensor) ||
      !PyType_Check(parameter)) {
    Py_XDECREF(tensor);
    Py_XDECREF(parameter);
    return RaiseError(PyExc_ImportError,
                      "torch.Tensor or torch.nn.Parameter is missing or not "
                      "a type; is this a real torch?");
  }
  tensor_type_ = reinterpret_cast<PyTypeObject*>(tensor);  // kept for life
  parameter_type_ = reinterpret_cast<PyTypeObject*>(parameter);
  plain_torch_dispatch_ = _PyType_Lookup(
      tensor_type_, PyUnicode_InternFromString("__torch_dispatch__"));
  if (plain_torch_dispatch_ == nullptr) {
    return RaiseError(PyExc_ImportError,
                      "torch.Tensor has no __torch_dispatch__; is this a "
                      "real torch?");
  }
  Py_INCREF(plain_torch_dispatch_);  // kept for life
  {
    PyObject* nn_parameter = PyImport_ImportModule("torch.nn.parameter");
    PyObject* mixin =
        nn_parameter
            ? PyObject_GetAttrString(nn_parameter, "UninitializedTensorMixin")
            : nullptr;
    Py_XDECREF(nn_parameter);
    if (mixin != nullptr && PyType_Check(mixin)) {
      uninitialized_type_ = reinterpret_cast<PyTypeObject*>(mixin);
    } else {
      Py_XDECREF(mixin);
    }
    PyErr_Clear();  // older torches without lazy modules: nothing to refuse
  }
  // Tensor.is_neg is a METH_NOARGS C function; calling its pointer directly
  // costs a few ns where an attribute lookup and call would cost a hundred.
  PyObject* is_neg =
      _PyType_Lookup(tensor_type_, PyUnicode_InternFromString("is_neg"));
  if (is_neg == nullptr || !PyObject_TypeCheck(is_neg, &PyMethodDescr_Type) ||
      reinterpret_cast<PyMethodDescrObject*>(is_neg)->d_method->ml_flags !=
          METH_NOARGS) {
    return RaiseError(PyExc_ImportError,
                      "torch.Tensor.is_neg is not a plain C method in this "
                      "torch; torchferry cannot check the negative bit");
  }
  is_neg_ = reinterpret_cast<PyMethodDescrObject*>(is_neg)->d_method->ml_meth;

  Calibrate(torch_module, major, minor);
  ProbeNegBit(torch_module);
  // The key set the negative-bit probe found is a TensorImpl field: the
  // bytes up to it lie inside every TensorImpl, and the other probes read
  // no further (past the object's end lies the next heap block).
  const Py_ssize_t impl_bytes =
      neg_probe_.ok ? neg_probe_.keyset_offset + 8 : 0;
  versions_.Calibrate(torch_module, impl_bytes);
  storage_.Calibrate(torch_module, &lib_.api, impl_bytes);

  const char* forced = std::getenv("TORCHFERRY_BRIDGE");
  if (forced != nullptr && forced[0] != '\0' &&
      std::strcmp(forced, "auto") != 0) {
    if (!SetPath(forced)) return false;
    path_reason_ = fmt::format("forced by TORCHFERRY_BRIDGE={}", forced);
  } else if (shim_available() && lib_.api.delete_tensor_object != nullptr) {
    path_ = BridgePath::kShim;
    path_reason_ =
        "torch_tensor_from_pyobject and aoti_torch_delete_tensor_object "
        "resolve in libtorch";
  } else if (calibration_.ok) {
    path_ = BridgePath::kOffset;
    path_reason_ = fmt::format(
        "torch_tensor_from_pyobject is absent from libtorch; the at::Tensor "
        "offset was calibrated: {}",
        calibration_.detail);
  } else {
    return RaiseError(
        PyExc_ImportError,
        fmt::format("torchferry has no bridge path under torch {}: "
                    "torch_tensor_from_pyobject is absent (torch < 2.14) and "
                    "offset calibration failed: {}",
                    torch_version, calibration_.detail));
  }
  initialized_ = true;
  return true;
}

bool Bridge::SetPath(const char* name) {
  if (std::strcmp(name, "shim") == 0) {
    if (!shim_available()) {
      return RaiseError(
          PyExc_RuntimeError,
          fmt::format("bridge path 'shim' is unavailable under torch {}: "
                      "libtorch does not export torch_tensor_from_pyobject "
                      "(added in torch 2.14)",
                      torch_version_));
    }
    path_ = BridgePath::kShim;
    return true;
  }
  if (std::strcmp(name, "offset") == 0) {
    if (!calibration_.ok) {
      return RaiseError(
          PyExc_RuntimeError,
          fmt::format("bridge path 'offset' is unavailable under torch {}: "
                      "calibration failed: {}",
                      torch_version_, calibration_.detail));
    }
    path_ = BridgePath::kOffset;
    return true;
  }
  if (std::strcmp(name, "auto") == 0) {
    path_ = shim_available() ? BridgePath::kShim : BridgePath::kOffset;
    return path_ == BridgePath::kShim || calibration_.ok ||
           RaiseError(PyExc_RuntimeError, "no bridge path is available");
  }
  return RaiseError(PyExc_ValueError,
                    fmt::format("unknown bridge path '{}'; expected 'auto', "
                                "'shim' or 'offset'",
                                name));
}

// The offset path must never read a guessed address: take a tensor whose
// TensorImpl* we know (tensor._cdata), look for it at the offset this torch's
// layout predicts, and confirm through the AOTI getters that the handle there
// describes that tensor. Anything else refuses the path.
void Bridge::Calibrate(PyObject* torch_module, int major, int minor) {
  OffsetCalibration& c = calibration_;
  const Py_ssize_t head = static_cast<Py_ssize_t>(sizeof(PyObject));
  if (major > 2 || (major == 2 && minor >= 10)) {
    c.tensor_offset = head;  // at::Tensor cdata right after PyObject_HEAD
  } else {
    c.borrowed_flag_offset = head;  // c10::MaybeOwned: bool, then the tensor
    c.tensor_offset = head + static_cast<Py_ssize_t>(sizeof(void*));
  }
  PyObject* tensor =
      PyObject_CallMethod(torch_module, "empty", "(iii)", 2, 3, 5);
  PyObject* base =
      tensor ? PyObject_CallMethod(torch_module, "arange", "(d)", 10.0)
             : nullptr;
  PyObject* three = PyLong_FromLong(3);
  PyObject* slice = PySlice_New(three, nullptr, nullptr);
  Py_XDECREF(three);
  PyObject* view = base && slice ? PyObject_GetItem(base, slice) : nullptr;
  Py_XDECREF(slice);
  auto finish = [&](bool ok, std::string detail) {
    c.ok = ok;
    c.detail = std::move(detail);
    Py_XDECREF(tensor);
    Py_XDECREF(base);
    Py_XDECREF(view);
    PyErr_Clear();
  };
  if (view == nullptr) {
    return finish(false, "could not create the calibration tensors");
  }
  auto handle_at = [&](PyObject* t) -> AtenTensorHandle {
    char* obj = reinterpret_cast<char*>(t);
    if (c.borrowed_flag_offset >= 0 && *(obj + c.borrowed_flag_offset)) {
      return *reinterpret_cast<AtenTensorHandle*>(obj + c.tensor_offset);
    }
    return reinterpret_cast<AtenTensorHandle>(obj + c.tensor_offset);
  };
  for (PyObject* t : {tensor, view}) {
    const void* impl = TensorImplOf(t);
    void* word = *reinterpret_cast<void**>(handle_at(t));
    if (impl == nullptr || word != impl) {
      return finish(false,
                    fmt::format("the TensorImpl* ({}) was not found at byte {} "
                                "of the Python object (found {}); this torch's "
                                "THPVariable layout is not the one expected "
                                "for torch {}.{}",
                                impl, c.tensor_offset, word, major, minor));
    }
  }
  const AotiApi& a = lib_.api;
  AtenTensorHandle h = handle_at(tensor);
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  int32_t dtype = -1;
  if (a.get_dim(h, &dim) != 0 || dim != 3 || a.get_sizes(h, &sizes) != 0 ||
      sizes[0] != 2 || sizes[1] != 3 || sizes[2] != 5 ||
      a.get_dtype(h, &dtype) != 0 || dtype != Dtype(kFloat32).torch_code) {
    return finish(false,
                  "the handle at the calibrated offset does not describe the "
                  "calibration tensor (expected float32 [2, 3, 5])");
  }
  void* data = nullptr;
  PyObject* expected = PyObject_CallMethod(view, "data_ptr", nullptr);
  void* expected_ptr = expected ? PyLong_AsVoidPtr(expected) : nullptr;
  Py_XDECREF(expected);
  if (a.get_data_ptr(handle_at(view), &data) != 0 || data != expected_ptr) {
    return finish(
        false,
        "the data pointer read through the calibrated offset does "
        "not match tensor.data_ptr() of a view with a storage offset");
  }
  finish(true,
         c.borrowed_flag_offset >= 0
             ? fmt::format("the torch 2.3 - 2.9 layout: at::Tensor at byte {} "
                           "of the Python object, inside a "
                           "c10::MaybeOwned<at::Tensor> whose borrowed flag "
                           "at byte {} is checked per tensor",
                           c.tensor_offset, c.borrowed_flag_offset)
             : fmt::format("the torch >= 2.10 layout: at::Tensor at byte {} "
                           "of the Python object, right after its header",
                           c.tensor_offset));
}

bool Bridge::Read(PyObject* obj, const char* what, bool writable,
                  TensorRef* ref) {
  ref->object = obj;
  ref->owned_handle = nullptr;
  ref->dlpack_managed = nullptr;
  PyTypeObject* type = Py_TYPE(obj);
  if (type == tensor_type_ || type == parameter_type_) {
    return ReadTorchTensor(obj, what, ref);
  }
  if (PyType_IsSubtype(type, tensor_type_)) {
    return CheckSubclass(type, what) && ReadTorchTensor(obj, what, ref);
  }
  if (PyObject_HasAttrString(obj, "__dlpack__")) {
    return ReadDlpack(obj, what, writable, ref);
  }
  return RaiseError(PyExc_TypeError,
                    fmt::format("{}: expected a torch.Tensor (or an object "
                                "with __dlpack__), got {}",
                                what, Py_TYPE(obj)->tp_name));
}

// Wrapper subclasses (FakeTensor, DTensor, functional tensors) override
// __torch_dispatch__ and may have no storage: reading their data pointer would
// fail inside torch or, worse, hand out an unrelated buffer.
bool Bridge::CheckSubclass(PyTypeObject* type, const char* what) {
  if (uninitialized_type_ != nullptr &&
      PyType_IsSubtype(type, uninitialized_type_)) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}: this {} is an uninitialized parameter or buffer of a "
                    "lazy module and holds no data yet; run the module's "
                    "forward once (or initialize it) before passing it",
                    what, type->tp_name));
  }
  // Looked up on the type without running Python (a metaclass's
  // __getattr__ could), so that reading a tensor never runs Python code.
  static PyObject* name = PyUnicode_InternFromString("__torch_dispatch__");
  if (_PyType_Lookup(type, name) == plain_torch_dispatch_) return true;
  return RaiseError(
      PyExc_TypeError,
      fmt::format("{}: {} overrides __torch_dispatch__ (a wrapper subclass "
                  "such as FakeTensor or DTensor) and has no storage "
                  "torchferry can read; pass a plain torch.Tensor",
                  what, type->tp_name));
}

bool Bridge::ReadTorchTensor(PyObject* obj, const char* what, TensorRef* ref) {
  AtenTensorHandle handle;
  if (path_ == BridgePath::kShim) {
    if (lib_.api.tensor_from_pyobject(obj, &handle) != 0) {
      return RaiseTorchFailure("torch_tensor_from_pyobject", obj, what);
    }
    ref->owned_handle = handle;
    Bump(shim_created_);
  } else {
    char* base = reinterpret_cast<char*>(obj);
    if (calibration_.borrowed_flag_offset >= 0 &&
        *(base + calibration_.borrowed_flag_offset)) {
      handle = *reinterpret_cast<AtenTensorHandle*>(base +
                                                    calibration_.tensor_offset);
    } else {
      handle =
          reinterpret_cast<AtenTensorHandle>(base + calibration_.tensor_offset);
    }
  }
  Bump(counts_[static_cast<int>(path_)]);
  if (!FillFromHandle(handle, obj, what, ref) ||
      !CheckNotNegated(handle, obj, what)) {
    Release(ref);
    return false;
  }
  ref->view.source = handle;
  ref->view.source_kind = TF_SOURCE_ATEN;
  return true;
}

bool Bridge::FillFromHandle(AtenTensorHandle h, PyObject* obj, const char* what,
                            TensorRef* ref) {
  const AotiApi& a = lib_.api;
  int32_t layout, device_type, code;
  if (a.get_layout(h, &layout) != 0) {
    return RaiseTorchFailure("layout", obj, what);
  }
  if (layout != strided_) {
    return RaiseError(
        PyExc_TypeError,
        fmt::format("{}: expected a dense (torch.strided) tensor, got layout "
                    "{}; call .to_dense() first",
                    what, PyAttrText(obj, "layout")));
  }
  if (a.get_device_type(h, &device_type) != 0) {
    return RaiseTorchFailure("device", obj, what);
  }
  tf_tensor& v = ref->view;
  if (device_type == torch_cpu_) {
    v.device = {TF_DEVICE_CPU, 0};
  } else if (device_type == torch_cuda_) {
    int32_t index = 0;
    if (a.get_device_index(h, &index) != 0) {
      return RaiseTorchFailure("device index", obj, what);
    }
    v.device = {TF_DEVICE_CUDA, index};
  } else if (device_type == torch_meta_) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}: meta tensors carry no data; expected a "
                                  "tensor on cpu or cuda",
                                  what));
  } else {
    return RaiseError(PyExc_NotImplementedError,
                      fmt::format("{}: torchferry does not carry tensors on "
                                  "device {}; expected cpu or cuda",
                                  what, PyAttrText(obj, "device")));
  }
  if (a.get_dtype(h, &code) != 0) return RaiseTorchFailure("dtype", obj, what);
  ref->dtype = DtypeFromTorchCode(code);
  if (ref->dtype == kNoDtype) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}: torchferry does not carry dtype {}; "
                                  "expected a float, int, uint8 or bool dtype",
                                  what, PyAttrText(obj, "dtype")));
  }
  v.dtype = Dtype(ref->dtype).dtype;
  int64_t ndim;
  void* data;
  if (a.get_dim(h, &ndim) != 0 || a.get_sizes(h, &v.shape) != 0 ||
      a.get_strides(h, &v.strides) != 0) {
    return RaiseTorchFailure("sizes and strides", obj, what);
  }
  if (a.get_data_ptr(h, &data) != 0) {
    return RaiseTorchFailure("data pointer", obj, what);
  }
  v.data = data;
  v.ndim = static_cast<int32_t>(ndim);
  v.byte_offset = 0;
  v.flags = ContiguityFlag(ndim, v.shape, v.strides);
  ref->numel = Numel(ndim, v.shape);
  if (ref->numel == 0) return true;
  if (data == nullptr) {
    // Functional wrappers and ZeroTensors report elements but own no memory.
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}: this {} has {} elements but no memory "
                                  "(a functional, zero or other storage-less "
                                  "tensor); pass a materialized tensor",
                                  what, Py_TYPE(obj)->tp_name, ref->numel));
  }
  return CheckFitsStorage(h, obj, what, *ref);
}

TensorState Bridge::StateOf(const TensorRef& ref) const {
  const AotiApi& a = lib_.api;
  AtenTensorHandle h = ref.handle();
  TensorState s;
  int64_t *sizes, *strides, offset;
  if (a.get_data_ptr(h, &s.data) != 0 || a.get_dim(h, &s.ndim) != 0 ||
      a.get_sizes(h, &sizes) != 0 || a.get_strides(h, &strides) != 0 ||
      !storage_.Read(h, &offset, &s.nbytes) || s.ndim > TensorState::kMaxDims) {
    s.ndim = -1;  // never equal
    return s;
  }
  std::memcpy(s.dims, sizes, s.ndim * sizeof(int64_t));
  std::memcpy(s.dims + s.ndim, strides, s.ndim * sizeof(int64_t));
  return s;
}

// A view whose storage was shrunk or freed under it
// (t.untyped_storage().resize_(0)) still reports a data pointer: the
// storage's base, NULL, plus its offset. Only the storage's size tells, and
// every element the view reaches must lie inside it.
bool Bridge::CheckFitsStorage(AtenTensorHandle h, PyObject* obj,
                              const char* what, const TensorRef& ref) {
  int64_t offset, nbytes;
  if (!storage_.Read(h, &offset, &nbytes)) {
    return RaiseTorchFailure("storage", obj, what);
  }
  const tf_tensor& v = ref.view;
  // The element past the furthest one the view reaches (torch has no
  // negative strides); for a compact view that is offset + numel.
  int64_t end = offset + ref.numel, needed = 0;
  bool overflow = false;
  if (!(v.flags & TF_TENSOR_CONTIGUOUS)) {
    end = offset + 1;
    for (int32_t d = 0; d < v.ndim; ++d) {
      int64_t reach;
      overflow |=
          __builtin_mul_overflow(v.shape[d] - 1, v.strides[d], &reach) ||
          __builtin_add_overflow(end, reach, &end);
    }
  }
  overflow |= __builtin_mul_overflow(end, Dtype(ref.dtype).itemsize, &needed);
  if (!overflow && needed <= nbytes) return true;
  return RaiseError(
      PyExc_ValueError,
      fmt::format("{}: this tensor's view (shape [{}], storage offset {}) "
                  "reaches byte {} of its storage, which holds {} bytes; was "
                  "its storage resized or freed (untyped_storage().resize_)?",
                  what, fmt::join(v.shape, v.shape + v.ndim, ", "), offset,
                  needed, nbytes));
}

// torch can negate a tensor lazily (x.conj().imag): the memory then holds
// -value and a bit on the TensorImpl says so. Kernels read memory, so such a
// tensor would compute with the wrong sign; refuse it instead.
bool Bridge::CheckNotNegated(AtenTensorHandle handle, PyObject* obj,
                             const char* what) {
  bool negated;
  if (neg_probe_.ok) {
    // An at::Tensor is one pointer: its TensorImpl*.
    const char* impl = *reinterpret_cast<const char* const*>(handle);
    uint64_t keys;
    std::memcpy(&keys, impl + neg_probe_.keyset_offset, sizeof(keys));
    negated = (keys & neg_probe_.negative_mask) != 0;
  } else {
    PyObject* result = is_neg_(obj, nullptr);
    if (result == nullptr) return false;
    negated = result == Py_True;
    Py_DECREF(result);
  }
  if (!negated) return true;
  return RaiseError(PyExc_TypeError,
                    fmt::format("{}: this tensor has torch's negative bit set "
                                "(a lazily negated view such as "
                                "x.conj().imag), so its memory holds -value; "
                                "pass x.resolve_neg()",
                                what));
}

void Bridge::ProbeNegBit(PyObject* torch_module) {
  NegBitProbe& p = neg_probe_;
  // A plain tensor, its negated view, and an inference tensor: three
  // different key sets that must all sit at the same offset.
  PyObject* plain = PyObject_CallMethod(torch_module, "empty", "(i)", 4);
  PyObject* negated =
      plain ? PyObject_CallMethod(torch_module, "_neg_view", "(O)", plain)
            : nullptr;
  PyObject* c = PyObject_GetAttrString(torch_module, "_C");
  PyObject* keys_of = c ? PyObject_GetAttrString(c, "_dispatch_keys") : nullptr;
  Py_XDECREF(c);
  auto raw_keys = [&](PyObject* t, uint64_t* raw) {
    PyObject* keys = PyObject_CallFunctionObjArgs(keys_of, t, nullptr);
    PyObject* value =
        keys ? PyObject_CallMethod(keys, "raw_repr", nullptr) : nullptr;
    *raw = value ? PyLong_AsUnsignedLongLong(value) : 0;
    Py_XDECREF(value);
    Py_XDECREF(keys);
    return value != nullptr && !PyErr_Occurred();
  };
  uint64_t raw_plain = 0, raw_negated = 0;
  const char* impl_plain = negated ? TensorImplOf(plain) : nullptr;
  const char* impl_negated = negated ? TensorImplOf(negated) : nullptr;
  if (keys_of == nullptr || impl_plain == nullptr || impl_negated == nullptr ||
      !raw_keys(plain, &raw_plain) || !raw_keys(negated, &raw_negated)) {
    p.detail = "torch._C._dispatch_keys(t).raw_repr() is unavailable";
  } else {
    p.negative_mask = raw_negated & ~raw_plain;
    // Scan the TensorImpl word by word, stopping at the first match: the key
    // set lies well inside the object in every torch 2.x (byte 168 - 176),
    // and the scan never goes past kMaxScan.
    constexpr Py_ssize_t kMaxScan = 256;
    for (Py_ssize_t off = sizeof(void*); off < kMaxScan; off += 8) {
      uint64_t word;
      std::memcpy(&word, impl_plain + off, sizeof(word));
      if (word != raw_plain) continue;
      uint64_t negated_word;
      std::memcpy(&negated_word, impl_negated + off, sizeof(negated_word));
      p.ok = negated_word == raw_negated &&
             __builtin_popcountll(p.negative_mask) == 1;
      p.keyset_offset = off;
      break;
    }
    p.detail = p.ok ? fmt::format(
                          "DispatchKeySet at byte {} of TensorImpl, "
                          "negative bit {:#x}",
                          p.keyset_offset, p.negative_mask)
                    : "the DispatchKeySet was not found in the TensorImpl";
  }
  if (!p.ok) p.detail += "; checking Tensor.is_neg per tensor instead";
  Py_XDECREF(keys_of);
  Py_XDECREF(negated);
  Py_XDECREF(plain);
  PyErr_Clear();
}

bool Bridge::RaiseTorchFailure(const char* getter, PyObject* obj,
                               const char* what) {
  // Nested tensors have no single shape; say so on every torch, including
  // those whose shim cannot report torch's own message (< 2.13).
  PyObject* nested = PyObject_GetAttrString(obj, "is_nested");
  const bool is_nested = nested == Py_True;
  Py_XDECREF(nested);
  PyErr_Clear();
  if (is_nested) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}: nested tensors (NestedTensorImpl) have "
                                  "no single shape or strides; pass a dense "
                                  "tensor, e.g. t.to_padded_tensor(0)",
                                  what));
  }
  const char* what_failed =
      lib_.api.exception_get_what ? lib_.api.exception_get_what() : nullptr;
  std::string why = what_failed ? what_failed : "no message (torch < 2.13)";
  // Keep torch's message, not where inside torch it was raised.
  why = why.substr(0, why.find("\nException raised from"));
  return RaiseError(PyExc_TypeError,
                    fmt::format("{}: torch could not read the {} of this {}: "
                                "{}",
                                what, getter, Py_TYPE(obj)->tp_name, why));
}

void Bridge::ReleaseShimHandle(TensorRef* ref) {
  lib_.api.delete_tensor_object(ref->owned_handle);
  ref->owned_handle = nullptr;
  Bump(shim_deleted_);
}

namespace {

// Calls obj.__dlpack__ once, asking for a versioned capsule (only DLPack
// >= 1.0 can say "read-only", which an output must not be). A producer from
// before DLPack 1.0 refuses the keyword with a TypeError that names it; only
// then is it asked again without. Any other error is the producer's own and
// is not retried: nested producers would otherwise call each other
// exponentially often.
PyObject* CallDlpack(PyObject* obj) {
  PyObject* method = PyObject_GetAttrString(obj, "__dlpack__");
  if (method == nullptr) return nullptr;
  PyObject* kwargs = Py_BuildValue("{s:(ii)}", "max_version", 1, 0);
  PyObject* empty = kwargs ? PyTuple_New(0) : nullptr;
  PyObject* capsule = empty ? PyObject_Call(method, empty, kwargs) : nullptr;
  Py_XDECREF(empty);
  Py_XDECREF(kwargs);
  if (capsule == nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyObject* text = value ? PyObject_Str(value) : nullptr;
    const bool about_keyword =
        text != nullptr &&
        Utf8Text(text).find("max_version") != std::string::npos;
    Py_XDECREF(text);
    if (about_keyword) {
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(trace);
      PyErr_Clear();
      capsule = PyObject_CallNoArgs(method);
    } else {
      PyErr_Restore(type, value, trace);
    }
  }
  Py_DECREF(method);
  return capsule;
}

}  // namespace

bool Bridge::ReadDlpack(PyObject* obj, const char* what, bool writable,
                        TensorRef* ref) {
  PyObject* capsule = CallDlpack(obj);
  if (capsule == nullptr) {
    // An interrupt or an exhausted process is not about the argument.
    if (PendingErrorIsFatal()) return false;
    std::string why = FetchErrorText();
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}: this {} could not be exported through "
                                  "__dlpack__: {}",
                                  what, Py_TYPE(obj)->tp_name, why));
  }
  const dlpack::Tensor* dl = nullptr;
  ref->read_only = false;
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* managed = static_cast<dlpack::ManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    // Still unclaimed on every refusal here: the capsule frees it.
    if (managed->version.major != kDlpackMajor) {
      const uint32_t major = managed->version.major;
      const uint32_t minor = managed->version.minor;
      Py_DECREF(capsule);
      return RaiseError(
          PyExc_BufferError,
          fmt::format("{}: this {} exported a DLPack {}.{} tensor; "
                      "torchferry reads DLPack {}.x (the major versions must "
                      "match)",
                      what, Py_TYPE(obj)->tp_name, major, minor, kDlpackMajor));
    }
    ref->read_only = (managed->flags & dlpack::kFlagReadOnly) != 0;
    if (writable && ref->read_only) {
      Py_DECREF(capsule);
      return RaiseError(PyExc_ValueError,
                        fmt::format("{}: this {} is read-only; expected a "
                                    "writable array",
                                    what, Py_TYPE(obj)->tp_name));
    }
    PyCapsule_SetName(capsule, "used_dltensor_versioned");
    ref->dlpack_managed = managed;
    ref->dlpack_versioned = true;
    dl = &managed->dl_tensor;
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* managed = static_cast<dlpack::ManagedTensor*>(
        PyCapsule_GetPointer(capsule, "dltensor"));
    PyCapsule_SetName(capsule, "used_dltensor");
    ref->dlpack_managed = managed;
    ref->dlpack_versioned = false;
    dl = &managed->dl_tensor;
  }
  Py_DECREF(capsule);
  if (dl == nullptr) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}: {}.__dlpack__() returned something "
                                  "other than a DLPack capsule",
                                  what, Py_TYPE(obj)->tp_name));
  }
  Bump(counts_[static_cast<int>(BridgePath::kDlpack)]);
  PyObject* error_type = nullptr;
  std::string problem =
      CheckDlpackTensor(*dl, &ref->dtype, &ref->numel, &error_type);
  if (!problem.empty()) {
    // The message is built from `dl` before Release frees it.
    std::string message =
        fmt::format("{}: {} ({})", what, problem, Py_TYPE(obj)->tp_name);
    Release(ref);
    return RaiseError(error_type, message);
  }
  static int64_t kUnitStride = 1;
  tf_tensor& v = ref->view;
  v.device = {dl->device.device_type, dl->device.device_id};
  v.dtype = Dtype(ref->dtype).dtype;
  v.data = ref->numel == 0 && dl->data == nullptr
               ? nullptr
               : static_cast<char*>(dl->data) + dl->byte_offset;
  v.byte_offset = 0;
  v.ndim = dl->ndim;
  v.shape = dl->shape;
  v.strides = dl->strides ? dl->strides : &kUnitStride;
  v.flags = ContiguityFlag(v.ndim, v.shape, v.strides);
  v.source = nullptr;
  v.source_kind = TF_SOURCE_NONE;
  return true;
}

void Bridge::ReleaseDlpack(TensorRef* ref) {
  // A producer's deleter may run Python (ctypes, Cython), which must not see
  // an exception this call is about to raise.
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  if (ref->dlpack_versioned) {
    auto* m = static_cast<dlpack::ManagedTensorVersioned*>(ref->dlpack_managed);
    if (m->deleter) m->deleter(m);
  } else {
    auto* m = static_cast<dlpack::ManagedTensor*>(ref->dlpack_managed);
    if (m->deleter) m->deleter(m);
  }
  ref->dlpack_managed = nullptr;
  PyErr_Restore(type, value, trace);
}

}  // namespace torchferry
