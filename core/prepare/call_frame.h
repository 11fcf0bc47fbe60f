// Everything one op call holds, on the stack: the bridged tensors, the
// tf_call arguments that point at them, and a small arena for the shapes and
// strides the host rewrites (broadcast, batch-prepended matmul operands).
// Its destructor releases every bridged tensor, on every exit path.
//
// No Python code may run between reading a tensor and calling its kernel:
// Python (an output's allocation, another argument's __dlpack__, a gc
// callback either triggers) can resize or free what was read. Before such
// Python runs, the frame notes the state of every torch tensor read so far;
// after preparation, PrepareCall (core/prepare/prepare.h) reads those states
// again, and where one differs it prepares the call once more from the top,
// with the outputs it allocated and the DLPack imports it made kept, so that
// the second pass runs no Python at all.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <vector>

#include "abi/torchferry.h"
#include "core/bridge/bridge.h"
#include "core/bridge/py_errors.h"
#include "loader/loader.h"

namespace torchferry {

constexpr int kMaxAttrs = 16;  // a schema's arguments at most
// The deepest tensor any kernel sees, stated once for the host and every
// plugin (abi/ABI.md): Take() refuses a deeper one before any rule reads it,
// so that no kernel has a lower limit of its own to hit.
constexpr int kMaxRank = TF_MAX_NDIM;
constexpr int kInlineTensors = 12;

// Where a frame's tensors come from when not from Python: the call-argument
// fuzzer hands the preparation rules (PrepareFor) placeholder
// objects and answers for them with views it built itself, so that it runs the
// very checks a call from Python runs.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // Fills `ref` for the placeholder `obj`; false with a Python exception.
  virtual bool Take(PyObject* obj, const char* what, bool writable,
                    TensorRef* ref) = 0;
  // The out= a call that passed none gets, for an out of `dtype`, `ndim` and
  // `shape` on `like`'s device: a new reference to a placeholder, or nullptr
  // with a Python exception.
  virtual PyObject* Allocate(const TensorRef& like, DtypeIndex dtype, int ndim,
                             const int64_t* shape) = 0;
};

class CallFrame {
 public:
  // `op` prefixes the messages of arguments that fail to bridge.
  CallFrame(Bridge& bridge, const char* op) : bridge_(bridge), op_(op) {}
  ~CallFrame() {
    for (int i = 0; i < num_refs_; ++i) bridge_.Release(&refs_[i]);
    for (TensorRef& r : imported_) bridge_.Release(&r);
    Py_XDECREF(owned_result_);
    Py_XDECREF(keep_alive_);
  }
  CallFrame(const CallFrame&) = delete;
  CallFrame& operator=(const CallFrame&) = delete;

  // Makes room for `count` tensors: every tensor a rule Takes (inputs and
  // outputs alike) and every tensor input it passes. Tensor lists and
  // declared ops may exceed the inline capacity. Call before the first
  // Take() of a pass.
  void Reserve(int count) {
    if (count <= capacity_) return;
    heap_refs_.reset(new TensorRef[count]);
    heap_items_.reset(new tf_tensor[count]);
    heap_inputs_.reset(new tf_arg[count]);
    refs_ = heap_refs_.get();
    items_ = heap_items_.get();
    inputs_ = heap_inputs_.get();
    capacity_ = count;
  }
  // How many tensors the frame holds (kInlineTensors, or as Reserve()d).
  int capacity() const { return capacity_; }

  // Bridges `obj`; the frame releases it. nullptr with a Python exception.
  // A non-torch object is imported through __dlpack__ once per call: the
  // frame keeps the import, and a second Take of it (or the second pass)
  // reuses it without running Python.
  TensorRef* Take(PyObject* obj, const char* what, bool writable) {
    if (__builtin_expect(num_refs_ == capacity_, 0)) {
      // A rule that Reserve()d too little: refused, never written past.
      return RaiseOverCapacity(what);
    }
    TensorRef* ref = &refs_[num_refs_];
    if (source_ != nullptr) {
      *ref = TensorRef{};
      if (!source_->Take(obj, what, writable, ref)) return nullptr;
    } else if (bridge_.IsTorchTensor(obj)) {
      // Read sets every other field of a torch tensor's ref.
      ref->dlpack_versioned = ref->read_only = false;
      if (!bridge_.Read(obj, what, writable, ref)) {
        PrefixPendingError(op_);
        return nullptr;
      }
    } else if (!TakeImported(obj, what, writable, ref)) {
      return nullptr;
    }
    ++num_refs_;  // the frame releases it, refused or not
    if (__builtin_expect(ref->view.ndim > kMaxRank, 0)) {
      return RaiseTooDeep(what, ref->view.ndim);
    }
    if (writable) {
      // Where a size-n dimension has stride 0 (an expanded tensor), n
      // results would land in one element.
      for (int d = 0; ref->numel > 0 && d < ref->view.ndim; ++d) {
        if (ref->view.shape[d] > 1 && ref->view.strides[d] == 0) {
          return RaiseExpanded(what, d, ref->view.shape[d]);
        }
      }
    }
    return ref;
  }

