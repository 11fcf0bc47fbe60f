#include "core/python/number_rule.h"

#include <fmt/format.h>

#include "core/bridge/py_errors.h"
#include "core/prepare/number_tensor.h"
#include "core/prepare/prepare.h"
#include "core/python/op_functions.h"

namespace torchferry {

PyObject* NumberForArg(const Registry& registry, PyObject* args) {
  const char *name, *arg, *dtype_name, *device;
  PyObject* value;
  if (!PyArg_ParseTuple(args, "ssOss", &name, &arg, &value, &dtype_name,
                        &device)) {
    return nullptr;
  }
  tf_device dev;
  if (!DeviceNamed(device, &dev)) return nullptr;
  const OpFunction* fn = FunctionNamed(registry, name);
  if (fn == nullptr) return nullptr;
  size_t position = fn->schema.args.size();
  for (size_t i = 0; i < fn->schema.args.size(); ++i) {
    if (fn->schema.args[i].name == arg) position = i;
  }
  if (position == fn->schema.args.size()) {
    RaiseError(PyExc_ValueError,
               fmt::format("{}() has no argument '{}'", name, arg));
    return nullptr;
  }
  TensorRef like{};
  like.dtype = DtypeNamed(dtype_name);
  if (like.dtype == kNoDtype) return nullptr;
  like.view.dtype = Dtype(like.dtype).dtype;
  like.view.device = dev;
  // The preparation rules read plain numbers only (op_functions.cc makes
  // them so); a traced call hands over what Dynamo holds as a constant.
  if (!PyFloat_CheckExact(value) && !PyLong_CheckExact(value) &&
      !PyBool_Check(value)) {
    RaiseError(PyExc_TypeError,
               fmt::format("{}(): expected {} to be an int, float or bool, "
                           "got {}",
                           name, arg, Py_TYPE(value)->tp_name));
    return nullptr;
  }
  return NumberElement(NumberRuleFor(*fn, position), fn->name.c_str(), arg,
                       value, like);
}

}  // namespace torchferry
