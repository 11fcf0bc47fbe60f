"""mul's Python number reaches the kernel unrounded and is applied in the
op-math type: float32 for float16 and bfloat16, where torch computes x * 0.3
as float32(x) * float32(0.3), rounded once. add's number is rounded to the
dtype first, as torch rounds it. Checked over every one of the 65,536
float16 and bfloat16 values."""

import json
import math

import pytest
import torch

from torchferry import ops
from conftest import run_python

HALVES = [torch.float16, torch.bfloat16]
NUMBERS = [0.3, 1 / 3, 1e5, -2.7, 7, 1e-8, 0.0, -0.0, 65504.5, 3e38, float("inf"), float("nan")]


def every_value(dtype):
    return torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)


def bitwise_equal(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    same = (a.view(torch.int16) == b.view(torch.int16)) | (a.isnan() & b.isnan())
    wrong = (~same).nonzero().flatten()
    assert wrong.numel() == 0, f"{wrong.numel()} differ, e.g. at {wrong[:5].tolist()}: {a[wrong[:5]]} != {b[wrong[:5]]}"


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("number", NUMBERS, ids=repr)
def test_mul_by_a_number_is_torch_s_bit_for_bit(dtype, number):
    x = every_value(dtype)
    bitwise_equal(ops.mul(x, number), torch.mul(x, number))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("number", NUMBERS, ids=repr)
@pytest.mark.parametrize("alpha", [1, 0.1, -1.7, 3], ids=repr)
def test_add_of_a_number_is_torch_s_bit_for_bit(dtype, number, alpha):
    # torch rounds add's number (and alpha) to the dtype, unlike mul's, then
    # computes x + alpha * number in float32 as one fused multiply-add (its
    # vector loop; every_value's 65536 elements leave no scalar tail) and
    # rounds once. Where alpha * number overflows float32 only the fused sum
    # is finite: the CPU plugin fuses it explicitly, so a build by any
    # compiler (clang's sanitizer build too) gives torch's bits.
    x = every_value(dtype)
    bitwise_equal(ops.add(x, number, alpha=alpha), torch.add(x, number, alpha=alpha))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_the_answers_are_no_farther_from_the_exact_product_than_torch_s(dtype):
    x = every_value(dtype)
    finite = x.isfinite()
    for number in (0.3, 1 / 3):
        exact = x.double() * number
        ours = (ops.mul(x, number).double() - exact).abs()[finite]
        theirs = (torch.mul(x, number).double() - exact).abs()[finite]
        assert torch.equal(ours, theirs)


def test_a_product_past_float16_s_range_on_the_way_is_not_inf():
    x = torch.tensor([1e-3, 0.0, -0.0, 2.0], dtype=torch.float16)
    got = ops.mul(x, 1e5)
    bitwise_equal(got, torch.mul(x, 1e5))
    assert got[0].item() == pytest.approx(100.0625)
    assert got[1].item() == 0 and not math.copysign(1, got[1].item()) < 0
    assert math.copysign(1, got[2].item()) < 0  # -0.0 * 1e5 keeps its sign
    assert math.isinf(got[3].item())  # 2e5 is past float16's range: inf, as torch
    # add rounds its number to float16 first, as torch does: 1e5 is inf there.
    y = torch.tensor([-1e4], dtype=torch.float16)
    bitwise_equal(ops.add(y, 1e5, alpha=0.1), torch.add(y, 1e5, alpha=0.1))
    assert math.isinf(ops.add(y, 1e5, alpha=0.1).item())


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_out_strides_and_broadcast_with_a_folded_number(dtype):
    base = every_value(dtype)[:4096].reshape(64, 64)
    x = base.t()[::2]  # strided
    expected = torch.mul(x, 0.3)
    bitwise_equal(ops.mul(x, 0.3), expected)
    out = torch.empty_like(expected)
    assert ops.mul(x, 0.3, out=out) is out
    bitwise_equal(out, expected)
    y = x.clone()
    assert ops.mul(y, 0.3, out=y) is y  # in place
    bitwise_equal(y, expected)
    z = x.clone()
    assert ops.add(z, 0.3, alpha=2, out=z) is z
    bitwise_equal(z, torch.add(x, 0.3, alpha=2))
    zero_dim = torch.tensor(1e-3, dtype=dtype)
    bitwise_equal(ops.mul(zero_dim, 1e5), torch.mul(zero_dim, 1e5))
    empty = torch.empty(0, 3, dtype=dtype)
    assert ops.mul(empty, 0.3).shape == (0, 3)


def test_ints_and_bools_as_numbers_on_halves_and_wider_floats_are_unchanged():
    x = every_value(torch.float16)
    bitwise_equal(ops.mul(x, 3), torch.mul(x, 3))
    bitwise_equal(ops.mul(x, True), torch.mul(x, True))
    for dtype in (torch.float32, torch.float64):
        y = torch.randn(1000, dtype=dtype)
        torch.testing.assert_close(ops.mul(y, 0.3), torch.mul(y, 0.3), rtol=0, atol=0)
        torch.testing.assert_close(ops.add(y, 0.3), torch.add(y, 0.3), rtol=0, atol=0)


def test_a_folded_number_keeps_the_checks_of_any_number():
    x = torch.ones(3, dtype=torch.float16)
    with pytest.raises(TypeError, match=r"mul\(\): other"):
        ops.mul(x, "0.3")
    with pytest.raises(OverflowError):
        ops.mul(x, 10**400)


@pytest.mark.subprocess
def test_the_aten_fallback_applies_a_folded_number_in_float32_too():
    r = run_python(
        """
        import json, torch
        from torchferry import ops, plugins
        served = plugins.kernel_for("add", "cpu", "float16")
        bits = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
        same = {}
        for dt in (torch.float16, torch.bfloat16):
            x = bits.view(dt)
            pairs = {
                "mul": (ops.mul(x, 0.3), torch.mul(x, 0.3)),
                "add": (ops.add(x, 0.3, alpha=0.1), torch.add(x, 0.3, alpha=0.1)),
                "add tensor": (ops.add(x, x.flip(0), alpha=0.1), torch.add(x, x.flip(0), alpha=0.1)),
            }
            for name, (got, want) in pairs.items():
                ok = (got.view(torch.int16) == want.view(torch.int16)) | (got.isnan() & want.isnan())
                same[f"{name} {dt}"] = bool(ok.all())
        tiny = ops.mul(torch.tensor([1e-3], dtype=torch.float16), 1e5).item()
        print(json.dumps({"served": served, "same": same, "tiny": tiny}))
        """,
        TORCHFERRY_PLUGINS="-cpu,-example_c",
    )
    if r.returncode != 0 and "no loaded plugin has a kernel" in r.stderr:
        pytest.skip("this build has no ATen plugin (-Daten=disabled)")
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["served"] == "aten"
    assert all(result["same"].values()), result["same"]
    assert result["tiny"] == pytest.approx(100.0625)
