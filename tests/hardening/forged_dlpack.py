"""DLPack producers that say whatever a test wants: a __dlpack__ whose capsule
holds a DLManagedTensor (or the versioned one) built with ctypes, so that the
bridge can be fed metadata no well-behaved library would export.

The producer's own memory is real (its buffer, shape and strides arrays hold
what it claims unless a test says otherwise); only the claims are hostile.
"""

import ctypes


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


FLAG_READ_ONLY = 1

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Forged:
    """A producer of one DLPack tensor.

    ndim, shape, strides: what the tensor claims (strides=None exports NULL).
    elements: float32 elements really allocated behind `data`.
    code/bits/lanes, device: the dtype and device it claims.
    versioned: answer max_version=(1, 0) with a versioned capsule.
    read_only: the versioned read-only flag.
    null_data: claim a NULL data pointer.
    python_deleter: a deleter written in Python (counts its calls in
    .deleted), as any producer written in Python or Cython has in effect.
    capsule_name: the name to give the capsule, when not the standard one.
    version: the (major, minor) a versioned capsule claims.
    """

    def __init__(self, shape=(4,), strides="compact", ndim=None, elements=16, code=2, bits=32,
                 lanes=1, device=1, versioned=False, read_only=False, null_data=False,
                 python_deleter=False, capsule_name=None, byte_offset=0,
                 version=(1, 0)):
        shape = list(shape)
        if strides == "compact":
            strides, step = [], 1
            for size in reversed(shape):
                strides.insert(0, step)
                step *= max(size, 1)
        self.buffer = (ctypes.c_float * max(elements, 1))()
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
        self.deleted = 0
        self.versioned = versioned
        self.capsule_name = capsule_name

        t = DLTensor()
        t.data = None if null_data else ctypes.addressof(self.buffer)
        t.device = DLDevice(device, 0)
        t.ndim = len(shape) if ndim is None else ndim
        t.dtype = DLDataType(code, bits, lanes)
        t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = (ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
                     if self.strides is not None else None)
        t.byte_offset = byte_offset

        if python_deleter:
            def deleter(_):
                self.deleted += 1
            self._deleter = DELETER(deleter)
        else:
            self._deleter = DELETER()  # NULL: nothing to free
        self.legacy = DLManagedTensor(t, None, self._deleter)
        self.modern = DLManagedTensorVersioned(DLPackVersion(*version), None, self._deleter,
                                               FLAG_READ_ONLY if read_only else 0, t)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if self.versioned and max_version is not None:
            name = self.capsule_name or b"dltensor_versioned"
            return _capsule_new(ctypes.addressof(self.modern), name, None)
        name = self.capsule_name or b"dltensor"
        return _capsule_new(ctypes.addressof(self.legacy), name, None)

    def __dlpack_device__(self):
        return (self.legacy.dl_tensor.device.device_type, 0)
