"""The bridge: exact views on every path, path counters, forcing a path in
process and through TORCHFERRY_BRIDGE, and numpy arrays through DLPack."""

import json

import numpy as np
import pytest
import torch

import torchferry
from torchferry import bridge, ops
from conftest import LAYOUT_NAMES, PATHS, assert_matches, conversions, layout, make, run_python

CARRIED = {
    torch.float32: (2, 32),
    torch.float64: (2, 64),
    torch.float16: (2, 16),
    torch.bfloat16: (4, 16),
    torch.int8: (0, 8),
    torch.int16: (0, 16),
    torch.int32: (0, 32),
    torch.int64: (0, 64),
    torch.uint8: (1, 8),
    torch.bool: (6, 8),
}  # torch dtype -> DLPack (code, bits)
SHIM = bridge.shim_available()
TORCH_RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def expected_view(t, path):
    code, bits = CARRIED[t.dtype]
    return {
        "data": t.data_ptr(),
        "device": (1, 0),
        "ndim": t.dim(),
        "dtype": {"code": code, "bits": bits, "lanes": 1},
        "dtype_name": str(t.dtype).replace("torch.", ""),
        "shape": tuple(t.shape),
        "strides": tuple(t.stride()),
        "byte_offset": 0,
        # The exchange path has no at::Tensor to hand a plugin.
        "source_kind": "none" if path == "exchange" else "aten",
        "contiguous": t.is_contiguous(),
        "path": path,
    }


@pytest.mark.parametrize("dtype", list(CARRIED), ids=[str(d)[6:] for d in CARRIED])
@pytest.mark.parametrize("layout_name", LAYOUT_NAMES)
def test_view_is_exactly_what_torch_reports(path, layout_name, dtype):
    t = layout(layout_name, dtype)
    with conversions(path, 1):
        v = bridge.view(t)
    assert v == expected_view(t, path)


def test_view_of_more_layouts(path):
    base = make((4, 5, 6))
    for t in [
        base[1],
        base[:, 2],
        base[..., 3],
        base[1:3, ::2, 1::3],
        base.transpose(0, 2)[1:],
        base.unsqueeze(1).expand(4, 7, 5, 6),
        base.flatten()[7:],
        base.view(torch.int32),
        base.view(torch.uint8)[:, :, 5:17],
        torch.empty_strided((3, 4), (1, 3)),
        torch.empty_strided((2, 3), (0, 0)),
        torch.zeros(2, 3).as_strided((2, 2), (1, 2), 1),
        torch.empty(0),
        torch.empty(1, 0, 3).transpose(0, 2),
        torch.empty([1] * 10),
        torch.tensor(3.5),
        torch.tensor(7)[None, None],
    ]:
        with conversions(path, 1):
            v = bridge.view(t)
        assert v == expected_view(t, path), t.shape


@pytest.mark.skipif(not SHIM, reason="this torch has no torch_tensor_from_pyobject")
@pytest.mark.parametrize("layout_name", LAYOUT_NAMES)
def test_shim_and_offset_views_and_results_are_identical(layout_name):
    before = bridge.path()
    try:
        t = layout(layout_name, torch.float32)
        views, results = {}, {}
        for p in ("shim", "offset"):
            bridge.set_path(p)
            with conversions(p, 1):
                views[p] = bridge.view(t).as_dict()
            with torch.no_grad(), conversions(p, 2):
                results[p] = ops.silu(t)
        assert views["shim"].pop("path") == "shim"
        assert views["offset"].pop("path") == "offset"
        assert views["shim"] == views["offset"]
        assert torch.equal(results["shim"], results["offset"])
    finally:
        bridge.set_path(before)


def test_counters_track_the_path_and_reset(path):
    x = make((8,))
    bridge.reset_path_counts()
    assert bridge.path_counts() == {
        "shim": 0,
        "offset": 0,
        "dlpack": 0,
        "exchange": 0,
        "shim_handles_created": 0,
        "shim_handles_deleted": 0,
    }
    for _ in range(5):
        ops.add(x, x)  # input, other, out
    counts = bridge.path_counts()
    assert counts[path] == 15
    assert all(counts[p] == 0 for p in ("shim", "offset", "exchange", "dlpack") if p != path)
    created = 15 if path == "shim" else 0
    assert counts["shim_handles_created"] == counts["shim_handles_deleted"] == created
    bridge.reset_path_counts()
    assert set(bridge.path_counts().values()) == {0}


