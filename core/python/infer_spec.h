// torchferry._C._infer: an op's output spec from its arguments' specs,
// through the preparation an eager call runs (a declared op's infer and the
// host's checks of what it gave), without any tensor. torch.compile's fake
// implementations of plugin-declared ops use it (torchferry/library.py).
#pragma once

#include <Python.h>

#include "loader/loader.h"

namespace torchferry {

// _infer(name, device, values, out): `values` holds one value per parameter
// of the op's Python signature, in its order, a tensor as a (shape tuple,
// dtype name) spec; `out` is a spec, a tuple of specs for an op with several
// returns, or None; `device` is 'cpu' or 'cuda'. Returns the output's
// (shape, dtype name), a list of them for several returns, or None for an op
// that returns nothing; raises what the eager call would raise for the same
// arguments.
PyObject* InferSpec(const Registry& registry, PyObject* args);

}  // namespace torchferry
