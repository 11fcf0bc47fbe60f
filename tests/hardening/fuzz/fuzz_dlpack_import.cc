// libFuzzer target: bytes -> a DLPack producer (a Python object whose
// __dlpack__ hands out a capsule of any content, or misbehaves) -> the core's
// bridge, Bridge::Read (core/bridge/dlpack_import.cc, linked as is, in an
// embedded Python interpreter). This is the one place where the core reads
// memory described by someone else's metadata, so it must refuse what it cannot
// represent.
//
// The producer tells the truth about its own memory (the shape and strides
// arrays hold exactly ndim entries) but may claim anything: negative or huge
// ndim, negative or huge sizes, strides NULL or wild, unknown dtypes and
// devices, a read-only versioned tensor for an out, a NULL deleter, a capsule
// of the wrong name, an exception from __dlpack__ (a TypeError of its own, a
// KeyboardInterrupt), a versioned tensor of any DLPack version.
//
// Properties, each a trap when broken:
//  - a refusal comes with a Python exception set;
//  - an accepted view is one the rest of the core and every kernel can trust:
//    0 <= ndim, every size >= 0, strides present, a known dtype and device,
//    an element count and a byte span that fit in int64, the data pointer
//    the producer gave plus its byte_offset; an out is never read-only;
//  - the producer's deleter runs exactly once: not while the view is in use,
//    and not never;
//  - a versioned tensor is accepted only with DLPack major version 1;
//  - __dlpack__ is called once, twice only when it refused max_version;
//  - a KeyboardInterrupt from __dlpack__ comes out as itself.
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "byte_reader.h"
#include "core/bridge/bridge.h"
#include "core/bridge/dlpack_abi.h"
#include "core/bridge/dtypes.h"

using namespace torchferry;
using torchferry::fuzz::ByteReader;

