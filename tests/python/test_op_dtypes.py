"""The dtypes each op lists in ops.schemas() (and ABI.md) are exactly those
the default plugins serve on the CPU: every listed (op, dtype) is called here
and compared with torch where torch computes it, and no plugin kernel on the
CPU goes unlisted."""

import pytest
import torch

from torchferry import ops, plugins
from torchferry.reference import REFERENCES
from conftest import make, needs_aten

SCHEMAS = [s for s in ops.schemas() if s["declared_by"] is None]
DEFAULT_PLUGINS = ("cpu", "aten")
WIDE_UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)


def served_on_cpu():
    """{op: {dtype name}} over the default plugins' CPU kernels."""
    served = {}
    for p in plugins.loaded():
        if p["name"] in DEFAULT_PLUGINS:
            for op, device, dtype in p["kernels"]:
                if device == "cpu":
                    served.setdefault(op, set()).add(dtype)
    return served


def exact(ours, expected):
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    if ours.dtype in WIDE_UNSIGNED:  # torch compares few ops on these
        ours, expected = ours.to(torch.int64), expected.to(torch.int64)
    assert torch.equal(ours, expected), (ours, expected)


def wide(fn, *tensors):
    """fn over int64 copies of the wide unsigned tensors, back to their dtype
    (torch has no add, abs, clamp... for them; values stay small)."""
    return fn(*(t.to(torch.int64) for t in tensors)).to(tensors[0].dtype)


def run_elementwise(op, dt):
    x, y = make((4, 6), dt), make((4, 6), dt)
    if op in ("abs", "neg", "exp", "silu"):
        return getattr(ops, op)(x), REFERENCES[op](x), op in ("abs", "neg")
    if op == "add":
        if dt in WIDE_UNSIGNED:
            return ops.add(x, y), wide(torch.add, x, y), True
        return ops.add(x, y), torch.add(x, y), True
    if op == "mul":
        return ops.mul(x, y), torch.mul(x, y), True
    # clamp, with tensor bounds; torch's clamp has no kernel for bool with
    # both, so the reference is the definition, min(max(x, lo), hi).
    lo, hi = make((4, 6), dt), make((1, 6), dt)
    return ops.clamp(x, lo, hi), torch.minimum(torch.maximum(x, lo), hi), True


def run(op, dt):
    """(ours, torch's, exact?) for one call of `op` on dtype `dt`."""
    if op in ("abs", "neg", "exp", "silu", "add", "mul", "clamp"):
        return run_elementwise(op, dt)
    x = make((2, 4, 6), dt)
    if op == "stack":
        return ops.stack([x, x], dim=1), torch.stack([x, x], 1), True
    if op == "cat":
        return ops.cat([x, x], dim=2), torch.cat([x, x], 2), True
    if op == "cast":
        out = torch.empty(x.shape, dtype=torch.float64)
        return ops.cast(x, out=out), x.to(torch.float64), True
    if op == "embedding":
        ids = torch.tensor([[0, 3], [5, 1]])
        table = make((6, 5), dt)
        # torch before 2.10 has no index kernel for uint16 - uint64.
        expected = wide(lambda t: t[ids], table) if dt in WIDE_UNSIGNED else table[ids]
        return ops.embedding(ids, table), expected, True
    if op == "noop":
        assert ops.noop(x) is None
        return None, None, True
    w = make((6,), dt)
    if op == "rms_norm":
        return ops.rms_norm(x, w), REFERENCES[op](x, w), False
    if op == "add_rms_norm":
        r = make((2, 4, 6), dt)
        r_ref = r.clone()
        expected = REFERENCES[op](x, r_ref, w)
        return ops.add_rms_norm(x, r, w), expected, False
    if op in ("silu_and_mul", "softmax"):
        return getattr(ops, op)(x), REFERENCES[op](x), False
    if op == "matmul":
        b = make((2, 6, 3), dt)
        return ops.matmul(x, b), REFERENCES[op](x, b), False
    if op == "linear":
        weight, bias = make((3, 6), dt), make((3,), dt)
        return ops.linear(x, weight, bias), REFERENCES[op](x, weight, bias), False
    if op == "rotary_embedding":
        cos, sin = make((2, 4, 3), dt), make((2, 4, 3), dt)
        return ops.rotary_embedding(x, cos, sin), REFERENCES[op](x, cos, sin), False
    if op == "scaled_dot_product_attention":
        q, k, v = make((1, 2, 4, 6), dt), make((1, 2, 5, 6), dt), make((1, 2, 5, 6), dt)
        return ops.scaled_dot_product_attention(q, k, v), REFERENCES[op](q, k, v), False
    raise AssertionError(f"no call written for op {op}: add one here")


