"""uint16, uint32 and uint64: carried like the other dtypes, computed where
torch computes them (mul, cast, and the ops that move data), refused where
it does not; Python ints past int64 reach uint64 as torch takes them."""

import json

import pytest
import torch

from torchferry import ops
from conftest import needs_aten, run_python, same

WIDE = [torch.uint16, torch.uint32, torch.uint64]


def outcome(fn):
    try:
        return fn().tolist()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("value", [3, 0, -1, -(2**15), 2**16 + 3, 2**32 + 7, 2**63 + 5, 2**64 - 1, 2**64, -(2**63)])
def test_mul_by_a_python_int_as_torch(dtype, value):
    x = torch.tensor([0, 1, 2, 40000, 65535], dtype=torch.int64).to(dtype)
    assert outcome(lambda: ops.mul(x, value)) == outcome(lambda: torch.mul(x, value))


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_mul_wraps_and_broadcasts_as_torch(dtype):
    big = torch.iinfo(dtype).max
    x = torch.tensor([[big, big - 1, 3]], dtype=dtype)
    y = torch.tensor([[2], [big]], dtype=dtype)
    assert same(ops.mul(x, y), torch.mul(x, y))
    out = torch.empty(3, 2, dtype=dtype).t()
    ops.mul(x, y, out=out)
    assert same(out, torch.mul(x, y))


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("source", [torch.float32, torch.float64, torch.int64, torch.int8, torch.bool, torch.float16])
def test_cast_to_and_from_as_torch(dtype, source):
    values = [0, 1, 7.9, 255, 65535, 65536.5, 2**31, 2**32 - 1, 2**40, 2**53, 2**63, 1.5 * 2**63, -1.5, -3]
    x = torch.tensor(values, dtype=torch.float64).to(source)
    if source.is_floating_point:
        # In range, and the small negatives that wrap through int64 as
        # torch's do; torch leaves other values to the compiler.
        wide = x.double()
        x = x[((wide >= 0) & (wide < float(2 ** torch.iinfo(dtype).bits))) | ((wide < 0) & (wide > -(2**31)))]
    out = torch.empty(x.shape, dtype=dtype)
    ops.cast(x, out=out)
    assert same(out, x.to(dtype)), (x.tolist(), out.tolist(), x.to(dtype).tolist())
    back = torch.empty(x.shape, dtype=source)
    ops.cast(out, out=back)
    assert same(back, out.to(source))


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_moving_data(dtype):
    x = torch.tensor([[1, 2**15, 3], [4, 5, torch.iinfo(dtype).max]], dtype=dtype)
    assert same(ops.cat([x, x[:, :1]], 1), torch.cat([x, x[:, :1]], 1))
    assert same(ops.stack([x, x.t().t()]), torch.stack([x, x]))
    ids = torch.tensor([1, 0, 1])
    assert same(ops.embedding(ids, x), torch.nn.functional.embedding(ids, x))


@pytest.mark.parametrize("dtype", WIDE, ids=str)
@pytest.mark.parametrize("op", ["abs", "neg"])
def test_what_torch_does_not_compute_is_refused_by_name(dtype, op):
    # (clamp, which torch 2.15 computes for them and earlier torches refuse,
    # has no kernel for them either. add, which torch lacks too, the cpu
    # plugin serves, wrapping: test_op_dtypes.py.)
    x = torch.ones(3, dtype=dtype)
    args = {"add": (x, x), "abs": (x,), "neg": (x,)}[op]
    with pytest.raises(RuntimeError, match="not implemented for"):
        getattr(torch, op)(*args)  # torch refuses it too
    with pytest.raises(NotImplementedError, match=f"no loaded plugin has a kernel for {str(dtype)[6:]}"):
        getattr(ops, op)(*args)


@needs_aten
def test_mul_and_cast_on_the_aten_fallback():
    r = run_python(
        """
        import json, torch
        from torchferry import ops, plugins
        from conftest import same
        ok = []
        for dt in (torch.uint16, torch.uint32, torch.uint64):
            assert plugins.kernel_for("mul", "cpu", str(dt)[6:]) == "aten"
            x = torch.tensor([1, 2, 300, 65535], dtype=dt)
            ok.append(same(ops.mul(x, x), torch.mul(x, x)))
            out = torch.empty(4, dtype=torch.float64)
            ops.cast(x, out=out)
            ok.append(same(out, x.to(torch.float64)))
        print("REPORT" + json.dumps(ok))
        """,
        TORCHFERRY_PLUGINS="aten",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.split("REPORT", 1)[1]) == [True] * 6
