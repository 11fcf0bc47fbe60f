// The torch bridge: turns a Python object into a tf_tensor view.
//
// Paths, chosen once per process by what the running torch exports and then
// fixed (unless forced for A/B runs with TORCHFERRY_BRIDGE or set_path):
//   shim   - torch_tensor_from_pyobject (torch >= 2.14): a new at::Tensor
//            handle per tensor, released when the call ends.
//   offset - the at::Tensor inside the THPVariable, read at an offset that
//            depends on the torch version and is confirmed by calibration
//            against a known tensor at start-up. Borrowed: no allocation.
//   exchange - torch's DLPack C exchange API, non-owning (torch >= 2.10),
//            where neither of those is there, or when forced: no at::Tensor.
//   dlpack - any non-torch object with __dlpack__ (numpy, ...): slower,
//            counted on its own.
// A plain CPU tensor's metadata comes from calibrated TensorImpl words
// (MetaProbe); every other tensor's through the AOTI getters, whichever path
// produced the handle.
#pragma once

#include <Python.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "abi/torchferry.h"
#include "core/bridge/aoti.h"
#include "core/bridge/bump.h"
#include "core/bridge/dlpack_abi.h"
#include "core/bridge/dtypes.h"
#include "core/bridge/libtorch_symbols.h"
#include "core/bridge/meta_probe.h"
#include "core/bridge/storage_probe.h"
#include "core/bridge/version_counter.h"

namespace torchferry {

// kExchange: torch's DLPack C exchange API, non-owning (torch >= 2.10),
// where neither the shim nor a calibrated offset is there, or when forced.
enum class BridgePath : int {
  kShim = 0,
  kOffset = 1,
  kDlpack = 2,
  kExchange = 3
};
constexpr int kNumBridgePaths = 4;
const char* BridgePathName(BridgePath path);

// One Python object bridged for the duration of a call. Holds what must be
// released when the call ends: a shim handle or a DLPack managed tensor.
struct TensorRef {
  tf_tensor view;
  DtypeIndex dtype;
  int64_t numel;
  PyObject* object;  // borrowed from the caller's arguments
  AtenTensorHandle owned_handle = nullptr;  // shim path
  void* dlpack_managed = nullptr;           // dlpack path
  // The row-major strides of a DLPack tensor that came without any (DLPack
  // before 1.0 allows it for a compact tensor; numpy 1.x exports so), freed
  // with dlpack_managed.
  int64_t* dlpack_strides = nullptr;
  bool dlpack_versioned = false;
  bool read_only = false;  // a DLPack export flagged read-only
  // A torch tensor read through the exchange API: no at::Tensor handle
  // (view.source_kind NONE), so the checks read its TensorImpl through
  // probe_handle(), or, where that or a probe is missing, call torch's
  // Python-level functions as C functions.
  bool exchanged = false;
  // An exchanged tensor's TensorImpl*, from TensorBase._cdata's getter;
  // nullptr where it could not be had.
  const char* exchanged_impl = nullptr;

  // A torch tensor, with or without a handle: what the version counter, the
  // grad check and noting for Python mid-call apply to.
  bool is_torch() const {
    return view.source_kind == TF_SOURCE_ATEN || exchanged;
  }

  // The at::Tensor* behind a torch tensor (view.source_kind TF_SOURCE_ATEN).
  AtenTensorHandle handle() const {
    return static_cast<AtenTensorHandle>(const_cast<void*>(view.source));
  }
  // What the calibrated probes (version counter, inference, autograd
  // metadata) read a TensorImpl through, which is all they read of a
  // handle: an at::Tensor is one pointer, its TensorImpl*, so on the exchange
  // path a pointer to exchanged_impl stands in. nullptr: none (the probes'
  // callers then take torch's Python-level functions).
  AtenTensorHandle probe_handle() const {
    if (view.source_kind == TF_SOURCE_ATEN) return handle();
    if (exchanged_impl == nullptr) return nullptr;
    return reinterpret_cast<AtenTensorHandle>(
        const_cast<const char**>(&exchanged_impl));
  }
};

// What a torch tensor's handle says about its memory, taken before Python
// code runs in the middle of a call and compared after it: equal means the
// Python left the tensor as it was read.
struct TensorState {
  void* data = nullptr;
  int64_t ndim = -1;
  int64_t nbytes = -1;  // of the storage
  // Sizes, then strides, for every rank a call accepts (CallFrame refuses
  // more): a deeper tensor is never equal.
  int64_t dims[2 * TF_MAX_NDIM];

