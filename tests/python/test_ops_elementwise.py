"""abs, neg, exp, silu, add, mul, clamp, cast and noop against torch's own
results, for every dtype the CPU plugin carries and every layout."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from torchferry import ops
from torchferry.reference import REFERENCES
from conftest import (
    LAYOUT_NAMES,
    MyT,
    assert_matches,
    conversions,
    cpu_kernel_dtypes,
    dtype_id,
    layout,
    make,
    plain,
)

UNARY = {"abs": torch.abs, "neg": torch.neg, "exp": torch.exp, "silu": F.silu}
UNARY_CASES = [
    pytest.param(op, dt, id=f"{op}-{dtype_id(dt)}") for op in UNARY for dt in cpu_kernel_dtypes(op)
]
# torch's add and clamp, and their definitions where torch has no kernel
# (add of uint16/32/64 wraps; clamp of bool is a max and a min).
BINARY = {"add": REFERENCES["add"], "mul": torch.mul}
torch_clamp_ = REFERENCES["clamp"]
BINARY_CASES = [
    pytest.param(op, dt, id=f"{op}-{dtype_id(dt)}") for op in BINARY for dt in cpu_kernel_dtypes(op)
]
CLAMP_DTYPES = [pytest.param(dt, id=dtype_id(dt)) for dt in cpu_kernel_dtypes("clamp")]
CARRIED = [
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
    torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
]  # fmt: skip


def test_plugin_carries_the_v1_elementwise_ops():
    # The parametrised tests below take their dtypes from the CPU plugin;
    # this makes sure that list is not silently empty.
    assert torch.float32 in cpu_kernel_dtypes("abs")
    for op in ("abs", "neg", "add", "mul", "clamp"):
        assert {torch.int32, torch.int64} <= set(cpu_kernel_dtypes(op)), op
    for op in ("exp", "silu"):
        assert {torch.float32, torch.float16} <= set(cpu_kernel_dtypes(op)), op


# --- unary -----------------------------------------------------------------------


@pytest.mark.parametrize("layout_name", LAYOUT_NAMES)
@pytest.mark.parametrize("op,dtype", UNARY_CASES)
def test_unary_matches_torch(path, op, dtype, layout_name):
    x = layout(layout_name, dtype)
    expected = UNARY[op](plain(x))
    with torch.no_grad(), conversions(path, 2):
        out = getattr(ops, op)(x)
    assert type(out) is torch.Tensor  # allocated with torch.empty, never a subclass
    assert out.is_contiguous() and out.device == x.device
    assert_matches(out, expected)


@pytest.mark.parametrize("op,dtype", UNARY_CASES)
def test_unary_into_given_non_contiguous_out(path, op, dtype):
    x = make((5, 7), dtype)
    out = torch.full((7, 5), 99, dtype=dtype).t()
    with conversions(path, 2):
        result = getattr(ops, op)(x, out=out)
    assert result is out
    assert_matches(out, UNARY[op](x))


@pytest.mark.parametrize("layout_name", ["contiguous", "transposed", "offset", "step", "channels_last", "zero_dim"])
@pytest.mark.parametrize("op,dtype", UNARY_CASES)
def test_unary_in_place_exact_alias(path, op, dtype, layout_name):
    x = layout(layout_name, dtype)
    expected = UNARY[op](x.clone())
    with conversions(path, 2):
        result = getattr(ops, op)(x, out=x)
    assert result is x
    assert_matches(x, expected)


def test_unary_out_keeps_a_subclass(path):
    x = make((3, 4))
    out = torch.empty(3, 4).as_subclass(MyT)
    with conversions(path, 2):
        assert ops.abs(x, out=out) is out
    assert type(out) is MyT
    assert_matches(plain(out), torch.abs(x))


def test_unary_special_float_values(path):
    x = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e30, -1e-30, 88.0, -100.0])
    for op, ref in UNARY.items():
        with conversions(path, 2):
            assert_matches(getattr(ops, op)(x), ref(x))


def test_unary_int_extremes(path):
    x = torch.tensor([0, 1, -1, 2**31 - 1, -(2**31) + 1], dtype=torch.int32)
    with conversions(path, 4):
        assert_matches(ops.abs(x), torch.abs(x))
        assert_matches(ops.neg(x), torch.neg(x))


# --- add and mul -------------------------------------------------------------------


@pytest.mark.parametrize("layout_name", LAYOUT_NAMES)
@pytest.mark.parametrize("op,dtype", BINARY_CASES)
def test_binary_matches_torch(path, op, dtype, layout_name):
    x = layout(layout_name, dtype)
    y = make(x.shape, dtype)
    with torch.no_grad():
        expected = BINARY[op](plain(x), y)
        with conversions(path, 3):
            out = getattr(ops, op)(x, y)
    assert_matches(out, expected)


@pytest.mark.parametrize("op,dtype", BINARY_CASES)
def test_binary_layouts_on_the_other_operand(path, op, dtype):
    for name in ("transposed", "offset", "expanded_rows", "expanded_cols", "subclass"):
        y = layout(name, dtype)
        x = make(y.shape, dtype)
        with conversions(path, 3):
            out = getattr(ops, op)(x, y)
        assert_matches(out, BINARY[op](x, plain(y)))


BROADCASTS = [
    ((4, 6), (6,)),
    ((6,), (4, 6)),
    ((4, 1), (1, 6)),
    ((2, 1, 5), (3, 1)),
    ((), (3, 2)),
    ((3, 2), ()),
    ((), ()),
    ((0, 3), (1, 3)),
    ((2, 0), (2, 1)),
    ((1,), (70000,)),
    ((2, 3, 1, 5), (3, 4, 1)),
]


@pytest.mark.parametrize("xs,ys", BROADCASTS, ids=[f"{a}x{b}" for a, b in BROADCASTS])
@pytest.mark.parametrize("op,dtype", BINARY_CASES)
def test_binary_broadcasting(path, op, dtype, xs, ys):
    x, y = make(xs, dtype), make(ys, dtype)
    expected = BINARY[op](x, y)
    with conversions(path, 3):
        out = getattr(ops, op)(x, y)
    assert_matches(out, expected)
    given = torch.zeros(expected.shape, dtype=dtype)
    with conversions(path, 3):
        assert getattr(ops, op)(x, y, out=given) is given
    assert_matches(given, expected)


@pytest.mark.parametrize("op,dtype", BINARY_CASES)
def test_binary_in_place_exact_alias(path, op, dtype):
    x, y = make((5, 6), dtype), make((6,), dtype)
    expected = BINARY[op](x, y)
    with conversions(path, 3):
        assert getattr(ops, op)(x, y, out=x) is x
    assert_matches(x, expected)
    # out aliases both operands exactly
    z = make((3, 4), dtype).t()
    expected = BINARY[op](z, z)
    with conversions(path, 3):
        assert getattr(ops, op)(z, z, out=z) is z
    assert_matches(z, expected)


@pytest.mark.parametrize("dtype", [pytest.param(d, id=dtype_id(d)) for d in cpu_kernel_dtypes("add")])
def test_add_alpha(path, dtype):
    x, y = make((4, 5), dtype), make((4, 5), dtype)
    alphas = [2.5, -1.0, 0.0, 3, -2] if dtype.is_floating_point else [3, -2, 0, 1]
    for alpha in alphas:
        with conversions(path, 3):
            out = ops.add(x, y, alpha=alpha)
        assert_matches(out, REFERENCES["add"](x, y, alpha=alpha))
        with conversions(path, 3):
            out = ops.add(x, y, alpha)  # positional
        assert_matches(out, REFERENCES["add"](x, y, alpha=alpha))


def test_add_keywords(path):
    x, y = make((3,)), make((3,))
    with conversions(path, 3):
        out = ops.add(input=x, other=y, alpha=2.0)
    assert_matches(out, x + 2 * y)


# --- clamp -----------------------------------------------------------------------


def _bound(kind, dtype, shape=(6,), value=0):
    if kind == "none":
        return None
    if kind == "scalar":
        # A bound of the tensor's kind: an int bound would make torch promote
        # a bool tensor to int64, which torchferry refuses.
        if dtype == torch.bool:
            return value > 0
        return float(value) + 0.25 if dtype.is_floating_point else int(value)
    return make(shape, dtype)


def torch_clamp(x, lo, hi):
    # torch.clamp takes both bounds as numbers or both as tensors.
    if isinstance(lo, torch.Tensor) != isinstance(hi, torch.Tensor) and None not in (lo, hi):
        lo, hi = (b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=x.dtype) for b in (lo, hi))
    return torch_clamp_(x, min=lo, max=hi)


CLAMP_KINDS = [
    ("scalar", "scalar"),
    ("scalar", "none"),
    ("none", "scalar"),
    ("tensor", "tensor"),
    ("tensor", "none"),
    ("none", "tensor"),
    ("scalar", "tensor"),
    ("tensor", "scalar"),
]


@pytest.mark.parametrize("kinds", CLAMP_KINDS, ids=["-".join(k) for k in CLAMP_KINDS])
@pytest.mark.parametrize("dtype", CLAMP_DTYPES)
def test_clamp_bounds(path, dtype, kinds):
    x = make((4, 6), dtype)
    lo = _bound(kinds[0], dtype, (6,), -1)
    hi = _bound(kinds[1], dtype, (4, 1), 1)
    expected = torch_clamp(x, lo, hi)
    tensors = 2 + sum(k == "tensor" for k in kinds)
    with conversions(path, tensors):
        out = ops.clamp(x, lo, hi)
    assert_matches(out, expected)
    with conversions(path, tensors):
        out = ops.clamp(x, min=lo, max=hi)
    assert_matches(out, expected)


@pytest.mark.parametrize("layout_name", LAYOUT_NAMES)
@pytest.mark.parametrize("dtype", CLAMP_DTYPES)
def test_clamp_layouts(path, dtype, layout_name):
    x = layout(layout_name, dtype)
    lo, hi = (-0.5, 0.5) if dtype.is_floating_point else (False, True) if dtype == torch.bool else (-10, 10)
    with torch.no_grad():
        expected = torch_clamp_(plain(x), lo, hi)
        with conversions(path, 2):
            out = ops.clamp(x, lo, hi)
    assert_matches(out, expected)


@pytest.mark.parametrize("dtype", CLAMP_DTYPES)
def test_clamp_tensor_bounds_broadcast_the_output(path, dtype):
    # A bound with more dims than input widens the result, as torch.clamp does.
    x = make((6,), dtype)
    lo = make((3, 1), dtype)
    hi = make((4, 1, 6), dtype)
    expected = torch_clamp_(x, min=lo, max=hi)
    assert expected.shape == (4, 3, 6)
    with conversions(path, 4):
        out = ops.clamp(x, lo, hi)
    assert_matches(out, expected)


@pytest.mark.parametrize("dtype", CLAMP_DTYPES)
def test_clamp_min_above_max_and_in_place(path, dtype):
    x = make((5, 5), dtype)
    lo, hi = (True, False) if dtype == torch.bool else (3, -3)
    expected = torch_clamp_(x, lo, hi)  # torch: everything becomes max
    with conversions(path, 2):
        assert ops.clamp(x, lo, hi, out=x) is x
    assert_matches(x, expected)


def test_clamp_propagates_nan(path):
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        x = torch.tensor([float("nan"), -5.0, 0.5, 5.0, float("inf")], dtype=dtype)
        with conversions(path, 2):
            out = ops.clamp(x, -1.0, 1.0)
        assert_matches(out, torch.clamp(x, -1.0, 1.0))
        assert torch.isnan(out[0])


# --- cast ------------------------------------------------------------------------

CAST_CASES = [
    pytest.param(src, dst, id=f"{dtype_id(src)}-to-{dtype_id(dst)}")
    for src in cpu_kernel_dtypes("cast")
    for dst in CARRIED
]


@pytest.mark.parametrize("src,dst", CAST_CASES)
def test_cast_every_pair(path, src, dst):
    # Non-negative values keep float -> uint8 defined; fractions test truncation.
    if src.is_floating_point:
        x = (torch.arange(24, dtype=torch.float32).reshape(4, 6) * 3.7 % 97).to(src)
        x[0, 0] = 0
    else:
        x = make((4, 6), src, low=0, high=100) if src != torch.bool else make((4, 6), src)
    out = torch.empty((6, 4), dtype=dst).t()  # a strided out as well
    with conversions(path, 2):
        assert ops.cast(x.t().contiguous().t(), out=out) is out
    assert_matches(out, x.to(dst))


@pytest.mark.parametrize("src", [d for d in cpu_kernel_dtypes("cast") if d.is_floating_point])
def test_cast_float_to_signed_truncates_toward_zero(path, src):
    x = torch.tensor([-2.75, -1.5, -0.5, 0.0, 0.5, 1.5, 2.75, -100.25], dtype=src)
    for dst in (torch.int8, torch.int16, torch.int32, torch.int64, torch.bool, torch.float64):
        out = torch.empty(x.shape, dtype=dst)
        with conversions(path, 2):
            ops.cast(x, out=out)
        assert_matches(out, x.to(dst))


@pytest.mark.parametrize("layout_name", LAYOUT_NAMES)
def test_cast_layouts(path, layout_name):
    x = layout(layout_name, torch.float32)
    out = torch.empty(x.shape, dtype=torch.float64)
    with torch.no_grad(), conversions(path, 2):
        assert ops.cast(x, out=out) is out
    assert_matches(out, plain(x).to(torch.float64))


# --- noop ------------------------------------------------------------------------


def test_noop_bridges_every_tensor_and_returns_none(path):
    with conversions(path, 0):
        assert ops.noop() is None
    tensors = [layout(name, dt) for name in ("contiguous", "transposed", "zero_dim") for dt in CARRIED]
    with conversions(path, len(tensors)):
        assert ops.noop(*tensors) is None


def test_noop_counts_numpy_on_the_dlpack_path(path):
    with conversions(path, 1, dlpack=2):
        assert ops.noop(np.zeros(3, np.float32), torch.zeros(2), np.ones((2, 2))) is None
