// Everything one op call holds, on the stack: the bridged tensors, the
// tf_call arguments that point at them, and a small arena for the shapes and
// strides the host rewrites (broadcast, batch-prepended matmul operands).
// Its destructor releases every bridged tensor, on every exit path.
#pragma once

#include <cstdint>
#include <memory>

#include "abi/torchferry.h"
#include "core/bridge.h"
#include "core/py_errors.h"

namespace torchferry {

constexpr int kMaxAttrs = 4;
constexpr int kMaxRank = 16;  // for rewritten shapes; bridged views have none
constexpr int kInlineTensors = 12;

class CallFrame {
 public:
  // `op` prefixes the messages of arguments that fail to bridge.
  CallFrame(Bridge& bridge, const char* op) : bridge_(bridge), op_(op) {}
  ~CallFrame() {
    for (int i = 0; i < num_refs_; ++i) bridge_.Release(&refs_[i]);
    Py_XDECREF(owned_result);
    Py_XDECREF(keep_alive);
  }
  CallFrame(const CallFrame&) = delete;
  CallFrame& operator=(const CallFrame&) = delete;

  // Makes room for `count` tensors (tensor lists may exceed the inline
  // capacity). Call before the first Take().
  void Reserve(int count) {
    if (count <= kInlineTensors) return;
    heap_refs_.reset(new TensorRef[count]);
    heap_items_.reset(new tf_tensor[count]);
    heap_inputs_.reset(new tf_arg[count]);
    refs_ = heap_refs_.get();
    items_ = heap_items_.get();
    inputs = heap_inputs_.get();
  }

  // Bridges `obj`; the frame releases it. nullptr with a Python exception.
  TensorRef* Take(PyObject* obj, const char* what, bool writable) {
    TensorRef* ref = &refs_[num_refs_];
    if (!bridge_.Read(obj, what, writable, ref)) {
      PrefixPendingError(op_);
      return nullptr;
    }
    ++num_refs_;
    return ref;
  }

  // Shape/stride storage for a rewritten view; lives as long as the frame.
  int64_t* Arena(int count) {
    if (arena_used_ + count > kArenaSize) return nullptr;
    int64_t* p = arena_ + arena_used_;
    arena_used_ += count;
    return p;
  }

  tf_tensor* list_items() { return items_; }
  int num_refs() const { return num_refs_; }
  TensorRef& ref(int i) { return refs_[i]; }

  tf_arg* inputs = inline_inputs_;  // kInlineTensors, or as Reserve()d
  int num_inputs = 0;
  tf_arg attrs[kMaxAttrs];
  int num_attrs = 0;
  tf_tensor output;
  int num_outputs = 0;
  TensorRef* dispatch_ref = nullptr;  // the tensor whose device/dtype key
  TensorRef* out_ref = nullptr;
  PyObject* result = nullptr;        // borrowed; returned with a new reference
  PyObject* owned_result = nullptr;  // an out= the host allocated
  PyObject* keep_alive = nullptr;    // owned, e.g. a snapshot of a list arg
  int64_t work = 0;                  // elements touched, to decide on the GIL

 private:
  static constexpr int kArenaSize = 8 * kMaxRank;
  Bridge& bridge_;
  const char* op_;
  TensorRef inline_refs_[kInlineTensors];
  tf_tensor inline_items_[kInlineTensors];
  tf_arg inline_inputs_[kInlineTensors];
  std::unique_ptr<tf_arg[]> heap_inputs_;
  TensorRef* refs_ = inline_refs_;
  tf_tensor* items_ = inline_items_;
  std::unique_ptr<TensorRef[]> heap_refs_;
  std::unique_ptr<tf_tensor[]> heap_items_;
  int num_refs_ = 0;
  int64_t arena_[kArenaSize];
  int arena_used_ = 0;
};

}  // namespace torchferry
