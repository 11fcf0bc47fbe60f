// The apache-tvm-ffi peer of the benchmark: functions taking 1, 3 and 8
// tensors, exported through tvm-ffi's C ABI and loaded with
// tvm_ffi.load_module. Each reads every view, as torchferry's noop kernel
// does, so that both sides pay for the same work: argument conversion, the
// call, and nothing else.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

#include <cstdint>

namespace {

using tvm::ffi::TensorView;

volatile int64_t g_sink = 0;

int64_t Read(const TensorView& t) {
  return t.ndim() + static_cast<int64_t>(
                        reinterpret_cast<uintptr_t>(t.data_ptr()) & 1);
}

void Nop1(TensorView a) { g_sink = g_sink + Read(a); }

void Nop3(TensorView a, TensorView b, TensorView c) {
  g_sink = g_sink + Read(a) + Read(b) + Read(c);
}

void Nop8(TensorView a, TensorView b, TensorView c, TensorView d,
          TensorView e, TensorView f, TensorView g, TensorView h) {
  g_sink = g_sink + Read(a) + Read(b) + Read(c) + Read(d) + Read(e) +
           Read(f) + Read(g) + Read(h);
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(nop1, Nop1);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(nop3, Nop3);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(nop8, Nop8);
