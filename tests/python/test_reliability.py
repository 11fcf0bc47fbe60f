"""Inputs that once crashed torchferry, hung it or made it compute a wrong
answer without a word. Each must end as torch's answer or a Python exception
that says what was wrong. The ones that could kill the process run in a
fresh interpreter of their own, on every bridge path."""

import gc
import os
import sys

import numpy as np
import pytest
import torch

from torchferry import ops, plugins
from conftest import PATHS, run_python

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hardening"))
from forged_dlpack import Forged  # noqa: E402

TORCH_RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])

N = 1 << 22  # large enough that freed memory goes back to the OS


def run_isolated(code, path):
    """Runs `code` in its own interpreter on bridge `path`; it must exit 0
    and print OK last."""
    r = run_python(code, timeout=120, TORCHFERRY_BRIDGE=path)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    assert r.stdout.strip().splitlines()[-1] == "OK", r.stdout + r.stderr
    return r.stdout


# --- 1. Python that runs in the middle of a call ------------------------------

PRELUDE = f"""
import gc, torch
import numpy as np
from torchferry import ops
N = {N}
x = torch.ones(N)
def swap():
    x.set_(torch.full((N,), 7.0))
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("path", PATHS)
def test_gc_callback_that_frees_an_input_mid_call(path):
    run_isolated(PRELUDE + """
fired = []
def hook(phase, info):
    if phase == "start" and armed and not fired:
        fired.append(1)
        swap()
gc.callbacks.append(hook)
armed = True
gc.set_threshold(1)
r = ops.abs(x)          # allocating out triggers gc, which runs the hook
armed = False
gc.set_threshold(700)
assert fired, "the gc hook never ran"
# CPython 3.11 collects at the allocation, inside the call, so the call sees
# the swapped input; 3.12 on collect at the next eval-breaker check, after
# the call returns, so it sees the input as it was given.
import sys
expected = 7.0 if sys.version_info < (3, 12) else 1.0
assert torch.equal(r, torch.full((N,), expected)), r[:4]
print("OK")
""", path)


@pytest.mark.subprocess
@pytest.mark.parametrize("path", PATHS)
def test_dlpack_of_a_later_argument_that_frees_an_input(path):
    run_isolated(PRELUDE + """
class E:
    def __init__(self):
        self.a = np.zeros(N, np.float32)
        self.calls = 0
    def __dlpack__(self, *args, **kwargs):
        self.calls += 1
        swap()
        return self.a.__dlpack__(*args, **kwargs)
e = E()
ops.abs(x, out=e)
# numpy 1 refuses max_version=, so the exporter is asked once more without.
assert e.calls == (1 if int(np.__version__.split(".")[0]) >= 2 else 2), e.calls
assert (e.a == 7.0).all(), e.a[:4]
print("OK")
""", path)


@pytest.mark.subprocess
@pytest.mark.parametrize("path", PATHS)
def test_torch_function_mode_that_frees_an_input_while_out_is_allocated(path):
    # The torch.empty route (CUDA outputs, or forced) runs Python mid-call;
    # the direct one runs none but the garbage collector (the test above).
    run_isolated(PRELUDE + """
from torch.overrides import TorchFunctionMode
from torchferry import bridge
bridge.set_out_alloc("torch.empty")
seen = []
class Mode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.empty and not seen:
            seen.append(func)
            swap()
        return func(*args, **(kwargs or {}))
with Mode():
    r = ops.abs(x)
