"""What a call believes about a tensor is torch's answer, read from torch's own
state, never the tensor's class's: a subclass's __torch_function__ (or a
TorchFunctionMode) never runs during an ops.* call, whatever it would answer
for requires_grad, dtype, device, shape or anything else, on every bridge
path and TORCHFERRY_TENSOR_META setting. torchferry raises exactly where
torch raises for the same tensors, and computes the right answer otherwise.
"""

import contextlib

import pytest
import torch

from torchferry import _C, bridge, ops
from conftest import run_python

# Every path this torch can run, the exchange path also without the
# TensorImpl (its fallbacks through torch's Python-level getters).
PATH_CASES = (
    ["offset"]
    + (["shim"] if bridge.shim_available() else [])
    + (["exchange", "exchange-noimpl"] if bridge.info()["exchange"]["available"] else [])
)

CALLS = []  # every __torch_function__ call of the subclasses below


def _attr(func):
    """The name of the attribute a getter's __torch_function__ call is for."""
    if getattr(func, "__name__", None) == "__get__":
        return getattr(getattr(func, "__self__", None), "__name__", None)
    return getattr(func, "__name__", None)


class Counts(torch.Tensor):
    """Answers as torch would, and counts."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        CALLS.append((cls.__name__, _attr(func)))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


class SaysNoGrad(Counts):
    """Denies autograd: requires_grad False, a leaf with no grad_fn."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = _attr(func)
        answers = {"requires_grad": False, "is_leaf": True, "grad_fn": None}
        if name in answers:
            CALLS.append((cls.__name__, name))
            return answers[name]
        return super().__torch_function__(func, types, args, kwargs)


class Refuses(torch.Tensor):
    """Refuses every function torch hands it."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        CALLS.append((cls.__name__, _attr(func)))
        raise RuntimeError(f"Refuses does not support {func!r}")


class Misreports(Counts):
    """Lies about every fact a call could depend on."""

    LIES = {
        "requires_grad": False,
        "is_leaf": True,
        "grad_fn": None,
        "shape": torch.Size([1]),
        "size": lambda *a: torch.Size([1]),
        "dtype": torch.float64,
        "device": torch.device("meta"),
        "layout": torch.sparse_coo,
        "is_nested": True,
        "is_neg": lambda *a: True,
        "is_inference": lambda *a: True,
        "_version": 1000,
        "data_ptr": lambda *a: 0,
        "names": ("a",),
        "_cdata": 0,
        "untyped_storage": lambda *a: torch.UntypedStorage(0),
    }

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = _attr(func)
        if name in cls.LIES:
            CALLS.append((cls.__name__, name))
            lie = cls.LIES[name]
            return lie() if callable(lie) else lie
        return super().__torch_function__(func, types, args, kwargs)


LIARS = [Counts, SaysNoGrad, Refuses, Misreports]


def wrap(cls, t, requires_grad=False):
    """`t`'s data as a `cls` leaf (no __torch_function__ runs to make it)."""
    with torch._C.DisableTorchFunction():
        return torch.Tensor._make_subclass(cls, t, requires_grad)


def wrap_with_meta(cls, t):
    """A `cls` leaf that does not require grad but has autograd metadata (it
    did once), as a parameter frozen with requires_grad_(False) has."""
    liar = wrap(cls, t, True)
    with torch._C.DisableTorchFunction():
        liar.requires_grad_(False)
    return liar


def plain(t):
    """A detached plain copy of `t`, made without its __torch_function__."""
    with torch._C.DisableTorchFunction():
        return t.as_subclass(torch.Tensor).detach().clone()


@contextlib.contextmanager
def bridge_path(name):
    before = bridge.path()
    bridge.set_path(name.split("-")[0])
    _C._set_exchange_reads_impl(not name.endswith("noimpl"))
    try:
        yield
    finally:
        _C._set_exchange_reads_impl(True)
        bridge.set_path(before)


@pytest.fixture(params=PATH_CASES)
def path(request):
    with bridge_path(request.param):
        yield request.param


def torch_raises(fn):
    """torch's verdict on the same call with plain tensors: its message or
    None."""
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    return None


def no_calls():
    calls = list(CALLS)
    CALLS.clear()
    assert calls == [], f"__torch_function__ ran during the call: {calls}"


