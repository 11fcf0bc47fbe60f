"""A ctypes mirror of abi/torchferry.h's plugin entry, enough to load a
plugin, negotiate and run its init without the torchferry package: the
"plugin load" step of bench/gpu_check.sh, which still runs where the package
failed to build. It never calls a kernel: checking and shaping a call is the
host's preparation engine (core/prepare/prepare.cc), which check_ops.py drives
through the package.
"""

import ctypes
from ctypes import CFUNCTYPE, POINTER, Structure, c_char_p, c_int32, c_size_t, c_uint8, c_uint16, c_uint32, c_void_p

ABI_MAJOR, ABI_MINOR = 1, 0


class Dtype(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


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
            self.kernels[(k.op.decode(), k.device_type, k.dtype.code, k.dtype.bits)] = k.fn
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