  bool operator==(const TensorState& o) const {
    if (data != o.data || ndim != o.ndim || nbytes != o.nbytes ||
        ndim > TF_MAX_NDIM || ndim < 0) {
      return false;
    }
    for (int64_t d = 0; d < 2 * ndim; ++d) {
      if (dims[d] != o.dims[d]) return false;
    }
    return true;
  }
};

struct OffsetCalibration {
  bool ok = false;
  Py_ssize_t tensor_offset = 0;  // bytes from the PyObject to the at::Tensor
  // torch 2.3 - 2.9 hold c10::MaybeOwned<at::Tensor>: a bool (borrowed?)
  // before the tensor. -1 where the object holds the at::Tensor directly.
  Py_ssize_t borrowed_flag_offset = -1;
  std::string detail;  // what calibration found, for `info`
};

// Where the TensorImpl keeps its DispatchKeySet, and which bit of it is
// DispatchKey::Negative: found at start-up by comparing the words of known
// tensors with torch._C._dispatch_keys(t).raw_repr(). Without it the bridge
// asks Tensor.is_neg, which is correct but a Python call per tensor.
struct NegBitProbe {
  bool ok = false;
  Py_ssize_t keyset_offset = 0;  // bytes into the TensorImpl
  uint64_t negative_mask = 0;
  std::string detail;
};

class Bridge {
 public:
  static Bridge& Get();

  // Resolves libtorch, verifies dtype codes, calibrates the offset path and
  // picks the path (env TORCHFERRY_BRIDGE=auto|shim|offset). Returns false
  // with a Python exception set.
  bool Init(PyObject* torch_module, const char* torch_version);
  bool initialized() const { return initialized_; }

  // Reads `obj` into `ref`. `what` names the argument in messages ("input",
  // "out", ...); `writable` refuses what may not be written: a read-only
  // DLPack export, an inference tensor outside inference mode. Returns false
  // with a Python exception set; `ref` then holds nothing to release.
  bool Read(PyObject* obj, const char* what, bool writable, TensorRef* ref);
  // True for torch.Tensor and its subclasses: what Read takes without
  // running any Python code. Anything else goes through __dlpack__.
  bool IsTorchTensor(PyObject* obj) const {
    PyTypeObject* type = Py_TYPE(obj);
    return type == tensor_type_ || type == parameter_type_ ||
           PyType_IsSubtype(type, tensor_type_);
  }
  // torch's __torch_function__ handling held off for a scope where reading
  // `obj` through torch's Python-level getters and methods could run one (a
  // subclass's, or an active TorchFunctionMode's): torch._C.
  // DisableTorchFunction's __enter__ and __exit__, bound C methods that save
  // and restore torch's state. A pending exception is kept across __exit__.
  // quiet() is false where torch offers no way to hold it off: Python may
  // then run in such a read. The one DisableTorchFunction object keeps one
  // saved state, so only the outermost HeldOff of a thread enters and leaves
  // it: a nested one (a refusal's words read inside a fallback's read) would
  // otherwise save "off" and leave torch's __torch_function__ off for good.
  class HeldOff {
   public:
    HeldOff(const Bridge& bridge, PyObject* obj);
    ~HeldOff();
    HeldOff(const HeldOff&) = delete;
    HeldOff& operator=(const HeldOff&) = delete;
    bool quiet() const { return quiet_; }

   private:
    static thread_local int depth_;  // HeldOffs open on this thread
    PyObject* exit_ = nullptr;
    bool quiet_ = false;
    bool nested_ = false;
  };
  // Whether reading `obj` through torch's Tensor methods could run a
  // __torch_function__: a subclass's, or an active mode's.
  bool TorchFunctionCouldRun(PyObject* obj) const;
  // getattr(obj, attr) as torch.Tensor's own C getter answers it, with
  // __torch_function__ held off (a torch tensor; any other object is asked
  // as usual): a subclass's override or a mode is never consulted. nullptr
  // with an exception where torch has no such getter or cannot hold off.
  PyObject* TorchAttr(PyObject* obj, const char* attr) const;
  // str() of that, or "<unknown>"; never leaves an exception set. For the
  // words of a refusal.
  std::string AttrText(PyObject* obj, const char* attr) const;