  // Call before running Python code (or code that may run it) while
  // preparing: it notes the state of every torch tensor read so far, which
  // Unchanged() compares with their state once preparation is over.
  void NotePython() {
    for (; noted_ < num_refs_; ++noted_) {
      if (!refs_[noted_].is_torch()) continue;
      Noted noted{noted_, bridge_.StateOf(refs_[noted_])};
      if (num_noted_ < kInlineNoted) {
        inline_noted_.at[num_noted_] = noted;
      } else {
        more_noted_.push_back(noted);
      }
      ++num_noted_;
    }
    python_ran_ = python_ran_ || num_noted_ > 0;
  }
  // True when Python ran after a torch tensor was read.
  bool python_ran() const { return python_ran_; }
  // True when every tensor noted by NotePython is as it was read: then the
  // Python changed nothing this call relies on.
  bool Unchanged() const {
    for (int i = 0; i < num_noted_; ++i) {
      const Noted& n = i < kInlineNoted ? inline_noted_.at[i]
                                        : more_noted_[i - kInlineNoted];
      if (!(bridge_.StateOf(refs_[n.ref]) == n.state)) return false;
    }
    return true;
  }

  // Back to an empty frame for the second pass; keeps owned_result(),
  // keep_alive() and the DLPack imports.
  void Rewind() {
    for (int i = 0; i < num_refs_; ++i) bridge_.Release(&refs_[i]);
    num_refs_ = 0;
    arena_used_ = 0;
    num_inputs_ = num_attrs_ = num_outputs_ = 0;
    dispatch_ref_ = nullptr;
    kernel_op_ = -1;
    kernel_ = nullptr;
    for (TensorRef*& w : written_) w = nullptr;
    result_ = nullptr;
    num_returned_ = 0;
    work_ = 0;
    repeat_.ndim = 0;
    python_ran_ = false;
    noted_ = num_noted_ = 0;
    more_noted_.clear();
  }

  // Shape/stride storage for a rewritten view; lives as long as the frame.
  int64_t* Arena(int count) {
    if (arena_used_ + count > kArenaSize) return nullptr;
    int64_t* p = arena_ + arena_used_;
    arena_used_ += count;
    return p;
  }

  // The tf_call a kernel (or a declared op's infer, with_outputs false) gets
  // from this frame; `sink` receives its error.
  tf_call MakeCall(const void* kernel_data, void* stream, ErrorSink* sink,
                   bool with_outputs = true) const {
    tf_call call{};
    call.struct_size = sizeof(tf_call);
    call.inputs = inputs_;
    call.num_inputs = num_inputs_;
    call.num_attrs = num_attrs_;
    call.attrs = attrs_;
    call.outputs = with_outputs ? outputs_ : nullptr;
    call.num_outputs = with_outputs ? num_outputs_ : 0;
    call.stream = stream;
    call.kernel_data = const_cast<void*>(kernel_data);
    call.host = HostApi();
    call.error_sink = sink;
    return call;
  }

  // Tensors from `source` instead of Python (nullptr: from Python).
  void set_source(TensorSource* source) { source_ = source; }
  TensorSource* source() const { return source_; }

  // Room for one Python number standing for a tensor
  // (core/prepare/number_tensor.h): its view and its 8 bytes live as long as
  // the frame.
  TensorRef* number_ref() { return &number_ref_; }
  void* number_bits() { return number_bits_; }

  tf_tensor* list_items() { return items_; }
  int num_refs() const { return num_refs_; }
  TensorRef& ref(int i) { return refs_[i]; }

