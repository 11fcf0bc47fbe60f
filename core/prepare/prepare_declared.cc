// Ops a plugin declares (ABI 1.1): arguments by the op's schema, outputs
// shaped by the plugin's infer, then checked as any op's are.
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/kernel_cache.h"
#include "core/prepare/number_tensor.h"
#include "core/prepare/op_description.h"
#include "core/prepare/out_alloc.h"
#include "core/prepare/prepare_parts.h"

namespace torchferry {

namespace {

// Checks one spec a plugin's infer gave: a dtype of ABI.md, a rank up to
// TF_MAX_NDIM and sizes whose tensor a device could hold. `what` is "" or
// "output 1 ", for messages.
bool CheckSpec(const KernelEntry& kernel, const char* op, const char* what,
               const tf_tensor_spec& spec, DtypeIndex* dtype) {
  auto who = [&] { return fmt::format("{}: {}()", kernel.plugin->name, op); };
  *dtype = DtypeFromDlpack(spec.dtype.code, spec.dtype.bits, spec.dtype.lanes);
  if (*dtype == kNoDtype) {
    return RaiseError(PyExc_RuntimeError,
                      fmt::format("{}: infer gave {}an unknown dtype (code "
                                  "{}, bits {}, lanes {}); expected a dtype "
                                  "from ABI.md",
                                  who(), what, spec.dtype.code, spec.dtype.bits,
                                  spec.dtype.lanes));
  }
  if (spec.ndim < 0 || spec.ndim > TF_MAX_NDIM) {
    return RaiseError(PyExc_RuntimeError,
                      fmt::format("{}: infer gave {}ndim {}; expected 0 to {}",
                                  who(), what, spec.ndim, TF_MAX_NDIM));
  }
  // A tensor's bytes must fit an allocation; 2**48 is far past any device.
  uint64_t bytes = static_cast<uint64_t>(Dtype(*dtype).itemsize);
  for (int d = 0; d < spec.ndim; ++d) {
    const int64_t size = spec.shape[d];
    if (size < 0 ||
        __builtin_mul_overflow(bytes, static_cast<uint64_t>(size), &bytes) ||
        bytes > (uint64_t{1} << 48)) {
      return RaiseError(
          PyExc_RuntimeError,
          fmt::format("{}: infer gave {}shape {}; expected sizes >= 0 whose "
                      "tensor fits in 2**48 bytes",
                      who(), what, ShapeText(spec.ndim, spec.shape)));
    }
  }
  return true;
}

// Calls the plugin's infer and checks what it gave: each return's dtype and
// shape, from which out= is checked or allocated. Nothing is allocated when
// infer fails or gives something no tensor can be.
bool InferOutputs(const OpFunction& fn, const KernelEntry& kernel, CallFrame& f,
                  int num_inputs, int num_specs, tf_tensor_spec* specs,
                  DtypeIndex* dtypes) {
  const char* op = fn.name.c_str();
  ErrorSink sink;
  tf_call call = f.MakeCall(kernel.kernel_data, nullptr, &sink,
                            /*with_outputs=*/false);
  // infer runs before the rule sets the frame's inputs (their work counts
  // the outputs infer shapes): it sees the inputs written so far.
  call.num_inputs = num_inputs;
  for (int i = 0; i < num_specs; ++i) {
    specs[i] = tf_tensor_spec{};
    specs[i].ndim = -1;
  }
  const tf_status status = kernel.infer(&call, specs, num_specs);
  if (status != TF_OK) {
    return RaiseError(ExceptionFor(status),
                      fmt::format("{}: {}(): {}", kernel.plugin->name, op,
                                  sink.message.empty()
                                      ? fmt::format("infer failed with status "
                                                    "{} and no message",
                                                    status)
                                      : sink.message));
  }
  static constexpr const char* kWhat[kMaxSchemaReturns] = {
      "output 0 ", "output 1 ", "output 2 ", "output 3 "};
  for (int i = 0; i < num_specs; ++i) {
    const char* what = num_specs == 1 ? "" : kWhat[i];
    if (!CheckSpec(kernel, op, what, specs[i], &dtypes[i])) return false;
  }
  return true;
}

// How messages name the returns of an op with several.
constexpr const char* kOutNames[kMaxSchemaReturns] = {"out[0]", "out[1]",
                                                      "out[2]", "out[3]"};

// The outputs of an op with several returns: out= is None (each is
// allocated, and the tuple of them kept for a second pass) or a tuple or
// list of that many tensors.
bool TakeOuts(const char* op, const ParsedArgs& args, CallFrame& f,
              const TensorRef& like, int n, const tf_tensor_spec* specs,
              const DtypeIndex* dtypes) {
  PyObject* out = args.out;
  if (out == nullptr || out == Py_None) {
    f.NotePython();  // PyTuple_New may run the gc, and its callbacks
    PyObject* made = PyTuple_New(n);
    if (made == nullptr) return false;
    f.set_owned_result(made);
    for (int i = 0; i < n; ++i) {
      PyObject* t =
          AllocateLike(op, f, like, dtypes[i], specs[i].ndim, specs[i].shape);
      if (t == nullptr) return false;
      PyTuple_SET_ITEM(made, i, t);
    }
    out = made;
  } else if (PyList_Check(out)) {
    // A list may change while the kernel runs without the GIL: the call
    // keeps a tuple of its items (made once; a second pass reuses it).
    if (f.keep_alive() == nullptr) {
      f.NotePython();
      f.set_keep_alive(PyList_AsTuple(out));
      if (f.keep_alive() == nullptr) return false;
    }
    out = f.keep_alive();
  }
  if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != n) {
    return RaiseError(
        PyExc_TypeError,
        fmt::format("{}(): expected out to be a tuple of {} tensors, got {}",
                    op, n,
                    PyTuple_Check(out)
                        ? fmt::format("a tuple of {}", PyTuple_GET_SIZE(out))
                        : std::string(Py_TYPE(out)->tp_name)));
  }
  for (int i = 0; i < n; ++i) {
    if (!TakeOutput(op, kOutNames[i], PyTuple_GET_ITEM(out, i), f, i, like,
                    dtypes[i], specs[i].ndim, specs[i].shape)) {
      return false;
    }
  }
  f.set_num_returned(n);
  return true;
}

}  // namespace