def test_failed_calls_release_every_shim_handle(path):
    x = make((4,))
    before = bridge.path_counts()
    for bad in [lambda: ops.add(x, make((5,))), lambda: ops.abs(x, out=make((3,))), lambda: ops.exp(x, out=x[:2])]:
        with pytest.raises(ValueError):
            bad()
    after = bridge.path_counts()
    made = after["shim_handles_created"] - before["shim_handles_created"]
    assert made == after["shim_handles_deleted"] - before["shim_handles_deleted"]
    assert made == (after["shim"] - before["shim"])
    assert after[path] > before[path]


def test_path_reports_and_auto_restores():
    before = bridge.path()
    try:
        bridge.set_path("auto")
        assert bridge.path() == ("shim" if SHIM else "offset")
        bridge.set_path("offset")
        assert bridge.path() == "offset"
    finally:
        bridge.set_path(before)


def test_info_describes_the_bridge():
    info = bridge.info()
    assert info["path"] == bridge.path()
    assert info["shim_available"] is SHIM
    cal = info["offset_calibration"]
    assert cal["ok"] is True
    # torch >= 2.10 holds the at::Tensor right after PyObject_HEAD.
    assert cal["tensor_offset"] == (16 if TORCH_RELEASE >= (2, 10) else 24)
    assert "libtorch_cpu" in info["libtorch"]
    assert info["reason"]


@pytest.mark.skipif(SHIM, reason="this torch has the shim")
def test_forcing_the_shim_without_it_names_the_torch_version():
    before = bridge.path()
    with pytest.raises(RuntimeError, match="shim") as e:
        bridge.set_path("shim")
    assert torch.__version__ in str(e.value)
    assert "torch_tensor_from_pyobject" in str(e.value)
    assert bridge.path() == before


@pytest.mark.skipif(not SHIM, reason="this torch has no shim")
def test_forcing_the_shim_where_it_exists(path):
    bridge.set_path("shim")
    assert bridge.path() == "shim"
    with conversions("shim", 2):
        ops.abs(make((3,)))


@pytest.mark.parametrize("name", ["bogus", "", "SHIM", "offset "])
def test_unknown_path_name_is_a_value_error(name):
    before = bridge.path()
    with pytest.raises(ValueError, match="unknown bridge path"):
        bridge.set_path(name)
    assert bridge.path() == before


# --- TORCHFERRY_BRIDGE in a fresh process ------------------------------------------

PROBE = """
import json, torch, torchferry
import torchferry
from torchferry import bridge, ops
x = torch.randn(5)
y = ops.exp(x)
assert torch.allclose(y, torch.exp(x))
print(json.dumps({"path": bridge.path(), "counts": bridge.path_counts(), "reason": bridge.info()["reason"]}))
"""


@pytest.mark.subprocess
def test_env_forces_offset():
    r = run_python(PROBE, TORCHFERRY_BRIDGE="offset")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout.strip().splitlines()[-1])
    assert data["path"] == "offset"
    assert "TORCHFERRY_BRIDGE=offset" in data["reason"]
    assert data["counts"]["offset"] == 2 and data["counts"]["shim"] == 0
    assert data["counts"]["shim_handles_created"] == 0


@pytest.mark.subprocess
def test_env_auto_and_unset_pick_the_best_path():
    for value in ("auto", None):
        r = run_python(PROBE, TORCHFERRY_BRIDGE=value)
        assert r.returncode == 0, r.stderr
        data = json.loads(r.stdout.strip().splitlines()[-1])
        want = "shim" if SHIM else "offset"
        assert data["path"] == want
        assert data["counts"][want] == 2