  // The state of a torch tensor already read (ref.view.source_kind ATEN).
  // Reads its handle again; converts nothing, counts nothing.
  TensorState StateOf(const TensorRef& ref) const;

  // Tests only: false makes the exchange path do without a tensor's
  // TensorImpl, as where TensorBase._cdata's getter is missing, so that its
  // fallbacks (torch's Tensor.is_neg and untyped_storage(), Python's version
  // bump) run on a torch that has the getter.
  void set_exchange_reads_impl(bool on) { exchange_reads_impl_ = on; }

  // Inline: the shim path releases a handle for every tensor it reads.
  void Release(TensorRef* ref) {
    if (ref->owned_handle != nullptr) {
      lib_.api.delete_tensor_object(ref->owned_handle);
      ref->owned_handle = nullptr;
      bridge_internal::Bump(shim_deleted_);
    }
    if (ref->dlpack_managed != nullptr) ReleaseDlpack(ref);
  }

  BridgePath path() const { return path_; }
  bool shim_available() const {
    return lib_.api.tensor_from_pyobject != nullptr;
  }
  // torch's DLPack C exchange API with the non-owning form, major 1.
  bool exchange_available() const { return exchange_ != nullptr; }
  const std::string& exchange_detail() const { return exchange_detail_; }
  const OffsetCalibration& offset_calibration() const { return calibration_; }
  const NegBitProbe& neg_bit_probe() const { return neg_probe_; }
  const VersionCounter& versions() const { return versions_; }
  const StorageProbe& storage_probe() const { return storage_; }
  const MetaProbe& meta_probe() const { return meta_; }
  const std::string& path_reason() const { return path_reason_; }
  const TorchLibrary& library() const { return lib_; }
  const std::string& torch_version() const { return torch_version_; }
  // Forces a path; false with a Python exception where it is unavailable.
  bool SetPath(const char* name);

  uint64_t count(BridgePath path) const {
    return counts_[static_cast<int>(path)].load(std::memory_order_relaxed);
  }
  // Every shim read creates one handle: the shim path's count.
  uint64_t shim_created() const { return count(BridgePath::kShim); }
  uint64_t shim_deleted() const { return shim_deleted_.load(); }
  void ResetCounts();

  int32_t torch_cpu_device() const { return torch_cpu_; }
  int32_t torch_cuda_device() const { return torch_cuda_; }