GRAD_MODES = {
    "grad": contextlib.nullcontext,
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
}

# (what requires grad, how): the leaf out, a leaf input, a non-leaf input,
# and a view whose base was made to require grad after it was taken (it
# requires grad through its base only: a leaf with no grad_fn).
GRAD_CASES = ["out_leaf", "input_leaf", "input_nonleaf", "input_view_of_grad_base"]


def grad_tensors(case, cls):
    """(x, out) as plain tensors and as `cls` instances with the same
    autograd state."""
    x, out = torch.randn(5), torch.empty(5)
    if case == "out_leaf":
        return (x, out.requires_grad_()), (x, wrap(cls, torch.empty(5), True))
    if case == "input_leaf":
        return (x.requires_grad_(), out), (wrap(cls, x.detach(), True), out)
    if case == "input_nonleaf":
        a = torch.randn(5, requires_grad=True)
        with torch._C.DisableTorchFunction():
            liar = (a * 2).as_subclass(cls)
        return (a * 2, out), (liar, out)
    base = torch.randn(5)
    view = base[...]
    base.requires_grad_()
    liar_base = wrap(cls, torch.randn(5))
    with torch._C.DisableTorchFunction():
        liar = liar_base[...]
        liar_base.requires_grad_()
    return (view, out), (liar, out)


@pytest.mark.parametrize("mode", list(GRAD_MODES))
@pytest.mark.parametrize("case", GRAD_CASES)
@pytest.mark.parametrize("cls", LIARS, ids=lambda c: c.__name__)
def test_out_with_autograd_raises_where_torch_raises(path, cls, case, mode):
    (px, pout), (lx, lout) = grad_tensors(case, cls)
    with torch._C.DisableTorchFunction():  # torch's own state: as the plain
        assert (lx.requires_grad, lout.requires_grad) == (px.requires_grad, pout.requires_grad)
        assert (lx.is_leaf, lx.grad_fn is None) == (px.is_leaf, px.grad_fn is None)
    CALLS.clear()
    with GRAD_MODES[mode]():
        expected = torch_raises(lambda: torch.abs(px, out=pout))
        assert (expected is None) == (mode != "grad"), expected
        if expected is not None:
            with pytest.raises(RuntimeError, match=r"out=\.\.\. arguments don't support automatic"):
                ops.abs(lx, out=lout)
        else:
            ops.abs(lx, out=lout)
    no_calls()
    if expected is None:
        torch.testing.assert_close(plain(lout), plain(lx).abs())


@pytest.mark.parametrize("cls", LIARS, ids=lambda c: c.__name__)
def test_functional_op_with_input_that_requires_grad_is_refused(path, cls):
    # torch would record the op for autograd; torchferry cannot, so it
    # refuses it for a subclass exactly as for a plain tensor.
    plain = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="torchferry ops don't support automatic"):
        ops.abs(plain)
    liar = wrap(cls, torch.randn(4), True)
    CALLS.clear()
    with pytest.raises(RuntimeError, match="torchferry ops don't support automatic"):
        ops.abs(liar)
    no_calls()


@pytest.mark.parametrize("meta", [False, True], ids=["no_autograd_meta", "autograd_meta"])
@pytest.mark.parametrize("cls", LIARS, ids=lambda c: c.__name__)
def test_subclass_inputs_compute_without_their_torch_function(path, cls, meta):
    # With autograd metadata a tensor's requires_grad is not settled by its
    # absence: it is read from the TensorImpl, never through the getter.
    make = wrap_with_meta if meta else wrap
    a = torch.arange(-6.0, 6.0).reshape(3, 4)
    b = torch.full((3, 4), 0.5)
    la, lb = make(cls, a.clone()), make(cls, b.clone())
    out = make(cls, torch.empty(3, 4))
    CALLS.clear()
    ops.abs(la, out=out)
    r_add = ops.add(la, lb)
    r_neg = ops.neg(la)
    no_calls()
    torch.testing.assert_close(plain(out), a.abs())
    torch.testing.assert_close(plain(r_add), a + b)
    torch.testing.assert_close(plain(r_neg), -a)