@pytest.mark.subprocess
def test_env_shim():
    r = run_python(PROBE, TORCHFERRY_BRIDGE="shim")
    if SHIM:
        assert r.returncode == 0, r.stderr
        data = json.loads(r.stdout.strip().splitlines()[-1])
        assert data["path"] == "shim"
        assert data["counts"]["shim_handles_created"] == data["counts"]["shim_handles_deleted"] == 2
    else:
        assert r.returncode != 0
        assert "ValueError" in r.stderr and "bridge path 'shim' is unavailable" in r.stderr
        assert "TORCHFERRY_BRIDGE='shim' cannot be honoured" in r.stderr
        assert torch.__version__ in r.stderr
        assert "Segmentation fault" not in r.stderr


@pytest.mark.subprocess
def test_env_unknown_path_fails_the_import_clearly():
    r = run_python(PROBE, TORCHFERRY_BRIDGE="fastest")
    assert r.returncode != 0
    assert "ValueError" in r.stderr and "unknown bridge path 'fastest'" in r.stderr


# --- numpy through DLPack ----------------------------------------------------------

NUMPY_DTYPES = {
    np.float32: torch.float32,
    np.float64: torch.float64,
    np.float16: torch.float16,
    np.int8: torch.int8,
    np.int16: torch.int16,
    np.int32: torch.int32,
    np.int64: torch.int64,
    np.uint8: torch.uint8,
    np.bool_: torch.bool,
}


def numpy_layouts(dtype):
    base = (np.arange(120) % 7 - 3).astype(dtype)
    return {
        "contiguous": base.reshape(10, 12),
        "transposed": base.reshape(10, 12).T,
        "offset": base.reshape(10, 12)[2:7, 3:],
        "reversed": base[::-1],
        "reversed_2d": base.reshape(10, 12)[::-2, ::-3],
        # Stride 0 through as_strided, which stays writable: numpy < 2
        # refuses to export the read-only views broadcast_to makes.
        "broadcast": np.lib.stride_tricks.as_strided(base[:12], (5, 12), (0, base.itemsize)),
        "zero_dim": np.array(base[5]),
        "empty": base[:0].reshape(0, 4),
    }