namespace {

[[noreturn]] void Broken(const std::string& what) {
  std::fprintf(stderr, "fuzz_dlpack_import: %s\n", what.c_str());
  std::abort();
}

// What the producer hands out for the current input.
struct Producer {
  enum Behaviour {
    kCapsule,
    kRefuseVersions,
    kNotACapsule,
    kWrongName,
    kRaise,
    kRaiseTypeError,  // a TypeError that is not about max_version
    kInterrupt,
  };
  Behaviour behaviour = kCapsule;
  bool versioned = false;
  dlpack::ManagedTensor legacy{};
  dlpack::ManagedTensorVersioned modern{};
  int deleted = 0;
  int calls = 0;      // of __dlpack__
  bool made = false;  // a managed tensor was handed out
};
Producer g_producer;
PyObject* g_producer_type = nullptr;

void DeleteLegacy(dlpack::ManagedTensor* self) {
  if (self != &g_producer.legacy) Broken("deleter called with a wrong pointer");
  ++g_producer.deleted;
}
void DeleteModern(dlpack::ManagedTensorVersioned* self) {
  if (self != &g_producer.modern) Broken("deleter called with a wrong pointer");
  ++g_producer.deleted;
}

// The capsule destructor every producer installs: an unconsumed tensor is
// still the producer's to delete.
void CapsuleDestructor(PyObject* capsule) {
  const char* name = PyCapsule_GetName(capsule);
  if (name != nullptr && std::strncmp(name, "used_", 5) == 0) return;
  void* p = PyCapsule_GetPointer(capsule, name);
  PyErr_Clear();
  if (p == &g_producer.legacy && g_producer.legacy.deleter) {
    g_producer.legacy.deleter(&g_producer.legacy);
  } else if (p == &g_producer.modern && g_producer.modern.deleter) {
    g_producer.modern.deleter(&g_producer.modern);
  }
}

// Producer.__dlpack__'s body: called with whether max_version was passed.
PyObject* MakeCapsule(PyObject*, PyObject* asked_versioned) {
  const bool with_version = PyObject_IsTrue(asked_versioned) == 1;
  ++g_producer.calls;
  switch (g_producer.behaviour) {
    case Producer::kRaiseTypeError:
      PyErr_SetString(PyExc_TypeError, "this producer cannot export today");
      return nullptr;
    case Producer::kInterrupt:
      PyErr_SetNone(PyExc_KeyboardInterrupt);
      return nullptr;
    case Producer::kNotACapsule:
      return PyLong_FromLong(5);
    case Producer::kRaise:
      PyErr_SetString(PyExc_RuntimeError, "producer failed to export");
      return nullptr;
    case Producer::kRefuseVersions:
      if (with_version) {
        PyErr_SetString(PyExc_TypeError, "unexpected keyword max_version");
        return nullptr;
      }
      break;
    default:
      break;
  }
  g_producer.made = true;
  if (g_producer.behaviour == Producer::kWrongName) {
    return PyCapsule_New(&g_producer.legacy, "not_a_dltensor",
                         CapsuleDestructor);
  }
  if (g_producer.versioned && with_version) {
    return PyCapsule_New(&g_producer.modern, "dltensor_versioned",
                         CapsuleDestructor);
  }
  return PyCapsule_New(&g_producer.legacy, "dltensor", CapsuleDestructor);
}

PyMethodDef g_make_def = {"make_capsule", &MakeCapsule, METH_O, nullptr};

constexpr dlpack::DataType kDtypes[] = {
    {2, 32, 1}, {2, 64, 1}, {2, 16, 1}, {4, 16, 1}, {0, 8, 1},
    {0, 16, 1}, {0, 32, 1}, {0, 64, 1}, {1, 8, 1},  {6, 8, 1},
};

bool MulOk(int64_t a, int64_t b, int64_t* r) {
  return !__builtin_mul_overflow(a, b, r);
}
bool AddOk(int64_t a, int64_t b, int64_t* r) {
  return !__builtin_add_overflow(a, b, r);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Py_InitializeEx(0);
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* make = PyCFunction_New(&g_make_def, nullptr);
  PyDict_SetItemString(globals, "make_capsule", make);
  PyObject* done = PyRun_String(
      "class Producer:\n"
      "    def __dlpack__(self, *args, **kwargs):\n"
      "        return make_capsule('max_version' in kwargs)\n",
      Py_file_input, globals, globals);
  g_producer_type = done ? PyDict_GetItemString(globals, "Producer") : nullptr;
  if (g_producer_type == nullptr) {
    PyErr_Print();
    std::exit(2);
  }
  Py_INCREF(g_producer_type);
  Py_XDECREF(done);
  Py_DECREF(make);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader in(data, size);
  g_producer = Producer{};
  switch (in.Pick(18)) {
    case 4:
      g_producer.behaviour = Producer::kRaiseTypeError;
      break;
    case 5:
      g_producer.behaviour = Producer::kInterrupt;
      break;
    case 0:
      g_producer.behaviour = Producer::kRefuseVersions;
      break;
    case 1:
      g_producer.behaviour = Producer::kNotACapsule;
      break;
    case 2:
      g_producer.behaviour = Producer::kWrongName;
      break;
    case 3:
      g_producer.behaviour = Producer::kRaise;
      break;
    default:
      break;
  }
  g_producer.versioned = in.Bit();
  const bool writable = in.Bit();

  int32_t ndim;
  switch (in.Pick(8)) {
    case 5:
      ndim = -1 - static_cast<int32_t>(in.U8());
      break;
    case 6:
      ndim = 16 + in.Pick(56);
      break;
    case 7:
      ndim = in.Raw<int32_t>();
      break;
    default:
      ndim = in.Pick(5);
      break;
  }
  // The producer's own arrays hold exactly what it claims; a claim beyond
  // what memory could hold is capped to keep the producer truthful.
  if (ndim > 4096) ndim = 4096;
  const size_t entries = ndim > 0 ? static_cast<size_t>(ndim) : 0;
  std::vector<int64_t> shape(entries), strides(entries);
  int64_t running = 1;
  for (size_t d = entries; d-- > 0;) {
    switch (in.Pick(8)) {
      case 6:
        shape[d] = -1 - static_cast<int64_t>(in.U8());
        break;
      case 7:
        shape[d] = in.Raw<int64_t>();
        break;
      default:
        shape[d] = in.Pick(6);
        break;
    }
    switch (in.Pick(4)) {
      case 1:
        strides[d] = 0;
        break;
      case 2:
        strides[d] = -1 - static_cast<int64_t>(in.Pick(8));
        break;
      case 3:
        strides[d] = in.Raw<int64_t>();
        break;
      default:
        strides[d] = running;
        break;
    }
    // The compact stride of the next dim; it stops growing rather than
    // overflow (the harness must not be the one with undefined behaviour).
    int64_t next;
    if (shape[d] > 0 && shape[d] < (1 << 20) &&
        !__builtin_mul_overflow(running, shape[d], &next)) {
      running = next;
    }
  }
  const bool null_strides = in.Pick(6) == 0;
  // The arrays live in blocks of exactly their size (never NULL, even empty).
  std::unique_ptr<int64_t[]> shape_block(new int64_t[entries]);
  std::unique_ptr<int64_t[]> strides_block(new int64_t[entries]);
  std::copy(shape.begin(), shape.end(), shape_block.get());
  std::copy(strides.begin(), strides.end(), strides_block.get());

  static unsigned char storage[64];
  dlpack::Tensor t{};
  t.data = in.Pick(8) == 0 ? nullptr : storage;
  t.device.device_type =
      in.Pick(8) == 0 ? in.Raw<int32_t>() : (in.Pick(4) == 0 ? 2 : 1);
  t.device.device_id = in.Pick(8) == 0 ? in.Raw<int32_t>() : 0;
  t.ndim = ndim;
  t.dtype = kDtypes[in.Pick(10)];
  if (in.Pick(8) == 0) {
    t.dtype.code = in.U8();
    t.dtype.bits = in.U8();
    t.dtype.lanes = in.Raw<uint16_t>();
  }
  t.shape = shape_block.get();
  t.strides = null_strides ? nullptr : strides_block.get();
  switch (in.Pick(8)) {
    case 0:
      t.byte_offset = in.Pick(64);
      break;
    case 1:
      t.byte_offset = in.Raw<uint64_t>();
      break;
    default:
      t.byte_offset = 0;
      break;
  }
  const bool null_deleter = in.Pick(8) == 0;
  g_producer.legacy.dl_tensor = t;
  g_producer.legacy.deleter = null_deleter ? nullptr : &DeleteLegacy;
  switch (in.Pick(6)) {
    case 0:
      g_producer.modern.version = {in.Raw<uint32_t>(), in.Raw<uint32_t>()};
      break;
    case 1:
      g_producer.modern.version = {in.Pick(2) * 2, in.Pick(4)};  // 0.x, 2.x
      break;
    default:
      g_producer.modern.version = {1, in.Pick(4)};
      break;
  }
  g_producer.modern.dl_tensor = t;
  g_producer.modern.flags = in.Bit() ? dlpack::kFlagReadOnly : 0;
  g_producer.modern.deleter = null_deleter ? nullptr : &DeleteModern;

  PyObject* producer = PyObject_CallNoArgs(g_producer_type);
  if (producer == nullptr) Broken("could not make the producer");
  TensorRef ref{};
  const bool ok = Bridge::Get().Read(producer, "input", writable, &ref);
  const int expected_deletes = null_deleter || !g_producer.made ? 0 : 1;
  const int expected_calls =
      g_producer.behaviour == Producer::kRefuseVersions ? 2 : 1;
  if (g_producer.calls != expected_calls) {
    Broken("__dlpack__ was called " + std::to_string(g_producer.calls) +
           " times; expected " + std::to_string(expected_calls));
  }

  if (!ok) {
    if (PyErr_Occurred() == nullptr) {
      Broken(
          "Bridge::Read refused a DLPack producer without setting an "
          "exception (Python raises SystemError)");
    }
    if (g_producer.behaviour == Producer::kInterrupt &&
        !PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
      Broken("a KeyboardInterrupt from __dlpack__ came out as another type");
    }
    PyErr_Clear();
    Py_DECREF(producer);
    if (g_producer.deleted != expected_deletes) {
      Broken("after a refused import the producer's deleter ran " +
             std::to_string(g_producer.deleted) + " times; expected " +
             std::to_string(expected_deletes));
    }
    return 0;
  }
  if (PyErr_Occurred() != nullptr) Broken("accepted with an exception set");
  if (g_producer.behaviour == Producer::kInterrupt ||
      g_producer.behaviour == Producer::kRaiseTypeError) {
    Broken("accepted a producer whose __dlpack__ raised");
  }
  if (g_producer.deleted != 0) {
    Broken("the deleter ran while the imported view is still in use");
  }
  const bool used_versioned =
      g_producer.versioned && g_producer.behaviour == Producer::kCapsule;
  const tf_tensor& v = ref.view;
  auto fail = [&](const std::string& why) {
    Broken("Bridge::Read accepted a DLPack tensor with " + why + " (ndim " +
           std::to_string(ndim) + ")");
  };
  if (v.ndim < 0) fail("a negative ndim");
  if (v.ndim > 0 && (v.shape == nullptr || v.strides == nullptr)) {
    fail("no shape or strides array");
  }
  if (writable && used_versioned &&
      (g_producer.modern.flags & dlpack::kFlagReadOnly)) {
    fail("the read-only flag, for an argument that is written");
  }
  if (used_versioned && g_producer.modern.version.major != 1) {
    fail("DLPack major version " +
         std::to_string(g_producer.modern.version.major));
  }
  if (v.device.device_type != TF_DEVICE_CPU &&
      v.device.device_type != TF_DEVICE_CUDA) {
    fail("device type " + std::to_string(v.device.device_type));
  }
  if (ref.dtype < 0 || ref.dtype >= kNumDtypes ||
      std::memcmp(&Dtype(ref.dtype).dtype, &v.dtype, sizeof(tf_dtype)) != 0) {
    fail("a dtype the view does not carry");
  }
  int64_t numel = 1, low = 0, high = 0;
  bool fits = true;
  for (int d = 0; d < v.ndim; ++d) {
    if (v.shape[d] < 0) fail("a negative size in dim " + std::to_string(d));
    fits = fits && MulOk(numel, v.shape[d], &numel);
  }
  if (!fits) fail("an element count that overflows int64");
  if (numel != ref.numel) fail("a numel that is not the product of its sizes");
  if (numel > 0) {
    for (int d = 0; d < v.ndim; ++d) {
      int64_t reach;
      if (!MulOk(v.shape[d] - 1, v.strides[d], &reach) ||
          !AddOk(reach < 0 ? low : high, reach, reach < 0 ? &low : &high)) {
        fail("a byte span that overflows int64 (dim " + std::to_string(d) +
             ")");
      }
    }
    int64_t span, bytes;
    if (!AddOk(high - low, 1, &span) ||
        !MulOk(span, Dtype(ref.dtype).itemsize, &bytes)) {
      fail("a byte span that overflows int64");
    }
  }
  // An empty tensor with NULL data keeps NULL: offsetting NULL is undefined.
  const bool empty_null = t.data == nullptr && numel == 0 && v.data == nullptr;
  if (!empty_null && reinterpret_cast<uintptr_t>(v.data) !=
                         reinterpret_cast<uintptr_t>(t.data) + t.byte_offset) {
    fail("a data pointer other than data + byte_offset");
  }
  Bridge::Get().Release(&ref);
  Py_DECREF(producer);
  if (g_producer.deleted != expected_deletes) {
    Broken("after the view was released the producer's deleter ran " +
           std::to_string(g_producer.deleted) + " times; expected " +
           std::to_string(expected_deletes));
  }
  return 0;
}