  // What the kernel gets, set in one step by the op's rule: its inputs (the
  // op's tensor, None and number arguments in its order), the tensor whose
  // device and dtype key the kernel lookup, and the elements the call touches
  // (which decide on the GIL). One step, so that no rule can set one of the
  // three and forget another, or leave one from a rewound first pass.
  void SetInputs(std::initializer_list<tf_arg> inputs, TensorRef* key,
                 int64_t work) {
    int n = 0;
    for (const tf_arg& a : inputs) inputs_[n++] = a;  // at most a few
    SetInputs(n, key, work);
  }
  // The same for the first `count` inputs, which the rule wrote through
  // input(i) because their number is the call's (a tensor list's items, a
  // declared op's arguments, noop's): up to capacity().
  void SetInputs(int count, TensorRef* key, int64_t work) {
    num_inputs_ = count;
    dispatch_ref_ = key;
    work_ = work;
  }
  tf_arg& input(int i) { return inputs_[i]; }
  const tf_arg& input(int i) const { return inputs_[i]; }
  int num_inputs() const { return num_inputs_; }
  // Attributes: the op's other arguments in its order (kMaxAttrs at most:
  // a schema has no more arguments).
  tf_arg& attr(int i) { return attrs_[i]; }
  const tf_arg& attr(int i) const { return attrs_[i]; }
  int num_attrs() const { return num_attrs_; }
  tf_arg& AddAttr() { return attrs_[num_attrs_++]; }
  // What the kernel writes: the op's returns (out=) in order, then the
  // inputs it updates in place (add_rms_norm's residual). written(i) is the
  // tensor behind output(i); the dispatcher bumps each one's version.
  static constexpr int kMaxOutputs = static_cast<int>(kMaxOpOutputs);
  void SetOutput(int slot, TensorRef* ref) {
    written_[slot] = ref;
    outputs_[slot] = ref->view;
    if (num_outputs_ <= slot) num_outputs_ = slot + 1;
  }
  tf_tensor& output(int i = 0) { return outputs_[i]; }
  const tf_tensor& output(int i = 0) const { return outputs_[i]; }
  TensorRef* written(int i) const { return written_[i]; }
  int num_outputs() const { return num_outputs_; }
  TensorRef* out_ref() const { return written_[0]; }  // out=, the first return

  // The tensor whose device and dtype key the kernel lookup.
  TensorRef* dispatch_ref() const { return dispatch_ref_; }
  // The op whose kernel runs, when not the called op's (an OpId): mul of a
  // float16 tensor and a Python number runs add's (prepare_pointwise.cc).
  // -1: the called op's.
  int kernel_op() const { return kernel_op_; }
  void set_kernel_op(int op) { kernel_op_ = op; }
  // The kernel, where the rule has looked it up already (a declared op's,
  // whose infer shapes the outputs): Dispatch runs it without a second
  // lookup. nullptr: Dispatch looks it up.
  const KernelEntry* kernel() const { return kernel_; }
  void set_kernel(const KernelEntry* kernel) { kernel_ = kernel; }
  // Elements touched, to decide on the GIL.
  int64_t work() const { return work_; }

  // What the call returns: `result` (borrowed), or with num_returned() > 1
  // written(0 .. n) as a tuple; None when neither.
  PyObject* result() const { return result_; }
  void set_result(PyObject* out) { result_ = out; }
  int num_returned() const { return num_returned_; }
  void set_num_returned(int n) { num_returned_ = n; }
  // The out= the host allocated (a tuple of them for several returns), owned
  // by the frame and kept for the second pass.
  PyObject* owned_result() const { return owned_result_; }
  void set_owned_result(PyObject* owned) { owned_result_ = owned; }
  // Owned, kept for the second pass: a snapshot of a list argument.
  PyObject* keep_alive() const { return keep_alive_; }
  void set_keep_alive(PyObject* owned) { keep_alive_ = owned; }

  // Outer dims the kernel's shapes cannot hold (matmul's batch dims that do
  // not nest): the dispatcher calls the kernel once per index of them, each
  // call with tensors[t] starting sum(index[d] * strides[t][d]) elements
  // further. ndim 0: one call.
  struct Repeat {
    static constexpr int kMaxTensors = 3;
    int ndim = 0;
    int num_tensors = 0;
    int64_t sizes[kMaxRank];
    tf_tensor* tensors[kMaxTensors];
    int64_t strides[kMaxTensors][kMaxRank];
  };
  Repeat& repeat() { return repeat_; }
  const Repeat& repeat() const { return repeat_; }