 private:
  bool ReadTorchTensor(PyObject* obj, const char* what, TensorRef* ref);
  // A torch tensor read for writing: refused (and released) where torch
  // would refuse the write (an inference tensor outside inference mode).
  bool CheckWritable(PyObject* obj, const char* what, TensorRef* ref);
  // core/bridge/bridge_exchange.cc
  void FindExchangeApi();
  bool ReadExchanged(PyObject* obj, const char* what, TensorRef* ref);
  bool RaiseExchangeFailure(PyObject* obj, const char* what);
  bool ExchangedStorage(PyObject* obj, int64_t* base, int64_t* nbytes) const;
  bool CheckFitsStorageSpan(PyObject* obj, const char* what,
                            const TensorRef& ref, int64_t offset,
                            int64_t nbytes);
  TensorState ExchangedStateOf(const TensorRef& ref) const;
  bool ReadDlpack(PyObject* obj, const char* what, bool writable,
                  TensorRef* ref);
  // *plain: read by the MetaProbe, so its keys hold no negative bit.
  bool FillFromHandle(AtenTensorHandle handle, PyObject* obj, const char* what,
                      TensorRef* ref, bool* plain);
  bool FillFromGetters(AtenTensorHandle handle, PyObject* obj, const char* what,
                       int32_t* dtype_code, int64_t* ndim, TensorRef* ref);
  bool CheckSubclass(PyTypeObject* type, const char* what);
  bool CheckFitsStorage(AtenTensorHandle handle, PyObject* obj,
                        const char* what, const TensorRef& ref);
  // `impl`: the tensor's TensorImpl, nullptr where none is at hand (then
  // Tensor.is_neg answers).
  bool CheckNotNegated(const char* impl, PyObject* obj, const char* what);
  // The TensorImpl* of a torch.Tensor from TensorBase._cdata's C getter;
  // nullptr where that getter is missing or fails. Python runs in it where
  // TorchFunctionCouldRun says so, unless torch function is held off.
  const char* ImplFromCdata(PyObject* obj) const;
  // core/bridge/torch_reads.cc
  void FindTorchFunctionHoldOff();
  void ProbeNegBit(PyObject* torch_module);
  void ReleaseDlpack(TensorRef* ref);
  void Calibrate(PyObject* torch_module, int major, int minor);
  // The first path of kAutoOrder (bridge_startup.cc) this torch offers, and
  // why it was taken; false when it offers none.
  bool FirstAutoPath(BridgePath* path, std::string* reason) const;
  void FindMetaDevice(PyObject* torch_module);
  // The at::Tensor* inside a torch.Tensor at the calibrated offset: torch
  // 2.3 - 2.9 hold a c10::MaybeOwned<at::Tensor>, whose flag says whether it
  // holds the tensor or points at one.
  AtenTensorHandle HandleAt(PyObject* obj) const {
    char* base = reinterpret_cast<char*>(obj);
    if (calibration_.borrowed_flag_offset >= 0 &&
        *(base + calibration_.borrowed_flag_offset)) {
      return *reinterpret_cast<AtenTensorHandle*>(base +
                                                  calibration_.tensor_offset);
    }
    return reinterpret_cast<AtenTensorHandle>(base +
                                              calibration_.tensor_offset);
  }
  bool RaiseTorchFailure(const char* getter, PyObject* obj, const char* what);
  bool IsStrided(PyObject* obj);
  // Raises, and returns true, for a tensor no path reads as one dense view:
  // nested, or (with check_layout) not torch.strided.
  bool RaiseIfNotDense(PyObject* obj, const char* what, bool check_layout);
  bool RaiseNotStrided(PyObject* obj, const char* what);

  bool initialized_ = false;
  TorchLibrary lib_;
  BridgePath path_ = BridgePath::kOffset;
  std::string path_reason_;
  std::string torch_version_;
  OffsetCalibration calibration_;
  NegBitProbe neg_probe_;
  VersionCounter versions_;
  StorageProbe storage_;
  MetaProbe meta_;
  PyObject* torch_module_ = nullptr;        // torch, kept for life
  PyTypeObject* tensor_type_ = nullptr;     // torch.Tensor
  PyTypeObject* parameter_type_ = nullptr;  // torch.nn.Parameter
  PyObject* plain_torch_dispatch_ = nullptr;
  // torch.nn.parameter.UninitializedTensorMixin: lazy modules' parameters
  // and buffers before their first forward, which hold no data yet.
  PyTypeObject* uninitialized_type_ = nullptr;
  PyCFunction is_neg_ = nullptr;  // TensorBase.is_neg, called directly
  getter cdata_ = nullptr;        // TensorBase._cdata's getter, called directly
  // torch._C._is_torch_function_mode_enabled, called directly, and its module.
  PyCFunction mode_enabled_ = nullptr;
  PyObject* mode_enabled_self_ = nullptr;
  // The __enter__ and __exit__ of one torch._C.DisableTorchFunction, bound
  // at start-up so that a read looks up no method by name.
  PyObject* disable_enter_ = nullptr;
  PyObject* disable_exit_ = nullptr;
  const dlpack::ExchangeApi* exchange_ = nullptr;
  bool exchange_reads_impl_ = true;
  std::string exchange_detail_;
  // TensorBase.untyped_storage and StorageBase.data_ptr / nbytes, called
  // directly: the exchange path's storage check, which has no handle.
  PyCFunction untyped_storage_ = nullptr, storage_data_ptr_ = nullptr,
              storage_nbytes_ = nullptr;
  int32_t torch_cpu_ = 0, torch_cuda_ = 1, torch_meta_ = -1, strided_ = 0;
  bool has_layout_ = false;  // aoti_torch_get_layout and layout_strided
  std::atomic<uint64_t> counts_[kNumBridgePaths] = {};
  std::atomic<uint64_t> shim_deleted_{0};
};

}  // namespace torchferry