@pytest.mark.parametrize("cls", LIARS, ids=lambda c: c.__name__)
def test_in_place_on_a_subclass_bumps_its_version(path, cls):
    t = wrap_with_meta(cls, torch.randn(6))
    with torch._C.DisableTorchFunction():
        before = t._version
    CALLS.clear()
    ops.neg(torch.ones(6), out=t)
    no_calls()
    with torch._C.DisableTorchFunction():
        assert t._version == before + 1
    assert torch.equal(plain(t), -torch.ones(6))


@pytest.mark.parametrize("cls", LIARS, ids=lambda c: c.__name__)
def test_refusals_name_torchs_facts_not_the_subclass_answers(path, cls):
    # A dtype torchferry does not carry: the message says what torch says
    # the dtype is (complex64), not what the subclass claims (float64).
    z = wrap(cls, torch.zeros(3, dtype=torch.complex64))
    CALLS.clear()
    with pytest.raises(TypeError, match="complex64"):
        ops.abs(z)
    no_calls()


def test_torch_function_mode_is_not_asked_about_requires_grad(path):
    from torch.overrides import TorchFunctionMode

    seen = []

    class SaysNoGradMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(_attr(func))
            if _attr(func) == "requires_grad":
                return False
            return func(*args, **(kwargs or {}))

    x, out = torch.randn(4), torch.empty(4, requires_grad=True)
    written = torch.empty(4).requires_grad_().requires_grad_(False)
    with SaysNoGradMode():
        with pytest.raises(RuntimeError, match="automatic differentiation"):
            ops.abs(x, out=out)
        ops.abs(x, out=written)  # read, checked, written and bumped
    assert seen == [], seen
    torch.testing.assert_close(written, x.abs())
    assert written._version == 1


def test_info_says_requires_grad_comes_from_the_tensorimpl():
    detail = bridge.info()["grad_check"]
    assert "c10::TensorImpl::requires_grad" in detail, detail
    assert "held off __torch_function__" in detail, detail


# The same cases in fresh interpreters for every TORCHFERRY_BRIDGE and
# TORCHFERRY_TENSOR_META setting: what each calibrates at import is what
# the call reads.
ENV_CASES = [
    (p, meta)
    for p in ["offset"] + (["shim"] if bridge.shim_available() else [])
    + (["exchange"] if bridge.info()["exchange"]["available"] else [])
    for meta in ["auto", "getters"]
]


@pytest.mark.subprocess
@pytest.mark.parametrize("env_path,meta", ENV_CASES, ids=lambda v: str(v))
def test_every_setting_in_a_fresh_interpreter(env_path, meta):
    r = run_python(
        f"""
        import contextlib, torch
        import test_lying_subclasses as t
        from torchferry import bridge
        assert bridge.path() == {env_path!r}, bridge.path()
        for cls in t.LIARS:
            for case in t.GRAD_CASES:
                for mode in t.GRAD_MODES:
                    t.test_out_with_autograd_raises_where_torch_raises(None, cls, case, mode)
            t.test_functional_op_with_input_that_requires_grad_is_refused(None, cls)
            for meta in (False, True):
                t.test_subclass_inputs_compute_without_their_torch_function(None, cls, meta)
            t.test_in_place_on_a_subclass_bumps_its_version(None, cls)
            t.test_refusals_name_torchs_facts_not_the_subclass_answers(None, cls)
        t.test_torch_function_mode_is_not_asked_about_requires_grad(None)
        print("OK")
        """,
        TORCHFERRY_BRIDGE=env_path,
        TORCHFERRY_TENSOR_META=meta,
    )
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr




@pytest.mark.parametrize(
    "make",
    [
        torch.nn.parameter.UninitializedBuffer,
        torch.nn.parameter.UninitializedParameter,
        lambda: torch.ones(3).as_subclass(Counts).requires_grad_(),
        lambda: (-torch.ones(3)).as_subclass(Refuses),
        lambda: (-torch.ones(3)).as_subclass(Misreports),
    ],
)
def test_torch_function_is_back_on_after_a_call(path, make):
    # A refusal's words are read with __torch_function__ held off, inside
    # another such read: torch's own switch must be on again when both end.
    t = make()
    for call in (lambda: ops.abs(t), lambda: ops.abs(torch.ones(3), out=t)):
        try:
            call()
        except (ValueError, TypeError, RuntimeError):
            pass
        assert torch._C._is_torch_function_enabled()
