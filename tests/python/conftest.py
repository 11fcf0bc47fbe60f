"""Shared helpers for the pytest suite, which runs against a real torch wheel.

Every op result is compared with torch's own; every test that bridges a torch
tensor says which bridge path it takes and proves it with path_counts().
"""

import contextlib
import os
import subprocess
import textwrap
import zlib

import pytest
import torch

import torchferry
from torchferry import bridge, check_cases, plugins

import children

HERE = os.path.dirname(os.path.abspath(__file__))

# The bridge paths a torch tensor can take under this torch: the calibrated
# offset always, the shim where libtorch exports torch_tensor_from_pyobject.
# Built unless -Daten=disabled (the sanitizer builds leave it out).
needs_aten = pytest.mark.skipif(
    not os.path.exists(os.path.join(torchferry.PLUGIN_DIR, "torchferry_aten.so")),
    reason="this build has no ATen plugin (-Daten=disabled)",
)

# The exchange path is what a torch of 2.10 - 2.13 falls back on where
# calibration fails: tested on such a torch (2.13.0), where no shim doubles
# the suite already; a shim torch benchmarks it (bench section 1) instead.
PATHS = (
    ["offset"]
    + (["shim"] if bridge.shim_available() else [])
    + (["exchange"] if bridge.info()["exchange"]["available"] and not bridge.shim_available() else [])
)

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


class MyT(torch.Tensor):
    """A plain tensor subclass: no __torch_dispatch__ of its own."""


def cpu_kernel_dtypes(op):
    """The dtypes the CPU plugin carries for `op`, as torch dtypes."""
    for p in plugins.loaded():
        if p["name"] == "cpu":
            return [getattr(torch, dt) for o, dev, dt in p["kernels"] if o == op and dev == "cpu"]
    return []


def dtype_id(dtype):
    return str(dtype).replace("torch.", "")


# --- tensors -------------------------------------------------------------------


def rms_norm_ref(x, normalized_shape, weight=None, eps=None):
    """torch.nn.functional.rms_norm, spelled out where torch lacks it (< 2.4)."""
    if hasattr(torch.nn.functional, "rms_norm"):
        return torch.nn.functional.rms_norm(x, normalized_shape, weight, eps)
    dims = tuple(range(-len(normalized_shape), 0))
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    out = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return out if weight is None else out * weight


UNSIGNED = {torch.uint8, torch.uint16, torch.uint32, torch.uint64}
# The signed dtype of each wide unsigned one's size, for comparing bits.
_AS_SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def same(a, b):
    """torch.equal, also where torch has no equal for the dtype (uint16 -
    uint64 before torch 2.4): same dtype, shape and bits."""
    signed = _AS_SIGNED.get(a.dtype)
    if signed is not None and b.dtype == a.dtype:
        return torch.equal(a.view(signed), b.view(signed))
    return torch.equal(a, b)


def make(shape, dtype=torch.float32, low=None, high=None, gen=None):
    """Random values that suit `dtype`: normal floats, small signed ints,
    non-negative unsigned ints, random bools."""
    shape = tuple(shape)
    if dtype.is_floating_point:
        t = torch.randn(shape, dtype=torch.float32, generator=gen)
        if low is not None:
            t = t.abs() * ((high or 1) - low) / 3 + low
        return t.to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    # dtype.is_signed raises for uint16 - uint64 before torch 2.4.
    lo = -50 if dtype not in UNSIGNED and dtype.is_signed else 0
    lo = lo if low is None else low
    hi = 50 if high is None else high
    return torch.randint(lo, hi, shape, dtype=torch.int64, generator=gen).to(dtype)


# Every layout the bridge must read exactly, as builders taking a dtype:
# strides, storage offsets, stride 0, channels_last, 0-dim, zero elements,
# views of views, an nn.Parameter, a plain subclass, and one large enough that
# the call releases the GIL.
LAYOUTS = {
    "contiguous": lambda dt: make((4, 6), dt),
    "transposed": lambda dt: make((6, 4), dt).t(),
    "offset": lambda dt: make((6, 8), dt)[1:5, 2:8],
    "step": lambda dt: make((8, 12), dt)[::2, ::2],
    "expanded_rows": lambda dt: make((1, 6), dt).expand(4, 6),
    "expanded_cols": lambda dt: make((4, 1), dt).expand(4, 6),
    "channels_last": lambda dt: make((2, 3, 4, 5), dt).to(memory_format=torch.channels_last),
    "permuted3d": lambda dt: make((2, 3, 4), dt).permute(2, 0, 1),
    "zero_dim": lambda dt: make((), dt),
    "zero_elements": lambda dt: make((0, 6), dt),
    "zero_elements_strided": lambda dt: make((4, 6), dt)[:, 3:3],
    "view_of_view": lambda dt: make((4, 12), dt).view(8, 6)[1:7].t().unsqueeze(0)[0][1:],
    "size1_odd_stride": lambda dt: torch.empty_strided((4, 1, 6), (6, 100, 1), dtype=dt).copy_(
        make((4, 1, 6), dt)
    ),
    "parameter": lambda dt: torch.nn.Parameter(make((4, 6), dt), requires_grad=dt.is_floating_point),
    "subclass": lambda dt: make((4, 6), dt).as_subclass(MyT),
    "large": lambda dt: make((70000,), dt),
}
LAYOUT_NAMES = list(LAYOUTS)


def layout(name, dtype=torch.float32):
    """A tensor of `dtype` in the named layout (see LAYOUTS). Parameters
    require grad, so call ops on them under torch.no_grad()."""
    return LAYOUTS[name](dtype)


