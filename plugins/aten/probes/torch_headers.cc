// Compiles where torch's headers compile in the C++ standard under test: the
// headers every ATen plugin source pulls in. The build (meson and
// `python -m torchferry build-aten`) tries the standard torch's build config
// asks for, then each newer one, and takes the first that compiles.
#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/util/Exception.h>
int main() { return at::Tensor().defined() ? 1 : 0; }
