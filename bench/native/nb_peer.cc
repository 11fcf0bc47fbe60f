// torchferry.bench._nb_peer: the nanobind side of the benchmark. Each function
// does what a binding built on nanobind does with a tensor argument, and no
// more, so that its Python-level cost is the cost of the binding.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <chrono>
#include <cstdint>

#include "dlpack_exchange.h"

namespace nb = nanobind;
using torchferry_bench::ExchangeApiOf;
using torchferry_bench::ExchangeView;

namespace {

// Every function reads what it was given into here, so that no conversion
// is optimised away.
volatile int64_t g_sink = 0;

// A function taking `nb::ndarray<>`: nanobind's cast (through __dlpack__)
// happens before the body runs.
void NdarrayArg(const nb::ndarray<>& a) {
  g_sink = g_sink + static_cast<int64_t>(a.ndim()) +
           static_cast<int64_t>(reinterpret_cast<uintptr_t>(a.data()) & 1);
}

// The DLPack C exchange API, called from a function of this module.
void ExchangeArg(nb::handle obj) {
  const auto* api = ExchangeApiOf(obj.ptr());
  if (api == nullptr) throw nb::python_error();
  int64_t sink = 0;
  if (ExchangeView(api, obj.ptr(), &sink) != 0) throw nb::python_error();
  g_sink = g_sink + sink;
}

// Which form torch offers: "dltensor" (non-owning, filled in place) or
// "managed" (allocated and released per view).
const char* ExchangeForm(nb::handle obj) {
  const auto* api = ExchangeApiOf(obj.ptr());
  if (api == nullptr) throw nb::python_error();
  return api->dltensor_from_py_object_no_sync != nullptr ? "dltensor"
                                                         : "managed";
}

// ns per view through the exchange API in a C++ loop, GIL held: the same
// measure as torchferry._C._time_bridge gives for the bridge's paths.
double TimeExchange(nb::handle obj, int64_t iterations) {
  const auto* api = ExchangeApiOf(obj.ptr());
  if (api == nullptr) throw nb::python_error();
  int64_t sink = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    if (ExchangeView(api, obj.ptr(), &sink) != 0) throw nb::python_error();
  }
  const double ns = std::chrono::duration<double, std::nano>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  g_sink = g_sink + sink;
  return ns / static_cast<double>(iterations > 0 ? iterations : 1);
}

}  // namespace

NB_MODULE(_nb_peer, m) {
  m.doc() = "nanobind peers of the torchferry benchmark";
  m.def("ndarray_arg", &NdarrayArg, nb::arg("a"),
        "a function taking nb::ndarray<>: measures nanobind's tensor cast");
  m.def("exchange_arg", &ExchangeArg, nb::arg("obj"),
        "reads obj through the DLPack C exchange API of its type");
  m.def("exchange_form", &ExchangeForm, nb::arg("obj"));
  m.def("time_exchange", &TimeExchange, nb::arg("obj"), nb::arg("iterations"),
        "ns per DLPack exchange-API view of obj in a C++ loop, GIL held");
}
