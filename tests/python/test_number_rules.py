"""Every Python number argument of every built-in op, on every dtype the op
serves, is applied as torch applies it: the expected outcome of each call is
what torch itself does with the same tensor and number, never a table.

- torch's result has the input's dtype: torchferry gives the same bits (NaN
  equal to NaN); a float argument (eps, scale) that feeds a reduction is
  compared within a tolerance, the algorithms differ.
- torch would promote the result to another dtype (clamp(bool, max=-3) is
  int64): torchferry, which does not promote, raises a TypeError that names
  the input's dtype and says torch would promote.
- torch refuses the number (a bound past the dtype's range, a bool alpha on
  an int tensor): torchferry refuses it too.
- torch has no kernel for the dtype: only the promotion rule is checked.

The same holds under torch.compile for a smaller set of numbers and dtypes."""

import math

import pytest
import torch
import torch.nn.functional as F

from torchferry import ops

NUMBERS = [
    70000.0, -70000.0, 1 / 3, -0.5, 0.0, -0.0, 1e-8, 65504.0, 65505.0, 3.4e38, 1e300,
    float("nan"), float("inf"), float("-inf"),
    True, False, 0, 1, -1, 3, 127, 128, -128, -129, 255, 256, -255, -256, 1000, -300,
    2**31, 2**63 - 1, 2**63, 2**64 - 1, -(2**63), 2**64, 2**70,
]  # fmt: skip

N = 256  # a multiple of torch's vector width: its whole tensor takes one path


