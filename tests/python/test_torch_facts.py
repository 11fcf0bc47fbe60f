"""The facts about torch's internals that the bridge builds on, checked on the
torch this suite runs against, each by a route of its own rather than by
reading back what the bridge says: the path it takes and why, where the
at::Tensor sits in the Python object (the layout calibration confirmed), the
negative-bit word of the TensorImpl, and what an import below the floor is
told. `./dev test` runs this file on every torch it tests.
"""

import ctypes
import importlib
import os
import re

import pytest
import torch

import torchferry
from torchferry import bridge
from conftest import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TORCH_LIB = os.path.join(os.path.dirname(torch.__file__), "lib")
LIBTORCH_CPU = os.path.join(TORCH_LIB, "libtorch_cpu.so")
RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
# sizeof(PyObject): 16 on a default 64-bit CPython, 32 on a free-threaded one.
HEAD = object.__basicsize__
WORD = ctypes.sizeof(ctypes.c_void_p)


def exports(library, symbol):
    return hasattr(ctypes.CDLL(library), symbol)


def word_at(address):
    return ctypes.c_uint64.from_address(address).value


def test_the_path_follows_the_symbol_not_the_version():
    has_shim = exports(LIBTORCH_CPU, "torch_tensor_from_pyobject")
    assert bridge.shim_available() is has_shim
    if os.environ.get("TORCHFERRY_BRIDGE", "auto") not in ("", "auto"):
        pytest.skip("TORCHFERRY_BRIDGE forces the path")
    info = bridge.info()
    if has_shim:
        assert info["path"] == "shim"
        assert "torch_tensor_from_pyobject" in info["reason"]
    else:
        assert info["path"] == "offset"
        assert "torch_tensor_from_pyobject is absent" in info["reason"]
        assert info["offset_calibration"]["detail"] in info["reason"]


def test_calibration_found_the_layout_this_torch_has():
    cal = bridge.info()["offset_calibration"]
    assert cal["ok"] is True, cal["detail"]
    if RELEASE >= (2, 10):
        # at::Tensor cdata right after PyObject_HEAD.
        assert (cal["tensor_offset"], cal["maybe_owned_flag_offset"]) == (HEAD, -1)
        assert cal["layout"] == "at::Tensor cdata (torch >= 2.10)"
    else:
        # c10::MaybeOwned<at::Tensor>: its borrowed flag, then the tensor.
        assert (cal["tensor_offset"], cal["maybe_owned_flag_offset"]) == (HEAD + WORD, HEAD)
        assert cal["layout"] == "c10::MaybeOwned<at::Tensor> cdata (torch 2.3 - 2.9)"
    assert f"at byte {cal['tensor_offset']} of the Python object" in cal["detail"]


def test_the_calibrated_offset_and_no_other_holds_the_tensor_impl():
    """Read with ctypes, apart from the bridge: of the two candidate layouts,
    only the calibrated one holds tensor._cdata, for tensors of several kinds."""
    cal = bridge.info()["offset_calibration"]
    base = torch.arange(12.0)
    tensors = [torch.empty(3), base[2:].view(2, 5), torch.nn.Parameter(torch.ones(2)), torch.zeros((), dtype=torch.int8)]
    for t in tensors:
        found = [off for off in (HEAD, HEAD + WORD) if word_at(id(t) + off) == t._cdata]
        assert found == [cal["tensor_offset"]], (type(t), found)
        if cal["maybe_owned_flag_offset"] >= 0:
            # A tensor that Python owns holds its at::Tensor, not a borrow.
            assert ctypes.c_bool.from_address(id(t) + cal["maybe_owned_flag_offset"]).value is False


def test_the_negative_bit_word_is_the_dispatch_key_set():
    detail = bridge.info()["neg_bit_check"]
    m = re.match(r"DispatchKeySet at byte (\d+) of TensorImpl, negative bit (0x[0-9a-f]+)", detail)
    assert m, detail
    offset, mask = int(m.group(1)), int(m.group(2), 16)
    assert mask and mask & (mask - 1) == 0, "one bit"
    plain = torch.randn(5)
    negated = torch._neg_view(plain)
    inference = None
    with torch.inference_mode():
        inference = torch.randn(5)
    has_raw = hasattr(torch._C._dispatch_keys(plain), "raw_repr")  # torch >= 2.4
    for t in (plain, negated, inference, plain.to(torch.float16)):
        word = word_at(t._cdata + offset)
        if has_raw:
            assert word == torch._C._dispatch_keys(t).raw_repr(), t
        assert bool(word & mask) is t.is_neg()
    assert negated.is_neg() and not plain.is_neg()
    # Without raw_repr (torch 2.3), the key set's own relations: a dtype is
    # no key, a negated view adds one bit, an inference tensor has a subset.
    words = [word_at(t._cdata + offset) for t in (plain, negated, inference, plain.to(torch.float16))]
    assert words[3] == words[0] and words[1] == words[0] | mask
    assert words[2] != words[0] and words[2] & ~words[0] == 0