# --- comparing with torch ------------------------------------------------------

# The tolerances are the conformance check's (torchferry.check_cases), so that
# the suite and `python -m torchferry check` hold a kernel to one bound. Its
# float32 atol (1e-5, torch's own default; 1e-4 where the op accumulates) is
# wider than an atol of 1e-6 would be for a result near zero: such a result is
# what is left of a cancelling sum, and carries the rounding of its terms'
# size, not of its own; the table's float32 rtol (1.3e-6, one rounding) is
# the tighter for every other value.


def assert_matches(actual, expected, reduce=False):
    """actual equals torch's `expected`: exactly for ints and bools, within
    check_cases' tolerance for floats: TOLERANCES, or REDUCING_TOLERANCES
    with `reduce` (softmax, rms_norm, matmul: ops that accumulate)."""
    assert isinstance(actual, torch.Tensor)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype.is_floating_point:
        rtol, atol = (check_cases.REDUCING_TOLERANCES if reduce else check_cases.TOLERANCES)[expected.dtype]
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        assert torch.equal(actual, expected), (actual, expected)


def plain(t):
    """`t` as a plain tensor, detached, for computing torch's reference."""
    if isinstance(t, torch.Tensor):
        return t.detach().as_subclass(torch.Tensor) if type(t) is not torch.Tensor else t.detach()
    return t


# --- bridge paths --------------------------------------------------------------


@pytest.fixture(autouse=True)
def _seeded(request):
    """Each test draws its random inputs from its own seed, the CRC of its id:
    the same inputs on every run, on every worker, whatever ran before it, so
    that a failure seen once is seen again."""
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(params=PATHS)
def path(request):
    """Forces the bridge path under test; puts the previous one back."""
    before = bridge.path()
    bridge.set_path(request.param)
    try:
        yield request.param
    finally:
        bridge.set_path(before)


def counts_delta(before, after):
    return {k: after[k] - before[k] for k in after}


@contextlib.contextmanager
def conversions(path, tensors, dlpack=0):
    """Asserts that the block bridged exactly `tensors` torch tensors on
    `path` (and `dlpack` objects through DLPack), nothing on the other path,
    and on the shim path released every handle it created."""
    before = bridge.path_counts()
    yield
    d = counts_delta(before, bridge.path_counts())
    expected = {
        "shim": tensors if path == "shim" else 0,
        "offset": tensors if path == "offset" else 0,
        "dlpack": dlpack,
        "exchange": tensors if path == "exchange" else 0,
        "shim_handles_created": tensors if path == "shim" else 0,
        "shim_handles_deleted": tensors if path == "shim" else 0,
    }
    assert d == expected, f"path counters moved by {d}, expected {expected}"


@contextlib.contextmanager
def no_handle_leak():
    """Whatever happens inside, every shim handle created is deleted."""
    before = bridge.path_counts()
    try:
        yield
    finally:
        d = counts_delta(before, bridge.path_counts())
        assert d["shim_handles_created"] == d["shim_handles_deleted"], d


# --- plugin files ---------------------------------------------------------------


def exported_symbols(path):
    """Every symbol the shared object at `path` defines in its dynamic symbol
    table (functions, data, weak and unique symbols alike): what another
    library loaded into the process could bind to or clash with."""
    nm = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, check=True)
    return sorted(line.split()[-1] for line in nm.stdout.splitlines() if line.strip())


# --- subprocesses --------------------------------------------------------------


def clean_env(**overrides):
    """This process's environment without any TORCHFERRY_* setting, plus
    `overrides` (a value of None removes the variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHFERRY_")}
    for k, v in overrides.items():
        if v is None:
            env.pop(k, None)
        elif k == "PYTHONPATH" and env.get(k):
            # Ahead of this process's own path, not instead of it: under the
            # sanitizers that path is the instrumented build, which the child
            # must import too.
            env[k] = str(v) + os.pathsep + env[k]
        else:
            env[k] = str(v)
    return env


def run_python(code, timeout=180, **env):
    """Runs `code` in a fresh interpreter with a clean TORCHFERRY_* environment
    plus `env`; returns the CompletedProcess (text, both streams)."""
    return run_child(["-c", textwrap.dedent(code)], clean_env(PYTHONPATH=HERE, **env), timeout=timeout, text=True)


def run_child(args, env, cwd=HERE, timeout=180, text=False):
    """subprocess.run([sys.executable, *args], env=env, cwd=cwd, timeout=timeout,
    capture_output=True, text=text), forked from an interpreter that has
    imported torch where only TORCHFERRY_* variables differ from the suite's
    clean environment (children.py)."""
    return children.run_child(args, env, cwd, timeout, text, zygote_env=clean_env(PYTHONPATH=HERE))


# --- hostile-input tally -------------------------------------------------------

HOSTILE_TALLY = {"tried": 0, "clean": 0}


def pytest_configure(config):
    config.addinivalue_line("markers", "subprocess: runs a fresh Python interpreter")
    config.addinivalue_line("markers", "big_memory: allocates more than 1 GiB (rows past 2**28 elements)")


def pytest_terminal_summary(terminalreporter):
    t = HOSTILE_TALLY
    if t["tried"]:
        terminalreporter.write_line(
            f"hostile inputs: {t['tried']} tried, {t['clean']} rejected cleanly "
            f"(torch {torch.__version__}, bridge paths {', '.join(PATHS)})"
        )
