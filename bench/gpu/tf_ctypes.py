"""A ctypes mirror of abi/torchferry.h, enough to load a plugin and call its
kernels on torch tensors without the torchferry package.

check_ops.py uses it as its "direct" backend: it proves a plugin on its own,
and it still runs where the package failed to build. It plays the host's
part: it broadcasts operands, reshapes matmul's operands to 3-D and fills
the call struct the way ABI.md says the host does.
"""

import ctypes
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    Union,
    c_char_p,
    c_double,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)

ABI_MAJOR, ABI_MINOR = 1, 0
DEVICE_CPU, DEVICE_CUDA = 1, 2
ARG_NONE, ARG_TENSOR, ARG_TENSOR_LIST, ARG_INT, ARG_FLOAT, ARG_BOOL = range(6)
TENSOR_CONTIGUOUS = 1
STATUS_NAMES = {
    0: "OK",
    1: "INVALID_ARGUMENT",
    2: "UNSUPPORTED",
    3: "OUT_OF_MEMORY",
    4: "DEVICE",
    5: "INTERNAL",
}


class Device(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class Dtype(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class Tensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", Device),
        ("ndim", c_int32),
        ("dtype", Dtype),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
        ("source", c_void_p),
        ("source_kind", c_int32),
        ("flags", c_uint32),
    ]


class TensorList(Structure):
    _fields_ = [("items", POINTER(Tensor)), ("count", c_int64)]


class ArgValue(Union):
    _fields_ = [
        ("tensor", POINTER(Tensor)),
        ("list", TensorList),
        ("i", c_int64),
        ("f", c_double),
    ]


class Arg(Structure):
    _fields_ = [("kind", c_int32), ("reserved", c_int32), ("value", ArgValue)]


LogFn = CFUNCTYPE(None, c_int32, c_char_p, c_char_p)
SetErrorFn = CFUNCTYPE(c_int32, c_void_p, c_int32, c_char_p)
# Returns NULL always: a Python callback cannot hand out a string that lives on.
QueryFn = CFUNCTYPE(c_void_p, c_char_p)


class HostApi(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("abi_version_major", c_uint32),
        ("abi_version_minor", c_uint32),
        ("log", LogFn),
        ("set_error", SetErrorFn),
        ("query", QueryFn),
    ]


class Call(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("inputs", POINTER(Arg)),
        ("num_inputs", c_int32),
        ("num_attrs", c_int32),
        ("attrs", POINTER(Arg)),
        ("outputs", POINTER(Tensor)),
        ("num_outputs", c_int32),
        ("reserved", c_int32),
        ("stream", c_void_p),
        ("kernel_data", c_void_p),
        ("host", POINTER(HostApi)),
        ("error_sink", c_void_p),
    ]


KernelFn = CFUNCTYPE(c_int32, POINTER(Call))
InitFn = CFUNCTYPE(c_int32, c_void_p)


class Kernel(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("op", c_char_p),
        ("device_type", c_int32),
        ("dtype", Dtype),
        ("fn", c_void_p),
        ("kernel_data", c_void_p),
    ]


class Plugin(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("abi_version_major", c_uint32),
        ("abi_version_minor", c_uint32),
        ("name", c_char_p),
        ("version", c_char_p),
        ("kind", c_int32),
        ("reserved", c_int32),
        ("init", c_void_p),
        ("set_option", c_void_p),
        ("kernels", POINTER(Kernel)),
        ("num_kernels", c_size_t),
    ]


EntryFn = CFUNCTYPE(POINTER(Plugin), c_uint32, c_uint32, POINTER(HostApi))

# (code, bits) of each dtype, by the name torch prints after "torch.".
DTYPE_CODES = {
    "bool": (6, 8),
    "uint8": (1, 8),
    "int8": (0, 8),
    "int16": (0, 16),
    "int32": (0, 32),
    "int64": (0, 64),
    "float16": (2, 16),
    "bfloat16": (4, 16),
    "float32": (2, 32),
    "float64": (2, 64),
}


class KernelError(RuntimeError):
    def __init__(self, op, status, message):
        super().__init__(f"{op}: {STATUS_NAMES.get(status, status)}: {message}")
        self.status = status


class PluginLibrary:
    """One loaded plugin. Raises RuntimeError when the entry or init fails;
    the message is what the plugin reported."""

    def __init__(self, path):
        self.path = path
        self.errors = []
        self.logs = []
        self._lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        # Keep the callbacks alive as long as the library may call them.
        self._log = LogFn(self._on_log)
        self._set_error = SetErrorFn(self._on_error)
        self._query = QueryFn(lambda key: None)
        self.host = HostApi(
            ctypes.sizeof(HostApi),
            ABI_MAJOR,
            ABI_MINOR,
            self._log,
            self._set_error,
            self._query,
        )
        entry = EntryFn(("torchferry_plugin_entry", self._lib))
        plugin = entry(ABI_MAJOR, ABI_MINOR, ctypes.byref(self.host))
        if not plugin:
            raise RuntimeError(f"{path}: the entry returned NULL; log: {self.logs}")
        self.plugin = plugin.contents
        self.name = self.plugin.name.decode()
        self.version = self.plugin.version.decode()
        self.kernels = {}
        for i in range(self.plugin.num_kernels):
            k = self.plugin.kernels[i]
            key = (k.op.decode(), k.device_type, k.dtype.code, k.dtype.bits)
            self.kernels[key] = KernelFn(k.fn)
        self.init_error = None
        if self.plugin.init:
            status = InitFn(self.plugin.init)(None)
            if status != 0:
                self.init_error = self.errors[-1] if self.errors else f"status {status}"

    def _on_log(self, level, name, message):
        self.logs.append((level, message.decode(errors="replace")))

    def _on_error(self, sink, status, message):
        self.errors.append(message.decode(errors="replace"))
        return status

    def has_kernel(self, op, device_type, dtype_name):
        code, bits = DTYPE_CODES[dtype_name]
        return (op, device_type, code, bits) in self.kernels

    def call(self, op, inputs, attrs, outputs, stream=0, key=None):
        """inputs/attrs: lists of Arg; outputs: list of Tensor. Keep the
        Python objects that own shapes and strides alive until it returns.
        `key`: the input whose dtype keys the kernel (embedding's table),
        the first tensor when None."""
        first = _first_tensor(inputs if key is None else inputs[key:key + 1], outputs)
        dtype_name = first[0] if first else "float32"
        device_type = first[1] if first else DEVICE_CPU
        code, bits = DTYPE_CODES[dtype_name]
        fn = self.kernels.get((op, device_type, code, bits))
        if fn is None:
            raise KernelError(op, 2, f"the plugin has no kernel for {dtype_name}")
        in_arr = (Arg * max(1, len(inputs)))(*inputs)
        attr_arr = (Arg * max(1, len(attrs)))(*attrs)
        out_arr = (Tensor * max(1, len(outputs)))(*outputs)
        call = Call(
            ctypes.sizeof(Call),
            in_arr,
            len(inputs),
            len(attrs),
            attr_arr,
            out_arr,
            len(outputs),
            0,
            c_void_p(stream or None),
            None,
            ctypes.pointer(self.host),
            None,
        )
        before = len(self.errors)
        status = fn(ctypes.byref(call))
        if status != 0:
            message = self.errors[-1] if len(self.errors) > before else "(no message)"
            raise KernelError(op, status, message)


def _first_tensor(inputs, outputs):
    for arg in inputs:
        if arg.kind == ARG_TENSOR:
            return arg._dtype_name, arg._device_type
        if arg.kind == ARG_TENSOR_LIST and arg.value.list.count > 0:
            return arg._dtype_name, arg._device_type
    return None


class View:
    """A Tensor view of a torch tensor that owns its shape and strides."""

    def __init__(self, t):
        self.t = t
        self.dtype_name = str(t.dtype).replace("torch.", "")
        code, bits = DTYPE_CODES[self.dtype_name]
        n = t.dim()
        self._shape = (c_int64 * max(1, n))(*t.shape)
        self._strides = (c_int64 * max(1, n))(*t.stride())
        self.device_type = DEVICE_CUDA if t.is_cuda else DEVICE_CPU
        self.struct = Tensor(
            c_void_p(t.data_ptr() or None),
            Device(self.device_type, t.device.index or 0),
            n,
            Dtype(code, bits, 1),
            self._shape,
            self._strides,
            0,
            None,
            0,
            TENSOR_CONTIGUOUS if t.is_contiguous() else 0,
        )


def tensor_arg(view):
    arg = Arg(ARG_TENSOR, 0)
    arg.value.tensor = ctypes.pointer(view.struct)
    arg._dtype_name, arg._device_type = view.dtype_name, view.device_type
    arg._keep = view
    return arg


def list_arg(views):
    items = (Tensor * len(views))(*[v.struct for v in views])
    arg = Arg(ARG_TENSOR_LIST, 0)
    arg.value.list = TensorList(items, len(views))
    arg._dtype_name, arg._device_type = views[0].dtype_name, views[0].device_type
    arg._keep = (items, views)
    return arg


def int_arg(value):
    arg = Arg(ARG_INT, 0)
    arg.value.i = int(value)
    return arg


def float_arg(value):
    arg = Arg(ARG_FLOAT, 0)
    arg.value.f = float(value)
    return arg


def none_arg():
    return Arg(ARG_NONE, 0)