DECLARED = [pytest.param(s["name"], dt, id=f"{s['name']}-{dt}") for s in SCHEMAS for dt in s["dtypes"]]


@needs_aten
@pytest.mark.parametrize("op, dtype", DECLARED)
def test_every_declared_dtype_is_served_and_matches_torch(op, dtype):
    ours, expected, is_exact = run(op, getattr(torch, dtype))
    if ours is None:
        return
    if is_exact:
        exact(ours, expected)
    else:  # computed in another order than torch's: close, not equal
        assert ours.dtype == expected.dtype and ours.shape == expected.shape
        tol = 5e-2 if ours.element_size() == 2 else 1e-5
        torch.testing.assert_close(ours, expected, rtol=tol, atol=tol)


@needs_aten
def test_the_declared_dtypes_are_exactly_those_served():
    served = served_on_cpu()
    for s in SCHEMAS:
        assert set(s["dtypes"]) == served.get(s["name"], set()), s["name"]
        assert len(s["dtypes"]) == len(set(s["dtypes"])), s["name"]


def test_what_torch_refuses_is_not_declared():
    """abs and neg of bool and the wide unsigned dtypes have no torch
    meaning; an op listing them would promise what no plugin serves."""
    by_name = {s["name"]: s["dtypes"] for s in SCHEMAS}
    for op in ("abs", "neg"):
        assert "uint8" in by_name[op]
        assert not {"bool", "uint16", "uint32", "uint64"} & set(by_name[op])
    assert {"bool", "uint8", "int8"} <= set(by_name["clamp"])
    assert {"uint16", "uint32", "uint64", "bool"} <= set(by_name["add"])
    for op in ("exp", "silu", "rms_norm", "softmax", "matmul", "linear"):
        assert by_name[op] == ["float32", "float64", "float16", "bfloat16"]


def test_clamp_serves_bool_as_torch_computes_it():
    x = torch.tensor([[False, True], [True, False]])
    for lo, hi in [(x.t(), None), (None, x.t()), (x.t(), ~x), (torch.tensor(True), None)]:
        expected = x
        if lo is not None:
            expected = torch.maximum(expected, lo)
        if hi is not None:
            expected = torch.minimum(expected, hi)
        assert torch.equal(ops.clamp(x, lo, hi), expected)
    # Where torch's own clamp takes bool, it agrees.
    assert torch.equal(ops.clamp(x, min=x.t()), torch.clamp(x, min=x.t()))
    assert torch.equal(ops.clamp(x, max=x.t()), torch.clamp(x, max=x.t()))
    # A bool number bound is a bool tensor's; an int bound would make torch
    # promote the result to int64, which torchferry refuses.
    assert torch.equal(ops.clamp(x, min=True), torch.ones_like(x))
    assert torch.equal(ops.clamp(x, max=False), torch.zeros_like(x))
    assert torch.clamp(x, min=0, max=1).dtype == torch.int64
    with pytest.raises(TypeError, match="promote"):
        ops.clamp(x, min=0, max=1)


def test_abs_and_neg_of_uint8_are_torch_s():
    x = torch.arange(256, dtype=torch.int64).to(torch.uint8)
    assert torch.equal(ops.abs(x), torch.abs(x))
    assert torch.equal(ops.neg(x), torch.neg(x))  # wraps modulo 2**8
    ops.neg(x, out=x)
    assert torch.equal(x, torch.neg(torch.arange(256).to(torch.uint8)))


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED, ids=str)
def test_add_of_the_wide_unsigned_dtypes_wraps(dtype):
    bits = torch.iinfo(dtype).bits
    top = 2**bits - 1
    x = torch.tensor([top - 1, top, 5, 0], dtype=torch.uint64).to(dtype) if bits < 64 else None
    if x is None:
        x = torch.tensor([-2, -1, 5, 0], dtype=torch.int64).view(torch.uint64)
    y = torch.tensor([1, 2, 7, 0], dtype=torch.int64).to(dtype)
    got = ops.add(x, y, alpha=3)
    # wrapped modulo 2**bits: top - 1 + 3 and top + 6 go around
    expected = [(top - 1 + 3) % 2**bits, (top + 6) % 2**bits, 26, 0]
    assert [int(v) & top for v in got.to(torch.int64).tolist()] == expected
    assert got.dtype == dtype
