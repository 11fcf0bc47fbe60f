"""The peers torchferry is measured against, each loaded once and either
usable or carrying the reason it is not. Nothing here raises: a peer that
cannot run on this machine becomes skipped rows, never missing ones."""

import glob
import os

import torch

from .env import distribution_version


class Peer:
    def __init__(self, name, version=None, value=None, reason=""):
        self.name = name
        self.version = version
        self.value = value  # what the sections use: a module, a function, ...
        self.reason = reason  # why it is unavailable, when value is None

    @property
    def ok(self):
        return self.value is not None

    def as_dict(self):
        return {"version": self.version, "available": self.ok, "reason": self.reason}


def _why(error):
    return f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"


def _nanobind():
    version = distribution_version("nanobind")
    try:
        from . import _nb_peer
    except ImportError as e:
        if version is None:
            reason = "nanobind is not installed (pip install nanobind), so torchferry.bench._nb_peer was not built"
        else:
            reason = (
                f"torchferry.bench._nb_peer does not import ({_why(e)}); it is built only when "
                "nanobind imports in the Python that builds torchferry: rebuild after installing it"
            )
        return Peer("nanobind", version, reason=reason)
    return Peer("nanobind", version, value=_nb_peer)


def _tvm_ffi():
    version = distribution_version("apache-tvm-ffi")
    try:
        import tvm_ffi
    except Exception as e:
        return Peer("apache-tvm-ffi", version, reason=f"tvm_ffi does not import: {_why(e)}")
    here = os.path.dirname(__file__)
    found = sorted(glob.glob(os.path.join(here, "tvm_peer*.so")))
    if not found:
        return Peer(
            "apache-tvm-ffi",
            version,
            reason="tvm_peer.so is not installed beside torchferry.bench; it is built only when "
            "tvm_ffi imports in the Python that builds torchferry: rebuild after installing it",
        )
    try:
        module = tvm_ffi.load_module(found[0])
        functions = {n: module[f"nop{n}"] for n in (1, 3, 8)}
    except Exception as e:
        return Peer("apache-tvm-ffi", version, reason=f"loading {found[0]} failed: {_why(e)}")
    return Peer("apache-tvm-ffi", version, value=functions)


def _cuda_core():
    version = distribution_version("cuda-core")
    if version is None:
        return Peer("cuda-core", None, reason="cuda-core is not installed (pip install cuda-core)")
    try:
        from cuda.core.utils import StridedMemoryView
    except Exception as e:
        hint = ""
        if "bindings" in str(e):
            hint = " (cuda-core needs cuda-bindings: pip install 'cuda-core[cu13]')"
        return Peer("cuda-core", version, reason=f"cuda.core does not import without a GPU here: {_why(e)}{hint}")
    return Peer("cuda-core", version, value=StridedMemoryView)


def _exchange_api(nanobind):
    """The DLPack C exchange API of torch.Tensor, called from the nanobind
    peer (C needs a C caller)."""
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        return Peer(
            "dlpack-exchange-api",
            torch.__version__,
            reason=f"torch {torch.__version__} has no torch.Tensor.__dlpack_c_exchange_api__ (torch >= 2.10)",
        )
    if not nanobind.ok:
        return Peer("dlpack-exchange-api", torch.__version__, reason=f"needs the nanobind peer: {nanobind.reason}")
    try:
        form = nanobind.value.exchange_form(torch.empty(1))
    except Exception as e:
        return Peer("dlpack-exchange-api", torch.__version__, reason=f"the exchange API failed: {_why(e)}")
    return Peer("dlpack-exchange-api", torch.__version__, value=form)


def _numpy():
    try:
        import numpy
    except Exception as e:
        return Peer("numpy", None, reason=f"numpy does not import: {_why(e)}")
    return Peer("numpy", numpy.__version__, value=numpy)


def load():
    nanobind = _nanobind()
    return {
        "numpy": _numpy(),
        "nanobind": nanobind,
        "apache-tvm-ffi": _tvm_ffi(),
        "cuda-core": _cuda_core(),
        "dlpack-exchange-api": _exchange_api(nanobind),
    }