def tensor(dtype, n=N, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(n, generator=g) > 0.5
    if dtype.is_floating_point:
        x = torch.randn(n, generator=g, dtype=torch.float64) * 3
        x[:8] = torch.tensor([-60000.0, 1e-3, 0.0, -0.0, 1.0, 0.3, 1e-4, 60000.0], dtype=torch.float64)
        return x.to(dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -(2**62)), min(info.max, 2**62)
    x = torch.randint(-1000, 1000, (n,), generator=g, dtype=torch.int64).clamp(lo, hi)
    x[:4] = torch.tensor([lo, hi, 0, 1])
    return x.to(dtype)


def _rms(x, _eps):
    """x as two rows, and a weight of ones."""
    return x.view(2, -1), torch.ones(x.numel() // 2, dtype=x.dtype)


# One entry per number argument of a built-in op: the torchferry call, torch's
# call, and whether values compare exactly (False: within a tolerance).
CALLS = {
    ("add", "other"): (lambda x, n: ops.add(x, n), lambda x, n: torch.add(x, n), True),
    ("add", "alpha"): (
        lambda x, n: ops.add(x, x.flip(0), alpha=n),
        lambda x, n: torch.add(x, x.flip(0), alpha=n),
        True,
    ),
    ("mul", "other"): (lambda x, n: ops.mul(x, n), lambda x, n: torch.mul(x, n), True),
    ("clamp", "min"): (lambda x, n: ops.clamp(x, min=n), lambda x, n: torch.clamp(x, min=n), True),
    ("clamp", "max"): (lambda x, n: ops.clamp(x, max=n), lambda x, n: torch.clamp(x, max=n), True),
    ("rms_norm", "eps"): (
        lambda x, n: ops.rms_norm(*_rms(x, n), n),
        lambda x, n: F.rms_norm(_rms(x, n)[0], (x.numel() // 2,), _rms(x, n)[1], n),
        False,
    ),
    ("add_rms_norm", "eps"): (
        lambda x, n: ops.add_rms_norm(x.view(2, -1), torch.zeros_like(x.view(2, -1)), _rms(x, n)[1], eps=n),
        lambda x, n: F.rms_norm(x.view(2, -1), (x.numel() // 2,), _rms(x, n)[1], n),
        False,
    ),
    ("scaled_dot_product_attention", "scale"): (
        lambda x, n: ops.scaled_dot_product_attention(*([x.view(1, 2, 8, 16) / 64] * 3), scale=n),
        # torch's math path: its other CPU path gives 0, not NaN, for a NaN
        # scale, which is not the rule its math states.
        lambda x, n: torch.ops.aten._scaled_dot_product_attention_math(*([x.view(1, 2, 8, 16) / 64] * 3), scale=n)[0],
        False,
    ),
}


def number_args():
    """(op, argument, dtypes) for every number a built-in op takes: a Scalar,
    a float, or a tensor that a Python number may stand for."""
    found = []
    for s in ops.schemas():
        if s["declared_by"] is not None:
            continue
        for a in s["args"]:
            if a["number_ok"] or a["type"] in ("Scalar", "float", "float?"):
                found.append((s["name"], a["name"], s["dtypes"]))
    return found


def test_every_number_argument_is_compared_with_torch():
    assert {(op, arg) for op, arg, _ in number_args()} == set(CALLS)


def torch_outcome(fn, x, n):
    try:
        return fn(x, n)
    except NotImplementedError:
        return None  # torch has no kernel for this dtype
    except (RuntimeError, TypeError, ValueError, OverflowError) as e:
        return e


def promotes(x, n):
    """The dtype torch gives x op n, where the number is a tensor operand."""
    try:
        return torch.result_type(x, n) != x.dtype
    except (RuntimeError, OverflowError):
        return False


def unwrapped(e):
    """The error the native function raised, where torch.compile wrapped it."""
    chain = e
    while chain is not None:
        if type(chain) in (TypeError, ValueError, OverflowError):
            return chain
        chain = chain.__cause__ or chain.__context__
    return e


def check(op, arg, x, n):
    ours_fn, theirs_fn, exact = CALLS[op, arg]
    want = torch_outcome(theirs_fn, x.clone(), n)
    try:
        got = ours_fn(x.clone(), n)
    except (TypeError, ValueError, OverflowError, RuntimeError) as e:
        got = unwrapped(e)
    where = f"{op}({arg}={n!r}) on {x.dtype}"
    if isinstance(got, NotImplementedError) and "no loaded plugin has a kernel" in str(got):
        return  # nothing serves it here (a build without the ATen plugin): nothing to compare
    number_arg = arg in ("other", "min", "max")
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"{where}: torch refuses ({want!r}), torchferry gives {got}"
        return
    if want is None and not (number_arg and promotes(x, n)):
        return  # torch has no kernel and would not promote: nothing to compare
    if want is None or want.dtype != x.dtype:
        promoted = torch.result_type(x, n) if want is None else want.dtype
        assert isinstance(got, TypeError), f"{where}: torch gives {promoted}, torchferry {got!r}"
        name = str(x.dtype).removeprefix("torch.")
        assert name in str(got) and "promote" in str(got), str(got)
        return
    assert not isinstance(got, Exception), f"{where}: torch gives {want.dtype}, torchferry raises {got!r}"
    assert got.dtype == want.dtype, where
    if exact:
        same = (got == want) | (got.isnan() & want.isnan()) if got.is_floating_point() else got == want
        if got.is_floating_point():
            same &= (torch.signbit(got) == torch.signbit(want)) | got.isnan()  # -0.0 is not 0.0
        bad = (~same).nonzero().flatten()[:4].tolist()
        assert not bad, f"{where}: at {bad}: torchferry {got[bad].tolist()}, torch {want[bad].tolist()}"
    elif not want.isfinite().all():
        # A scale near float32's largest overflows inside the op: which
        # elements turn NaN depends on where each computes its products.
        assert not got.isfinite().all() or not want.isfinite().any(), where
    else:
        tol = 1e-2 if x.dtype in (torch.float16, torch.bfloat16) else 1e-5
        assert torch.allclose(got.double(), want.double(), rtol=tol, atol=tol, equal_nan=True), where


@pytest.mark.parametrize(
    "op,arg,dtype",
    [(op, arg, d) for op, arg, dtypes in number_args() for d in dtypes],
    ids=lambda v: str(v),
)
def test_a_number_is_applied_as_torch_applies_it(op, arg, dtype):
    x = tensor(getattr(torch, dtype))
    for n in NUMBERS:
        check(op, arg, x, n)


@pytest.mark.parametrize(
    "call,expected",
    [
        (lambda: ops.clamp(torch.tensor([True, False, True]), max=-3), TypeError),
        (lambda: ops.clamp(torch.tensor([1, 2], dtype=torch.int32), min=0.5), TypeError),
        (lambda: ops.clamp(torch.tensor([1.0], dtype=torch.float16), max=70000.0), OverflowError),
        (lambda: ops.add(torch.tensor([1.0]), torch.tensor([1.0]), alpha=True), TypeError),
    ],
    ids=["bool_clamped_by_an_int", "int_clamped_by_a_float", "float16_bound_past_range", "bool_alpha_on_float"],
)
def test_the_issue_s_refusals_say_what_was_expected(call, expected):
    with pytest.raises(expected, match="dtype|overflow"):
        call()


def test_add_rounds_its_number_into_float16_and_mul_does_not():
    x = torch.tensor([-60000.0, 1e-3, 1.0], dtype=torch.float16)
    assert torch.isinf(ops.add(x, 70000.0)).all()  # 70000 is inf in float16
    assert torch.equal(ops.add(x, 70000.0), torch.add(x, 70000.0))
    assert ops.mul(x, 70000.0)[1].item() == pytest.approx(70.0, rel=1e-3)  # kept in float32


def extreme(dtype, sign):
    """The dtype's lowest (sign -1) or highest (sign 1) value."""
    if dtype == torch.bool:
        return sign > 0
    if dtype.is_floating_point:
        return sign * math.inf
    return torch.iinfo(dtype).max if sign > 0 else torch.iinfo(dtype).min


# An eager call whose result is the element its number stands for.
ELEMENT_CALLS = {
    ("add", "other"): lambda n, d: ops.add(torch.zeros(1, dtype=d), n),
    ("mul", "other"): lambda n, d: ops.mul(torch.ones(1, dtype=d), n),
    ("clamp", "min"): lambda n, d: ops.clamp(torch.full((1,), extreme(d, -1), dtype=d), min=n),
    ("clamp", "max"): lambda n, d: ops.clamp(torch.full((1,), extreme(d, 1), dtype=d), max=n),
}


def test_the_compiled_path_applies_the_eager_rule():
    # torch.compile's traced calls take a number through _C._number: it
    # refuses what the eager call refuses, in the same words, and otherwise
    # gives the element the eager call applies.
    from torchferry import _C

    number_tensors = {(op, arg): dtypes for op, arg, dtypes in number_args() if arg in ("other", "min", "max")}
    assert set(number_tensors) == set(ELEMENT_CALLS)
    for (op, arg), dtypes in number_tensors.items():
        for name in dtypes:
            dtype = getattr(torch, name)
            for n in NUMBERS:
                try:
                    eager = ELEMENT_CALLS[op, arg](n, dtype)
                except NotImplementedError:
                    continue  # no kernel here for this dtype
                except (TypeError, OverflowError) as e:
                    with pytest.raises(type(e)) as rule:
                        _C._number(op, arg, n, name, "cpu")
                    assert str(rule.value) == str(e), (op, arg, name, n)
                    continue
                element = torch.full((1,), _C._number(op, arg, n, name, "cpu"), dtype=dtype)
                torch.testing.assert_close(element, eager, rtol=0, atol=0, equal_nan=True, msg=f"{op} {arg}={n!r} {name}")


def test_the_native_rule_refuses_what_takes_no_number():
    from torchferry import _C

    with pytest.raises(TypeError, match="no Python number stands for alpha"):
        _C._number("add", "alpha", 1, "int32", "cpu")
    with pytest.raises(TypeError, match="cpu only"):
        _C._number("mul", "other", 0.5, "float32", "cuda")
    with pytest.raises(ValueError, match="unknown dtype"):
        _C._number("mul", "other", 0.5, "float8", "cpu")


COMPILED_DTYPES = ["float16", "bfloat16", "float32", "int8", "uint8", "bool"]
COMPILED_NUMBERS = [70000.0, 1 / 3, 1e-8, -3, 1000, True]


def compiled_call(ours_fn, n):
    """ours_fn(t, n) under torch.compile. Dynamo may rewrap what the traced
    code raised (Unsupported, with the text only): such an error stands for
    eager's when it carries eager's words, and is raised as eager's."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: ours_fn(t, n), backend="aot_eager", fullgraph=True)

    def call(t, _n):
        try:
            return compiled(t)
        except Exception as e:  # noqa: BLE001  (compared with eager's below)
            try:
                ours_fn(t, n)
            except Exception as eager:  # noqa: BLE001
                if str(eager) in str(e):
                    raise eager from e
            raise

    return call


@pytest.mark.parametrize("op,arg", sorted(CALLS), ids=lambda v: str(v))
def test_compiled_calls_apply_numbers_as_torch_does(op, arg, monkeypatch):
    dtypes = next(d for o, a, d in number_args() if (o, a) == (op, arg))
    ours_fn, theirs_fn, exact = CALLS[op, arg]
    for dtype in (d for d in COMPILED_DTYPES if d in dtypes):
        x = tensor(getattr(torch, dtype), n=32)
        for n in COMPILED_NUMBERS:
            monkeypatch.setitem(CALLS, (op, arg), (compiled_call(ours_fn, n), theirs_fn, exact))
            check(op, arg, x, n)


def test_a_float_argument_is_not_rounded_to_float16():
    x = torch.full((2, 8), 1e-4, dtype=torch.float16)
    w = torch.ones(8, dtype=torch.float16)
    got = ops.rms_norm(x, w, 1e-8)  # 1e-8 is 0 in float16; torch keeps it
    assert torch.allclose(got.float(), F.rms_norm(x, (8,), w, 1e-8).float(), rtol=1e-2)
    assert not math.isclose(got[0, 0].item(), 1.0, rel_tol=1e-2)


def test_a_declared_op_s_float_takes_any_number_eager_and_compiled():
    # A plugin's op has no torch counterpart; its float arguments take what a
    # built-in's do (a bool as 0 or 1, as torch's float arguments take one),
    # and compiled code hands them over as eager does.
    x, y = torch.randn(64), torch.randn(64)
    assert torch.equal(ops.example.axpby(x, y, a=True, b=False), x)
    for a, b in [(True, 1 / 3), (70000.0, -0.5), (1e-8, 3)]:
        eager = ops.example.axpby(x, y, a=a, b=b)
        torch.testing.assert_close(eager, a * x.double() + b * y.double(), check_dtype=False)
        torch._dynamo.reset()
        compiled = torch.compile(lambda s, t: ops.example.axpby(s, t, a=a, b=b), backend="aot_eager", fullgraph=True)
        assert torch.equal(compiled(x, y), eager)