// What a kernel of a declared op gets: every tensor argument in `inputs` in
// the schema's order, the other arguments in `attrs`, and in `outputs` the
// returns in order, then the arguments written in place (Tensor(a!) before
// '*') in the schema's order. No written tensor overlaps another tensor of
// the call.
bool PrepareDeclared(const OpFunction& fn, const ParsedArgs& args,
                     CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* first = nullptr;
  TensorRef* tensors[kMaxParams];
  const char* names[kMaxParams];
  TensorRef* in_place[kMaxParams];
  const char* in_place_names[kMaxParams];
  int num_tensors = 0, num_in_place = 0, num_inputs = 0;
  // Every tensor argument and every return is a tensor of the frame; a
  // schema may have more of them than the frame holds inline.
  f.Reserve(fn.num_tensors);
  // Tensors first, in the schema's order: the first keys the kernel.
  for (int i = 0; i < fn.signature.num_params; ++i) {
    const SchemaArg& a = *fn.params[i];
    if (a.type != ArgType::kTensor) continue;
    PyObject* value = args.values[i];
    if (value == nullptr || value == Py_None) {
      if (!a.optional) {
        return RaiseError(PyExc_TypeError,
                          fmt::format("{}(): expected {} to be a tensor, got "
                                      "None",
                                      op, a.name));
      }
      f.input(num_inputs++) = NoneArg();
      continue;
    }
    const char* name = a.name.c_str();
    TensorRef* r = f.Take(value, name, a.in_place());
    if (r == nullptr) return false;
    if (first != nullptr && !CheckSameDevice(op, name, *r, *first)) {
      return false;
    }
    if (a.in_place()) {
      in_place_names[num_in_place] = name;
      in_place[num_in_place++] = r;
    }
    if (first == nullptr) first = r;
    names[num_tensors] = name;
    tensors[num_tensors++] = r;
    SetTensorArg(&f.input(num_inputs++), r);
  }
  for (int i = 0; i < fn.signature.num_params; ++i) {
    const SchemaArg& a = *fn.params[i];
    if (a.type == ArgType::kTensor) continue;
    if (!DeclaredAttr(op, a, args.values[i], first->dtype, &f.AddAttr())) {
      return false;
    }
  }
  int64_t work = 0;  // every tensor read, returned or written in place
  for (int t = 0; t < num_tensors; ++t)
    work = SaturatedSum(work, tensors[t]->numel);
  const KernelEntry* kernel =
      KernelCache::Get().Find(fn.id, first->view.device, first->dtype);
  f.set_kernel(kernel);
  if (kernel == nullptr || kernel->infer == nullptr) {
    // Dispatch says that no plugin serves this key.
    f.SetInputs(num_inputs, first, work);
    return true;
  }
  const int num_specs = static_cast<int>(fn.schema.returns.size());
  tf_tensor_spec specs[kMaxSchemaReturns];
  DtypeIndex dtypes[kMaxSchemaReturns];
  if (!InferOutputs(fn, *kernel, f, num_inputs, num_specs, specs, dtypes)) {
    return false;
  }
  if (num_specs == 1) {
    if (fn.has_out_arg && (args.out == nullptr || args.out == Py_None)) {
      return RaiseError(
          PyExc_TypeError,
          fmt::format("{}() missing required argument 'out'", op));
    }
    if (!TakeOut(op, args, f, *first, dtypes[0], specs[0].ndim,
                 specs[0].shape)) {
      return false;
    }
  } else if (num_specs > 1 &&
             !TakeOuts(op, args, f, *first, num_specs, specs, dtypes)) {
    return false;
  } else if (num_specs == 0 && args.out != nullptr && args.out != Py_None) {
    return RaiseError(
        PyExc_TypeError,
        fmt::format("{}(): returns nothing, so it takes no out=", op));
  }
  // Returns against inputs and one another, then what is written in place
  // against every other tensor.
  for (int o = 0; o < num_specs; ++o) {
    const TensorRef& out = *f.written(o);
    const char* out_name = num_specs == 1 ? "out" : kOutNames[o];
    if (!CheckNoOverlap(op, num_tensors, names, tensors, out, false,
                        out_name)) {
      return false;
    }
    for (int p = 0; p < o; ++p) {
      if (!CheckNoOverlap(op, kOutNames[p], *f.written(p), out, false,
                          out_name)) {
        return false;
      }
    }
    work = SaturatedSum(work, out.numel);
  }
  for (int w = 0; w < num_in_place; ++w) {
    for (int t = 0; t < num_tensors; ++t) {
      if (tensors[t] == in_place[w]) continue;
      if (!CheckNoOverlap(op, names[t], *tensors[t], *in_place[w], false,
                          in_place_names[w])) {
        return false;
      }
    }
    f.SetOutput(num_specs + w, in_place[w]);
    work = SaturatedSum(work, in_place[w]->numel);
  }
  f.SetInputs(num_inputs, first, work);
  return true;
}

}  // namespace torchferry