assert seen, "torchferry did not allocate out through torch.empty"
assert torch.equal(r, torch.full((N,), 7.0)), r[:4]
# An input whose shape changes under the allocation: a clean error.
y = torch.ones(8)
class Shrink(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.empty:
            y.set_(torch.ones(3))
        return func(*args, **(kwargs or {}))
try:
    with Shrink():
        ops.neg(y)
    raise SystemExit("a shape changed mid-call went unnoticed")
except ValueError as e:
    assert "shape" in str(e), e
print("OK")
""", path)


def test_reading_tensors_runs_no_torch_function_mode(path):
    # On every path a tensor is read without torch's Python-level methods
    # (the exchange path's checks included), so a TorchFunctionMode sees
    # nothing of a call whose outputs are given: it could otherwise change a
    # tensor between its read and the kernel, or answer for it.
    from torch.overrides import TorchFunctionMode

    seen = []

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x, y, out = torch.randn(64), torch.randn(64), torch.empty(64)
    negated = torch.randn(4, dtype=torch.complex64).conj().imag
    shrunk = torch.ones(16)[4:]
    shrunk.untyped_storage().resize_(8)
    with Watch():
        ops.noop(x, y, out)
        ops.add(x, y, out=out)
        ops.abs(x, out=out)
        with pytest.raises(TypeError, match="negative bit"):
            ops.noop(negated)
        with pytest.raises(ValueError, match="reaches byte"):
            ops.noop(shrunk)
    assert seen == [], seen
    torch.testing.assert_close(out, x.abs())


@pytest.mark.subprocess
@pytest.mark.parametrize("path", PATHS)
def test_stack_list_mutated_by_a_dlpack_producer(path):
    run_isolated(PRELUDE + """
items = []
class P:
    def __init__(self):
        self.a = np.full(N, 2.0, np.float32)
    def __dlpack__(self, *args, **kwargs):
        swap()
        items.clear()
        return self.a.__dlpack__(*args, **kwargs)
items[:] = [x, P()]
r = ops.stack(items)
assert torch.equal(r[0], torch.full((N,), 7.0)) and (r[1] == 2.0).all()
print("OK")
""", path)


# --- 2. writes bump torch's version counter ----------------------------------


def test_out_write_bumps_the_version_counter_autograd_sees():
    a = torch.randn(3, requires_grad=True)
    w = torch.randn(3)
    y = (a * w).sum()
    with torch.no_grad():
        ops.abs(torch.full((3,), 5.0), out=w)
    assert w._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("call", ["abs", "add", "stack", "cast", "matmul"])
def test_every_written_out_is_bumped_once_per_call(call):
    x = torch.randn(4, 4)
    out = torch.empty(2, 4, 4) if call == "stack" else torch.empty(4, 4)
    before = out._version
    {
        "abs": lambda: ops.abs(x, out=out),
        "add": lambda: ops.add(x, x, out=out),
        "stack": lambda: ops.stack([x, x], out=out),
        "cast": lambda: ops.cast(x, out=out),
        "matmul": lambda: ops.matmul(x, x, out=out),
    }[call]()
    assert out._version == before + 1
    assert x._version == 0  # inputs are read, not written


def test_view_of_out_shares_the_bump():
    base = torch.zeros(8)
    view = base[2:6]
    ops.neg(torch.ones(4), out=view)
    assert base._version == view._version == 1


def test_failed_call_bumps_nothing_it_did_not_call():
    out = torch.empty(3)
    with pytest.raises(ValueError):
        ops.abs(torch.ones(4), out=out)  # wrong shape: no kernel ran
    assert out._version == 0


# --- 3. text that is not UTF-8 -------------------------------------------------


@pytest.mark.subprocess
@pytest.mark.parametrize("path", PATHS)
def test_keyword_name_that_is_not_utf8(path):
    run_isolated("""
import torch
from torchferry import ops
for kwargs in ({"\\ud800": 1}, {"out\\udcff": None}):
    try:
        ops.abs(torch.ones(2), **kwargs)
        raise SystemExit("accepted")
    except TypeError as e:
        assert "unexpected keyword argument" in str(e) and "\\\\ud" in str(e), e
print("OK")
""", path)


# --- 6. a view that outlives its storage --------------------------------------


@pytest.mark.subprocess
@pytest.mark.parametrize("path", PATHS)
def test_view_of_freed_storage_with_an_offset(path):
    run_isolated("""
import torch
from torchferry import ops
def freed(size_after):
    t = torch.randn(1 << 20)
    v = t[5:]
    t.untyped_storage().resize_(size_after)
    return v
for size_after in (0, 64):
    for call in (lambda v: ops.abs(v), lambda v: ops.abs(torch.randn(v.shape), out=v),
                 lambda v: ops.add(v, v), lambda v: ops.stack([v])):
        try:
            call(freed(size_after))
            raise SystemExit("a view past its storage was read")
        except ValueError as e:
            assert "storage" in str(e) and "resize" in str(e), e
# A view that still fits its (shrunk) storage is fine.
t = torch.arange(16.0)
v = t[2:4]
t.untyped_storage().resize_(4 * 4)
assert torch.equal(ops.neg(v), torch.tensor([-2.0, -3.0]))
print("OK")
""", path)


# --- 7. Python ints that do not fit the dtype ----------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda v: ops.clamp(v, min=-2**40, max=2**40),
        lambda v: ops.clamp(v, min=-2**31 - 1),
        lambda v: ops.clamp(v, max=2**31),
        lambda v: ops.add(v, v, alpha=2**32 + 1),
        lambda v: ops.add(v, v, alpha=2**70),
    ],
)
def test_int32_attribute_out_of_range(call):
    v = torch.arange(-3, 3, dtype=torch.int32)
    with pytest.raises(OverflowError, match="int32 without overflow"):
        call(v)


INT_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def needs_kernel(op, dtype):
    name = str(dtype).removeprefix("torch.")
    if plugins.kernel_for(op, "cpu", name) is None:
        pytest.skip(f"no loaded plugin serves {op} on cpu {name} (the ATen fallback is not built here)")


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_attributes_past_the_dtype_limits_are_refused(dtype):
    info = torch.iinfo(dtype)
    v = torch.arange(0, 6, dtype=dtype)
    with pytest.raises(OverflowError):  # before any kernel is looked up
        ops.clamp(v, max=info.max + 1)
    # torch up to 2.14 refuses it too; 2.15 takes such a bound as no bound.
    # torchferry keeps refusing: a bound the dtype cannot hold is a mistake.
    try:
        clamped = torch.clamp(v, max=info.max + 1)
    except RuntimeError as e:
        assert "overflow" in str(e)
    else:
        assert torch.equal(clamped, v)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_attributes_at_the_dtype_limits_match_torch(dtype):
    needs_kernel("clamp", dtype)
    info = torch.iinfo(dtype)
    v = torch.arange(0, 6, dtype=dtype)
    for lo, hi in ((info.min, info.max), (info.min + 1, info.max - 1)):
        assert torch.equal(ops.clamp(v, min=lo, max=hi), torch.clamp(v, min=lo, max=hi))


def test_uint8_negative_bounds_wrap_as_in_torch():
    needs_kernel("clamp", torch.uint8)
    needs_kernel("add", torch.uint8)
    v = torch.arange(0, 250, 10, dtype=torch.uint8)
    # A negative bound wraps (-1 is 255), as torch up to 2.14 computes it.
    # torch 2.15 takes a lower bound below the dtype's range as no bound;
    # torchferry's ops do not change meaning with the torch they run under.
    assert torch.equal(ops.clamp(v, min=-1), torch.clamp(v, min=255))
    wrapped = torch.clamp(v, min=-1)
    assert torch.equal(wrapped, torch.full_like(v, 255)) or (TORCH_RELEASE >= (2, 15) and torch.equal(wrapped, v))
    assert torch.equal(ops.add(v, v, alpha=-1), torch.add(v, v, alpha=-1))


# --- 10 - 12. DLPack producers --------------------------------------------------


@pytest.mark.parametrize("version", [(2, 0), (0, 8), (3, 1)])
def test_dlpack_capsule_of_another_major_version_is_refused(version):
    f = Forged(versioned=True, version=version)
    with pytest.raises(BufferError, match=f"DLPack {version[0]}.{version[1]}"):
        ops.abs(f, out=torch.empty(4))


def test_dlpack_minor_version_is_accepted():
    f = Forged(versioned=True, version=(1, 3))
    ctypes_buf = np.frombuffer(f.buffer, np.float32)
    ctypes_buf[:4] = [-1, 2, -3, 4]
    assert torch.equal(ops.abs(f, out=torch.empty(4)), torch.tensor([1.0, 2, 3, 4]))


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, MemoryError])
def test_exceptions_about_the_process_pass_through_dlpack_unchanged(exc):
    class P:
        def __dlpack__(self, *args, **kwargs):
            raise exc("from the producer")

    with pytest.raises(exc, match="^from the producer$"):
        ops.abs(P(), out=torch.empty(4))
    with pytest.raises(exc, match="^from the producer$"):
        ops.abs(torch.ones(4), out=P())


def test_dlpack_that_raises_type_error_is_called_once():
    class P:
        calls = 0

        def __dlpack__(self, *args, **kwargs):
            P.calls += 1
            raise TypeError("no export today")

    with pytest.raises(TypeError, match="no export today"):
        ops.abs(P(), out=torch.empty(4))
    assert P.calls == 1


def test_nested_dlpack_producers_are_called_once_each():
    calls = []

    class Nested:
        def __init__(self, inner, depth):
            self.inner, self.depth = inner, depth

        def __dlpack__(self, *args, **kwargs):
            calls.append(self.depth)
            if self.inner is None:
                raise TypeError("innermost refuses")
            ops.abs(self.inner, out=torch.empty(4))  # raises
            raise AssertionError("unreachable")

    p = None
    for depth in range(13):
        p = Nested(p, depth)
    with pytest.raises(TypeError, match="innermost refuses"):
        ops.abs(p, out=torch.empty(4))
    assert len(calls) == 13, len(calls)


def test_pre_dlpack_1_producer_still_works_after_one_retry():
    class Old:
        calls = 0

        def __init__(self):
            self.a = np.arange(4, dtype=np.float32) - 2

        def __dlpack__(self, stream=None):  # no max_version keyword
            Old.calls += 1
            return self.a.__dlpack__()

    assert torch.equal(ops.abs(Old(), out=torch.empty(4)), torch.tensor([2.0, 1, 0, 1]))
    assert Old.calls == 1  # Python refused the keyword before the body ran


# --- 13, 14. tensors torch itself refuses to use ----------------------------------


def test_inference_tensor_as_out_outside_inference_mode():
    with torch.inference_mode():
        out = torch.empty(4)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode is not "
                       "allowed: out is an inference tensor"):
        ops.abs(torch.ones(4), out=out)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        torch.abs(torch.ones(4), out=out)
    assert torch.equal(out, out)  # still readable
    with torch.inference_mode():
        ops.abs(-torch.ones(4), out=out)
    assert torch.equal(out, torch.ones(4))


def test_inference_tensor_as_input_is_fine():
    with torch.inference_mode():
        x = -torch.ones(4)
    assert torch.equal(ops.abs(x), torch.ones(4))


@pytest.mark.parametrize(
    "make",
    [torch.nn.parameter.UninitializedBuffer, torch.nn.parameter.UninitializedParameter],
)
def test_uninitialized_lazy_tensors_are_refused(make):
    t = make()
    with pytest.raises(ValueError, match="uninitialized parameter or buffer"):
        ops.abs(t)
    with pytest.raises(ValueError, match="uninitialized parameter or buffer"):
        ops.abs(torch.ones(0), out=t)
    with pytest.raises(ValueError):
        torch.abs(t)  # torch refuses it as well


# --- 15. overlap decided by elements ---------------------------------------------


def test_columns_of_one_matrix_do_not_overlap():
    m = torch.randn(5, 2)
    expected = -m[:, 0]
    ops.neg(m[:, 0], out=m[:, 1])
    assert torch.equal(m[:, 1], expected)


@pytest.mark.parametrize(
    "views",
    [
        lambda m: (m[:, 0], m[:, 2]),                # columns
        lambda m: (m[0::2], m[1::2]),                # alternate rows
        lambda m: (m[:, :2], m[:, 2:]),              # left and right halves
        lambda m: (m.t()[0], m.t()[3]),              # transposed columns
        lambda m: (m[::2, ::2], m[1::2, 1::2]),      # two lattices
    ],
)
def test_interleaved_disjoint_views_compute_like_torch(views):
    m = torch.randn(8, 4)
    ref = m.clone()
    src, dst = views(m)
    want = torch.neg(views(ref)[0])
    ops.neg(src, out=dst)
    assert torch.equal(dst, want)


@pytest.mark.parametrize(
    "views",
    [
        lambda m: (m[:-1, 0], m[1:, 0]),             # shifted by one row
        lambda m: (m[:, 0], m.reshape(-1)[:8]),       # a column and a row
        lambda m: (m[0:4].reshape(-1)[:8], m[0:4].reshape(-1)[1:9]),
        lambda m: (m.reshape(-1)[0:8:2], m.reshape(-1)[2:10:2]),
    ],
)
def test_real_partial_overlap_is_still_refused(views):
    m = torch.randn(8, 4)
    src, dst = views(m)
    with pytest.raises(ValueError, match="overlaps"):
        ops.neg(src, out=dst)


def test_cast_between_dtypes_of_different_sizes_checks_bytes():
    buf = torch.zeros(16, dtype=torch.uint8)
    f32 = buf[:8].view(torch.float32)  # bytes 0-7
    i8 = buf[8:]  # bytes 8-15: disjoint
    ops.cast(torch.ones(2), out=f32)
    ops.cast(f32, out=torch.empty(2, dtype=torch.int8))
    with pytest.raises(ValueError, match="overlaps"):
        ops.cast(f32, out=buf[4:6])  # inside f32's second element
    ops.cast(f32, out=i8[:2])


def test_gc_is_not_disturbed():
    gc.collect()
    assert gc.isenabled()


# --- 9. a plugin whose init calls an op through Python ----------------------------

REENTRANT_PLUGIN = r"""
#include <dlfcn.h>
#include "tests/plugins/synthetic.h"

/* Runs Python from init, as a plugin that warms itself up through
   torchferry might: the call must be refused, not cached as "no kernel". */
static tf_status reentrant_init(void* error_sink) {
  (void)error_sink;
  int (*run)(const char*) =
      (int (*)(const char*))dlsym(RTLD_DEFAULT, "PyRun_SimpleString");
  if (run != NULL) {
    run("import sys, torch, __main__\n"
        "try:\n"
        "    sys.modules['torchferry._C'].abs(torch.ones(2))\n"
        "    __main__.reentry = 'returned'\n"
        "except Exception as e:\n"
        "    __main__.reentry = type(e).__name__ + ': ' + str(e)\n");
  }
  return TF_OK;
}

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("noop", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = {sizeof(tf_plugin), TF_ABI_VERSION_MAJOR,
                                 TF_ABI_VERSION_MINOR, "reentrant", "0.0.1",
                                 TF_PLUGIN_FALLBACK, 0, reentrant_init, NULL,
                                 kernels, 1};
SYNTHETIC_ENTRY(plugin)
"""


@pytest.mark.subprocess
def test_plugin_init_that_calls_an_op_is_refused_and_nothing_is_cached(tmp_path):
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed to build the re-entrant plugin"
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    src = tmp_path / "reentrant.c"
    src.write_text(REENTRANT_PLUGIN)
    so = tmp_path / "torchferry_reentrant.so"
    subprocess.run([cc, "-std=c11", "-shared", "-fPIC", f"-I{root}", str(src), "-o", str(so)], check=True)
    r = run_python("""
import torch, torchferry, __main__
from torchferry import ops
print(__main__.reentry)
assert "still loading its plugins" in __main__.reentry, __main__.reentry
assert torch.equal(ops.abs(-torch.ones(2)), torch.ones(2))
assert torchferry.plugins.kernel_for("abs", "cpu", "float32") == "cpu"
print("OK")
""", TORCHFERRY_PLUGIN_PATH=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "OK", r.stdout + r.stderr
