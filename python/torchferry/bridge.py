"""The tensor bridge: which path turns a torch.Tensor into a plugin's view.

Paths: "shim" (torch_tensor_from_pyobject, torch >= 2.14), "offset" (the
at::Tensor read inside the Python object at a calibrated offset), "exchange"
(torch's DLPack C exchange API, non-owning, torch >= 2.10: taken where the
other two are not there, or when forced), and "dlpack" (any non-torch object
with __dlpack__, counted on its own).
"""

from . import _C, _require_started

_require_started()  # a bad TORCHFERRY_BRIDGE or TORCHFERRY_TENSOR_META


def path():
    """The path torch tensors take now: 'shim', 'offset' or 'exchange'."""
    return _C._bridge_path()


def set_path(name):
    """Forces 'shim', 'offset', 'exchange' or 'auto' (for A/B runs). Forcing
    a path this torch lacks raises RuntimeError. Also settable with
    TORCHFERRY_BRIDGE."""
    _C._set_bridge_path(name)


def path_costs(iterations=20000, rounds=3):
    """ns per tensor of each path this torch offers, measured now: a float32
    CPU tensor of shape [8, 512] read into a plugin's view and released in a
    C++ loop with the GIL held (`_C._time_bridge`), the best of `rounds` runs
    of `iterations`; and torch's own shim pair (torch_tensor_from_pyobject +
    aoti_torch_delete_tensor_object) alone, where torch has it. The reads
    count in path_counts() like any other. The benchmark's section 1 is the
    careful measurement; this is the one `info --verbose` prints."""
    import torch

    tensor = torch.randn(8, 512)
    offered = {"offset": info()["offset_calibration"]["ok"], "shim": shim_available(),
               "exchange": info()["exchange"]["available"]}
    before = path()
    costs = {}
    try:
        for name in ("offset", "shim", "exchange"):
            if offered[name]:
                set_path(name)
                costs[name] = min(_C._time_bridge(tensor, iterations) for _ in range(rounds))
    finally:
        set_path(before)
    if shim_available():
        costs["torch's shim pair"] = min(_C._time_shim_pair(tensor, iterations) for _ in range(rounds))
    return costs


def path_counts():
    """Conversions per path since start (or the last reset), and shim handles
    created and deleted (equal whenever no call is in flight)."""
    return _C._bridge_counts()


def reset_path_counts():
    _C._reset_bridge_counts()


def out_alloc():
    """How outputs the caller leaves out are allocated now: 'direct'
    (aoti_torch_empty_strided, then wrapped as a torch.Tensor: CPU only) or
    'torch.empty'. Why: info()["out_alloc"]["reason"]."""
    return _C._bridge_info()["out_alloc"]["route"]


def set_out_alloc(name):
    """Forces 'direct', 'torch.empty' or 'auto' (for A/B runs). The direct
    route allocates without the dispatcher, so torch function and dispatch
    modes do not see the allocation, nor the deterministic-mode NaN fill;
    'torch.empty' restores both. Forcing 'direct' where this torch lacks it
    raises RuntimeError."""
    _C._set_out_alloc(name)


def shim_available():
    """Whether the running torch exports torch_tensor_from_pyobject."""
    return _C._shim_available()


# view(tensor) -> TensorView: exactly the metadata a plugin would see for
# `tensor` (attributes and keys: data, device, ndim, dtype, dtype_name, shape,
# strides, byte_offset, source_kind, contiguous, path; as_dict() for all).
# The native function itself, so a call costs no Python frame.
view = _C._view


def _layout_name(cal):
    """The THPVariable layout offset calibration confirmed, in words."""
    if not cal["ok"]:
        return None
    if cal["maybe_owned_flag_offset"] >= 0:
        return "c10::MaybeOwned<at::Tensor> cdata (torch 2.3 - 2.9)"
    return "at::Tensor cdata (torch >= 2.10)"


def info():
    """The chosen path, why, and what offset calibration found (its
    "layout": the THPVariable layout it confirmed, None where it failed)."""
    data = _C._bridge_info()
    data["offset_calibration"]["layout"] = _layout_name(data["offset_calibration"])
    return data