@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES), ids=[np.dtype(d).name for d in NUMPY_DTYPES])
@pytest.mark.parametrize("name", list(numpy_layouts(np.float32)))
def test_numpy_view_is_counted_on_dlpack(path, dtype, name):
    a = numpy_layouts(dtype)[name]
    with conversions(path, 0, dlpack=1):
        v = bridge.view(a)
    item = a.itemsize
    code, bits = CARRIED[NUMPY_DTYPES[dtype]]
    assert v["path"] == "dlpack" and v["source_kind"] == "none"
    assert v["data"] == a.__array_interface__["data"][0]
    assert v["shape"] == a.shape
    assert v["strides"] == tuple(s // item for s in a.strides)
    assert v["dtype"] == {"code": code, "bits": bits, "lanes": 1}
    assert v["device"] == (1, 0) and v["byte_offset"] == 0


@pytest.mark.parametrize("name", [n for n in numpy_layouts(np.float32) if n != "empty"])
def test_numpy_operands_compute_like_torch(path, name):
    # (numpy exports empty arrays with stride 0: see test_layouts.py)
    a = numpy_layouts(np.float32)[name]
    out = np.full(a.shape, 99, np.float32)
    with conversions(path, 0, dlpack=2):
        assert ops.neg(a, out=out) is out
    np.testing.assert_array_equal(out, -a)
    # numpy in, torch out: one conversion on each side
    t_out = torch.empty(a.shape)
    with conversions(path, 1, dlpack=1):
        assert ops.exp(a, out=t_out) is t_out
    assert_matches(t_out, torch.exp(torch.from_numpy(a.copy())))


def test_numpy_and_torch_mixed_in_one_call(path):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = torch.ones(4)
    with conversions(path, 2, dlpack=1):
        out = ops.add(t, a, 2.0)  # out is allocated like the torch input
    assert_matches(out, torch.ones(4) + 2 * torch.from_numpy(a))
    with conversions(path, 0, dlpack=3):
        o = np.empty((3, 3), np.float32)
        ops.matmul(a[:, :3], np.eye(3, dtype=np.float32), out=o)
    np.testing.assert_allclose(o, a[:, :3])


def test_tensor_view_fields_are_attributes_keys_and_a_dict(path):
    t = torch.arange(24.0).view(2, 3, 4)[:, 1:, ::2]
    with conversions(path, 1):
        v = bridge.view(t)
    assert isinstance(v, torchferry._C.TensorView)
    assert v.shape == v["shape"] == tuple(t.shape)
    assert v.strides == v["strides"] == t.stride()
    assert v.data == t.data_ptr() and v.ndim == 3 and v.dtype_name == "float32"
    assert v.as_dict() == v and v == expected_view(t, path)
    assert v != dict(expected_view(t, path), ndim=4)
    with pytest.raises(KeyError):
        v["no_such_field"]
    assert "TensorView(" in repr(v)


def test_view_of_more_dims_than_fit_inline(path):
    t = torch.randn(*([2] * 12)).transpose(0, 11)
    v = bridge.view(t)
    assert v.shape == tuple(t.shape) and v.strides == t.stride()


def test_negative_bit_check_is_calibrated():
    # A miss would still be correct (Tensor.is_neg per tensor) but slow; on
    # the torches tested here the key set must be found.
    assert "DispatchKeySet at byte" in bridge.info()["neg_bit_check"]


def test_version_counter_and_storage_fields_are_calibrated():
    # Where these fail torchferry stays correct but slower (Python's
    # increment_version per write, two AOTI getters per tensor): on the
    # torches the project tests, both must be found.
    info = bridge.info()
    assert "version counter at byte" in info["version_counter"], info["version_counter"]
    assert "StorageImpl* at byte" in info["storage_check"], info["storage_check"]
    assert "autograd_meta_ at byte" in info["grad_check"], info["grad_check"]
    assert "sizes and strides at byte" in info["tensor_meta"], info["tensor_meta"]


# Each tensor of a zoo read twice, once with dtype, sizes and strides taken
# from the TensorImpl (the MetaProbe) and once through the AOTI getters: the
# views, and the errors of those refused, must be the same. Tensors the
# probe leaves to the getters (negated, conjugated, sparse, nested, meta,
# inference) are in the zoo too.
META_ZOO = r"""
import json, torch, torchferry
from torchferry import bridge
base = torch.randn(4, 5, 6)
with torch.inference_mode():
    inference = torch.randn(3, 2)
zoo = {
    "contiguous": base, "row": base[1], "sliced": base[1:3, ::2, 1::3],
    "transposed": base.transpose(0, 2)[1:], "expanded": base.unsqueeze(1).expand(4, 7, 5, 6),
    "offset": base.flatten()[7:], "as_int32": base.view(torch.int32), "scalar": torch.tensor(3.5),
    "empty": torch.empty(1, 0, 3).transpose(0, 2), "five_dims": torch.randn(2, 1, 3, 1, 2),
    "six_dims": torch.randn(2, 1, 3, 1, 2, 2)[:, :, 1:], "twelve_dims": torch.randn(*[2] * 12).transpose(0, 11),
    "requires_grad": torch.randn(3, 4, requires_grad=True), "parameter": torch.nn.Parameter(torch.randn(2, 3)),
    "inference": inference, "bool": torch.ones(3, 2, dtype=torch.bool), "bfloat16": torch.randn(2, 3).bfloat16(),
    "uint16": torch.ones(4, dtype=torch.uint16), "negated": torch._neg_view(torch.randn(3)),
    "conjugated": torch.randn(3, dtype=torch.complex64).conj(), "complex": torch.randn(3, dtype=torch.complex64),
    "sparse": torch.randn(3, 3).to_sparse(), "meta": torch.empty(3, device="meta"),
    "nested": torch.nested.nested_tensor([torch.randn(2), torch.randn(3)]),
}
out = {"meta_read": bridge.info()["tensor_meta"]}
for name, t in zoo.items():
    try:
        v = bridge.view(t).as_dict()
        v["data"] = v["data"] == t.data_ptr()  # addresses differ between the runs
        out[name] = v
    except Exception as e:
        out[name] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


@pytest.mark.subprocess
def test_tensor_meta_read_from_the_impl_matches_the_getters():
    runs = {}
    for mode in (None, "getters"):
        r = run_python(META_ZOO, TORCHFERRY_TENSOR_META=mode)
        assert r.returncode == 0, r.stderr
        runs[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    assert "sizes and strides at byte" in runs[None].pop("meta_read")
    assert "forced by TORCHFERRY_TENSOR_META=getters" in runs["getters"].pop("meta_read")
    assert runs[None] == runs["getters"]
    assert all(v["data"] for v in runs[None].values() if isinstance(v, dict))
    assert isinstance(runs[None]["contiguous"], dict) and isinstance(runs[None]["twelve_dims"], dict)
    for refused in ("negated", "sparse", "meta", "nested"):
        assert isinstance(runs[None][refused], str), refused


@pytest.mark.subprocess
def test_tensor_meta_auto_is_the_default_and_an_unknown_value_fails_the_import():
    r = run_python(META_ZOO, TORCHFERRY_TENSOR_META="auto")
    assert r.returncode == 0, r.stderr
    assert "sizes and strides at byte" in json.loads(r.stdout.strip().splitlines()[-1])["meta_read"]
    r = run_python(PROBE, TORCHFERRY_TENSOR_META="getter")
    assert r.returncode != 0
    assert "ValueError" in r.stderr and "unknown TORCHFERRY_TENSOR_META 'getter'" in r.stderr
    assert "Segmentation fault" not in r.stderr


# The exchange path has no at::Tensor: it reads a tensor's negative bit,
# storage, version counter and autograd metadata from the TensorImpl that
# TensorBase._cdata's getter names. Where it cannot (a torch without that
# getter; here, forced) it calls torch's Tensor.is_neg, untyped_storage(),
# requires_grad and the version bump instead. Both ways must give the same
# views, the same refusals and the same writes.
EXCHANGE_CHECKS = r"""
import json, torch, torchferry
from torchferry import _C, bridge, ops
_C._set_exchange_reads_impl(READS_IMPL)
out = {}
x, y = torch.randn(64), torch.randn(64)
o = torch.empty(64)
before = o._version
ops.add(x, y, out=o)
out["add"] = torch.equal(o, x + y)
out["version_bumped"] = o._version == before + 1
shrunk = torch.ones(16)[4:]
shrunk.untyped_storage().resize_(8)
leaf = torch.randn(64, requires_grad=True)
for name, call in {
    "negated": lambda: ops.noop(torch._neg_view(torch.randn(3))),
    "shrunk": lambda: ops.noop(shrunk),
    "grad_out": lambda: ops.abs(x, out=leaf),
}.items():
    try:
        call()
        out[name] = "accepted"
    except Exception as e:
        out[name] = f"{type(e).__name__}: {e}"
out["counts"] = {k: v for k, v in bridge.path_counts().items() if k in ("exchange", "offset", "shim")}
print(json.dumps(out))
"""


@pytest.mark.subprocess
@pytest.mark.skipif(not bridge.info()["exchange"]["available"], reason="this torch has no DLPack exchange API")
def test_exchange_path_without_the_tensor_impl_checks_the_same():
    zoo_runs, check_runs = {}, {}
    for reads_impl in (True, False):
        setup = f"from torchferry import _C\n_C._set_exchange_reads_impl({reads_impl})\n"
        r = run_python(setup + META_ZOO, TORCHFERRY_BRIDGE="exchange")
        assert r.returncode == 0, r.stderr
        zoo_runs[reads_impl] = json.loads(r.stdout.strip().splitlines()[-1])
        r = run_python(EXCHANGE_CHECKS.replace("READS_IMPL", str(reads_impl)), TORCHFERRY_BRIDGE="exchange")
        assert r.returncode == 0, r.stderr
        check_runs[reads_impl] = json.loads(r.stdout.strip().splitlines()[-1])
    assert zoo_runs[True] == zoo_runs[False]
    assert isinstance(zoo_runs[True]["sliced"], dict) and zoo_runs[True]["sliced"]["path"] == "exchange"
    assert "negative bit" in zoo_runs[True]["negated"]
    assert check_runs[True] == check_runs[False]
    checks = check_runs[False]
    assert checks["add"] and checks["version_bumped"], checks
    assert "negative bit" in checks["negated"], checks
    assert "reaches byte" in checks["shrunk"], checks
    assert "requires grad" in checks["grad_out"], checks
    assert checks["counts"]["exchange"] > 0 and checks["counts"]["offset"] == checks["counts"]["shim"] == 0, checks
