"""add_rms_norm (residual += input in place, then rms_norm of residual)
against torch's two calls, over dtypes, shapes and layouts, with the
residual's update, its version counter and every refusal checked."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from torchferry import ops
from torchferry.reference import REFERENCES
from conftest import assert_matches, conversions, cpu_kernel_dtypes, dtype_id, make


def dtypes():
    return [pytest.param(d, id=dtype_id(d)) for d in cpu_kernel_dtypes("add_rms_norm")]


def torch_two_calls(x, residual, weight, eps=1e-6):
    """(out, new residual) as a decoder computes them with torch ops: the norm
    in float32 for the half types, rounded once, as the ABI asks."""
    r = residual.clone()
    r += x
    up = torch.float64 if x.dtype == torch.float64 else torch.float32
    out = F.rms_norm(r.to(up), (r.shape[-1],), weight.to(up), eps).to(x.dtype)
    return out, r


@pytest.mark.parametrize("shape", [(8,), (3, 8), (2, 3, 16), (1, 256), (5, 4096), (0, 8), (4, 1)])
@pytest.mark.parametrize("dtype", dtypes())
def test_shapes(path, dtype, shape):
    x, residual, w = make(shape, dtype), make(shape, dtype), make(shape[-1:], dtype)
    expected, expected_residual = torch_two_calls(x, residual, w)
    version = residual._version
    with conversions(path, 4):
        out = ops.add_rms_norm(x, residual, w)
    # The add is exact in the dtype, as torch's add: the residual is equal.
    assert torch.equal(residual, expected_residual)
    assert_matches(out, expected, reduce=True)
    assert residual._version > version  # autograd sees the write


@pytest.mark.parametrize("eps", [1e-6, 1e-2, 1])
@pytest.mark.parametrize("dtype", dtypes())
def test_eps_and_out(path, dtype, eps):
    x, residual, w = make((4, 32), dtype), make((4, 32), dtype), make((32,), dtype)
    expected, expected_residual = torch_two_calls(x, residual, w, float(eps))
    out = torch.empty((32, 4), dtype=dtype).t()  # a strided out=
    with conversions(path, 4):  # out= is bridged as an allocated out is
        assert ops.add_rms_norm(x, residual, w, eps=eps, out=out) is out
    assert torch.equal(residual, expected_residual)
    assert_matches(out, expected, reduce=True)


@pytest.mark.parametrize("dtype", dtypes())
def test_strided_and_broadcast_operands(path, dtype):
    x = make((1, 16), dtype).expand(5, 16)  # a broadcast input is only read
    residual = make((16, 5), dtype).t()  # a transposed residual, written
    w = make((32,), dtype)[::2]
    expected, expected_residual = torch_two_calls(x, residual, w)
    with conversions(path, 4):
        out = ops.add_rms_norm(x, residual, w)
    assert torch.equal(residual, expected_residual)
    assert_matches(out, expected, reduce=True)
    # A residual that is a view into a bigger buffer (a slot of a cache):
    # only its elements change.
    buf = make((3, 4, 16), dtype)
    before = buf.clone()
    x2, w2 = make((4, 16), dtype), make((16,), dtype)
    expected, expected_residual = torch_two_calls(x2, buf[1], w2)
    with conversions(path, 4):
        out = ops.add_rms_norm(x2, buf[1], w2)
    assert torch.equal(buf[1], expected_residual)
    assert torch.equal(buf[0], before[0]) and torch.equal(buf[2], before[2])
    assert_matches(out, expected, reduce=True)


def test_reference_is_the_two_calls():
    x, residual, w = make((3, 64)), make((3, 64)), make((64,))
    mine = residual.clone()
    out = REFERENCES["add_rms_norm"](x, mine, w, eps=1e-6)
    expected, expected_residual = torch_two_calls(x, residual, w)
    assert torch.equal(mine, expected_residual)
    assert_matches(out, expected, reduce=True)


def test_a_decoder_layer_chain(path):
    # h = x; for each layer: normed = add_rms_norm(delta, h, w): h carries
    # the running sum, as in vLLM's decoder.
    h_mine, h_torch = make((2, 128)), None
    h_torch = h_mine.clone()
    for _ in range(4):
        delta, w = make((2, 128)), make((128,))
        mine = ops.add_rms_norm(delta, h_mine, w)
        expected, h_torch = torch_two_calls(delta, h_torch, w)
        assert torch.equal(h_mine, h_torch)
        assert_matches(mine, expected, reduce=True)


def test_a_numpy_residual_is_written_through_dlpack():
    x, w = make((2, 8)), make((8,))
    residual = np.ones((2, 8), dtype=np.float32)
    out = ops.add_rms_norm(x, residual, w)
    expected, expected_residual = torch_two_calls(x, torch.ones(2, 8), w)
    assert torch.equal(torch.from_numpy(residual), expected_residual)
    assert_matches(out, expected, reduce=True)


def refusal(exc, match, *args, **kwargs):
    with pytest.raises(exc, match=match):
        ops.add_rms_norm(*args, **kwargs)


def test_refusals_leave_the_residual_untouched():
    x, w = make((3, 8)), make((8,))
    residual = make((3, 8))
    saved = residual.clone()
    refusal(ValueError, r"expected residual of shape \[3, 8\], got \[8\]", x, make((8,)), w)
    refusal(TypeError, "residual", x, make((3, 8), torch.float64), w)
    refusal(ValueError, r"expected weight of shape \[8\]", x, residual, make((4,)))
    refusal(ValueError, "at least one dim", torch.tensor(1.0), torch.tensor(1.0), make((1,)))
    refusal(ValueError, "residual has stride 0", x, make((1, 8)).expand(3, 8), w)
    # The same tensor as input and residual would double, not sum.
    refusal(ValueError, r"residual overlaps input in memory \(this op does not work in place\)", residual, residual, w)
    refusal(ValueError, "out overlaps residual", x, residual, w, out=residual)
    refusal(ValueError, "out overlaps input", x, residual, w, out=x)
    refusal(TypeError, "floating-point", x.int(), residual.int(), w.int())
    ro = np.ones((3, 8), dtype=np.float32)
    ro.flags.writeable = False
    refusal(ValueError, "read-only", x, ro, w)
    refusal(TypeError, "eps", x, residual, w, eps="big")
    refusal(TypeError, "positional", x, residual, w, 1e-6)
    assert torch.equal(residual, saved)


def test_grad_is_refused_not_dropped():
    x, w = make((3, 8)), make((8,))
    residual = make((3, 8)).requires_grad_()
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        ops.add_rms_norm(x, residual, w)
    with torch.no_grad():
        before = residual.clone()
        ops.add_rms_norm(x, residual, w)
        assert torch.equal(residual, before + x)


def test_inference_tensor_residual_outside_inference_mode_is_refused():
    x, w = make((3, 8)), make((8,))
    with torch.inference_mode():
        residual = make((3, 8))
    # The message names the argument written in place, not out.
    with pytest.raises(RuntimeError, match="residual is an inference tensor"):
        ops.add_rms_norm(x, residual, w)
    out = make((3, 8))
    with pytest.raises(RuntimeError, match="residual is an inference tensor"):
        ops.add_rms_norm(x, residual, w, out=out)


def test_signature_and_schema():
    (schema,) = [s for s in ops.schemas() if s["name"] == "add_rms_norm"]
    assert schema["signature"] == "add_rms_norm(input, residual, weight, *, eps=1e-06, out=None, stream=None)"
    residual = [a for a in schema["args"] if a["name"] == "residual"][0]
    assert residual["written"] and not residual["kwarg_only"]
