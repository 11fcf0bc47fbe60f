"""A Python number where add and mul take a tensor: ops.mul(x, 0.5),
ops.add(x, 1). The result has torch's dtype where torch keeps the tensor's
(a number of the tensor's kind or a lower one: bool < int < float); where
torch would promote, the call is a TypeError that says so, and a number
that does not fit the dtype is torch's OverflowError."""

import pytest
import torch

from torchferry import ops, plugins
from conftest import make

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def served(op, dtype):
    from torchferry import plugins

    return plugins.kernel_for(op, "cpu", str(dtype).split(".")[1]) is not None


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool], ids=str)
@pytest.mark.parametrize("number", [0.5, -3, 7, True, False, 1e30, float("inf"), float("nan")], ids=repr)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_a_number_matches_torch(op, number, dtype):
    if not served(op, dtype):
        pytest.skip(f"no plugin serves {op} for {dtype}")
    x = make((3, 5), dtype)
    try:
        expected = getattr(torch, op)(x, number)
    except RuntimeError:
        expected = None  # e.g. an int out of the dtype's range
    if expected is None or expected.dtype != dtype:
        with pytest.raises((TypeError, OverflowError)):
            getattr(ops, op)(x, number)
        return
    got = getattr(ops, op)(x, number)
    assert got.dtype == dtype
    torch.testing.assert_close(got, expected, equal_nan=True, atol=0, rtol=0)


def test_alpha_and_out_and_strides_with_a_number():
    x = make((6, 4), torch.float32).t()
    out = torch.empty(4, 6)
    assert ops.add(x, 2.5, alpha=-2, out=out) is out
    torch.testing.assert_close(out, torch.add(x, 2.5, alpha=-2))
    y = make((4, 6), torch.float16)
    expected = y * 0.1
    assert ops.mul(y, 0.1, out=y) is y  # in place: the number aliases nothing
    torch.testing.assert_close(y, expected)


def test_where_torch_promotes_the_call_says_so():
    with pytest.raises(TypeError, match=r"add\(\): other is a float but input has dtype int32; torch would promote"):
        ops.add(torch.ones(3, dtype=torch.int32), 0.5)
    with pytest.raises(TypeError, match=r"mul\(\): other is an int but input has dtype bool"):
        ops.mul(torch.ones(3, dtype=torch.bool), 2)
    with pytest.raises(TypeError, match=r"clamp\(\): max is an int but input has dtype bool; torch would promote"):
        ops.clamp(torch.tensor([True, False, True]), max=-3)  # torch: int64 [-3, -3, -3]
    # add's number is torch's wrapped number: an int past int8 wraps, as torch's.
    x = torch.ones(3, dtype=torch.int8)
    if plugins.kernel_for("add", "cpu", "int8") is not None:  # the ATen plugin's, where built
        assert torch.equal(ops.add(x, 1000), torch.add(x, 1000))


def test_a_number_is_not_the_first_argument():
    with pytest.raises(TypeError, match="input"):
        ops.add(2, torch.ones(3))


def test_other_objects_are_still_refused():
    with pytest.raises(TypeError, match="got str"):
        ops.mul(torch.ones(3), "2")
    with pytest.raises(TypeError, match="got complex"):
        ops.mul(torch.ones(3), 2j)