 private:
  // Take()'s refusals, out of line: formatting a message in Take() itself
  // keeps the compiler from inlining Take() into the rules, which every
  // tensor of every call would pay for (the bench's call section shows it).
  [[gnu::cold, gnu::noinline]] TensorRef* RaiseOverCapacity(const char* what) {
    RaiseError(PyExc_RuntimeError,
               fmt::format("{}(): {}: more than the {} tensors this call "
                           "made room for; please report this",
                           op_, what, capacity_));
    return nullptr;
  }
  [[gnu::cold, gnu::noinline]] TensorRef* RaiseTooDeep(const char* what,
                                                       int64_t ndim) {
    RaiseError(PyExc_ValueError,
               fmt::format("{}(): {} has {} dims; torchferry takes tensors "
                           "of at most {} dims (TF_MAX_NDIM)",
                           op_, what, ndim, kMaxRank));
    return nullptr;
  }
  [[gnu::cold, gnu::noinline]] TensorRef* RaiseExpanded(const char* what,
                                                        int dim, int64_t size) {
    RaiseError(PyExc_ValueError,
               fmt::format("{}(): {} has stride 0 on dim {} of size {} (an "
                           "expanded tensor), so several results would land "
                           "in one element; pass a tensor with its own memory",
                           op_, what, dim, size));
    return nullptr;
  }

  bool TakeImported(PyObject* obj, const char* what, bool writable,
                    TensorRef* ref) {
    for (const TensorRef& imported : imported_) {
      if (imported.object != obj) continue;
      if (writable && imported.read_only) {
        return RaiseError(PyExc_ValueError,
                          fmt::format("{}(): {}: this {} is read-only; "
                                      "expected a writable array",
                                      op_, what, Py_TYPE(obj)->tp_name));
      }
      *ref = imported;
      ref->dlpack_managed = nullptr;  // the frame's copy owns it
      return true;
    }
    NotePython();  // __dlpack__ is someone else's Python
    *ref = TensorRef{};
    if (!bridge_.Read(obj, what, writable, ref)) {
      PrefixPendingError(op_);
      return false;
    }
    imported_.push_back(*ref);
    ref->dlpack_managed = nullptr;
    return true;
  }

  // Room for n T's, filled before they are read: default-constructing a
  // dozen TensorRefs and four noted states on every call was most of the
  // frame's own cost in a call that does nothing else (the bench's noop).
  template <typename T, int n>
  union Slots {
    static_assert(std::is_trivially_copyable_v<T> &&
                  std::is_trivially_destructible_v<T>);
    Slots() {}
    T at[n];
  };

  static constexpr int kArenaSize = 8 * kMaxRank;
  tf_arg* inputs_ = inline_inputs_;  // kInlineTensors, or as Reserve()d
  int num_inputs_ = 0;
  tf_arg attrs_[kMaxAttrs];
  int num_attrs_ = 0;
  tf_tensor outputs_[kMaxOutputs];
  TensorRef* written_[kMaxOutputs] = {};
  int num_outputs_ = 0;
  TensorRef* dispatch_ref_ = nullptr;
  int kernel_op_ = -1;
  const KernelEntry* kernel_ = nullptr;
  int64_t work_ = 0;
  PyObject* result_ = nullptr;
  int num_returned_ = 0;
  PyObject* owned_result_ = nullptr;
  PyObject* keep_alive_ = nullptr;
  Repeat repeat_;
  Bridge& bridge_;
  const char* op_;
  TensorSource* source_ = nullptr;
  Slots<TensorRef, kInlineTensors> inline_refs_;
  tf_tensor inline_items_[kInlineTensors];
  tf_arg inline_inputs_[kInlineTensors];
  std::unique_ptr<tf_arg[]> heap_inputs_;
  TensorRef* refs_ = inline_refs_.at;
  tf_tensor* items_ = inline_items_;
  std::unique_ptr<TensorRef[]> heap_refs_;
  std::unique_ptr<tf_tensor[]> heap_items_;
  int num_refs_ = 0;
  int capacity_ = kInlineTensors;
  int64_t arena_[kArenaSize];
  int arena_used_ = 0;
  bool python_ran_ = false;
  struct Noted {
    int ref;
    TensorState state;
  };
  static constexpr int kInlineNoted = 4;  // more spill to the heap
  int noted_ = 0;                         // refs NotePython has looked at
  int num_noted_ = 0;                     // of them, torch tensors
  Slots<Noted, kInlineNoted> inline_noted_;
  std::vector<Noted> more_noted_;
  std::vector<TensorRef> imported_;  // DLPack imports, released last
  TensorRef number_ref_;
  alignas(8) unsigned char number_bits_[8];
};

}  // namespace torchferry
