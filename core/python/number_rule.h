// torchferry._C._number: how an op takes a Python number standing for one of
// its tensor arguments, asked by torch.compile's traced calls
// (torchferry/library.py), so that the rule lives here alone.
#pragma once

#include <Python.h>

#include "loader/loader.h"

namespace torchferry {

// _number(op, arg, value, dtype, device): `value` as the eager call takes it
// for argument `arg` of `op` beside a tensor of `dtype` (torch's name) on
// `device` ('cpu' or 'cuda'): the element as torch.full takes it
// (NumberElement), or the eager call's TypeError or OverflowError.
PyObject* NumberForArg(const Registry& registry, PyObject* args);

}  // namespace torchferry