def test_info_names_the_calibrated_layout():
    from torchferry import info

    text = info.render(info.collect(), verbose=True)
    assert f"calibrated layout: {bridge.info()['offset_calibration']['layout']}" in text


def test_aten_plugin_is_built_for_this_torch():
    """./dev builds the ATen plugin for every torch it tests, in the C++
    standard that torch's headers need: it must be there and serve."""
    if not os.path.exists(os.path.join(torchferry.PLUGIN_DIR, "torchferry_aten.so")):
        pytest.skip("this build has no ATen plugin (-Daten=disabled)")
    aten = [p for p in torchferry.plugins.loaded() if p["name"] == "aten"]
    assert aten, torchferry.plugins.skipped()
    assert torch.__version__ in aten[0]["version"]


# --- the floor -------------------------------------------------------------------


def test_required_symbols_are_the_ones_the_core_resolves():
    # The table of the shim's symbols, one {name, member, kRequired|kOptional}
    # row each (a row may wrap after its name).
    text = open(os.path.join(ROOT, "core", "bridge", "libtorch_symbols.cc")).read()
    start = text.index("kCpuSymbols[] = {")
    table = text[start : text.index("};", start)]
    rows = re.findall(r'\{"(\w+)",.*?(kRequired|kOptional)\}', table, re.S)
    assert rows, "no rows found in kCpuSymbols"
    assert tuple(name for name, kind in rows if kind == "kRequired") == torchferry.REQUIRED_TORCH_SYMBOLS


def test_this_torch_exports_every_required_symbol():
    assert torchferry._missing_symbols(LIBTORCH_CPU) == []


def test_a_refusal_names_the_missing_symbols():
    # libc10.so exports none of the AOTI shim: a stand-in for a torch below
    # the floor, whose refusal must name what its library lacks.
    assert torchferry._missing_symbols(os.path.join(TORCH_LIB, "libc10.so")) == list(torchferry.REQUIRED_TORCH_SYMBOLS)
    fake = os.path.join(HERE, "no-such-torch", "libtorch_cpu.so")
    assert "has no " + fake in torchferry._refusal("2.8.0", HERE, fake)
    assert os.path.samefile(torchferry._loaded_libtorch_cpu(HERE), LIBTORCH_CPU)
    message = torchferry._refusal("2.2.0", os.path.dirname(torch.__file__))
    assert message.startswith("torchferry needs torch >= 2.3, found torch 2.2.0 at ")
    assert "below 2.3 is untested" in message


def test_an_old_torch_is_refused_with_what_it_lacks():
    """torch's version as a torch below the floor reports it: the refusal
    comes before the native module loads and names the missing symbol."""
    r = run_python(
        """
import ctypes, torch
torch.__version__ = "2.2.0"
real = ctypes.CDLL
class Lacking:
    def __init__(self, lib): self.lib = real(lib)
    def __getattr__(self, name):
        if name == "aoti_torch_get_storage_size": raise AttributeError(name)
        return getattr(self.lib, name)
ctypes.CDLL = Lacking
try:
    import torchferry
except ImportError as e:
    print("ImportError:", e)
"""
    )
    assert r.returncode == 0, r.stderr
    assert "ImportError: torchferry needs torch >= 2.3, found torch 2.2.0" in r.stdout
    assert "lacks aoti_torch_get_storage_size, which torchferry's bridge needs" in r.stdout


def test_compile_integration_is_on_from_its_floor_and_says_why_below_it():
    """torch >= 2.5 has every API torchferry.library needs: the ops are torch
    custom ops. Below (2.3, 2.4), the eager ops work, importing
    torchferry.library raises naming the missing API, and `info` says so."""
    if RELEASE >= torchferry.COMPILE_FLOOR:
        assert torchferry.COMPILE_UNAVAILABLE is None
        assert hasattr(torch.ops.torchferry, "add")
        return
    assert "torch.compile integration is off" in torchferry.COMPILE_UNAVAILABLE
    with pytest.raises(ImportError, match=r"torchferry.library needs torch\.(library|_dynamo)\."):
        importlib.import_module("torchferry.library")
    x = torch.arange(4.0)
    assert torch.equal(torchferry.ops.add(x, x), x + x)
    r = run_python("import warnings; warnings.simplefilter('error'); import torchferry; print('ok')")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
