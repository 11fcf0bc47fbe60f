"""linear(input, weight, bias=None): torch's F.linear on the CPU plugin and
the ATen fallback, over dtypes, batch dims, weight layouts (nn.Linear's
[out, in] and a transposed view), offsets, broadcast and empty inputs, out=,
and every error path."""

import json

import pytest
import torch
import torch.nn.functional as F

from torchferry import ops
from torchferry.reference import REFERENCES
from conftest import needs_aten, run_python

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def tol(dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return dict(rtol=2e-2, atol=2e-2)
    return dict(rtol=1e-5, atol=1e-5) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-4)


def rand(*shape, dtype=torch.float32):
    return (torch.randn(shape) / 4).to(dtype)


def check(x, w, b=None, **kwargs):
    got = ops.linear(x, w, b, **kwargs)
    want = REFERENCES["linear"](x, w, b)
    torch.testing.assert_close(got, want, **tol(x.dtype))
    return got


# (input shape, out_features); in_features is the input's last dim.
SHAPES = [((8,), 5), ((1, 16), 7), ((3, 16), 9), ((2, 3, 16), 4), ((2, 2, 3, 16), 6), ((1, 256), 256), ((8, 64), 1)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,n", SHAPES, ids=str)
@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
def test_matches_torch(dtype, shape, n, bias):
    x = rand(*shape, dtype=dtype)
    w = rand(n, shape[-1], dtype=dtype)
    check(x, w, rand(n, dtype=dtype) if bias else None)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_weight_layouts_and_views(dtype):
    k, n = 24, 10
    x = rand(4, k, dtype=dtype)
    check(x, rand(k, n, dtype=dtype).t())  # a transposed view: [n, k] with strides (1, n)
    check(x, rand(n, 2 * k, dtype=dtype)[:, 3 : 3 + k])  # sliced, storage offset
    check(x, rand(n, k, 2, dtype=dtype)[..., 0])  # column stride 2
    check(rand(4, 2 * k, dtype=dtype)[:, ::2], rand(n, k, dtype=dtype))  # input column stride 2
    check(rand(7, k, dtype=dtype)[2:6], rand(n, k, dtype=dtype), rand(2 * n, dtype=dtype)[::2])
    check(rand(1, k, dtype=dtype).expand(5, k), rand(n, k, dtype=dtype))  # broadcast rows (stride 0)
    check(rand(3, 4, k, dtype=dtype).transpose(0, 1), rand(n, k, dtype=dtype))  # batch dims as [B, M]


def test_out_and_its_layouts():
    x, w, b = rand(2, 3, 16), rand(5, 16), rand(5)
    want = F.linear(x, w, b)
    out = torch.empty(2, 3, 5)
    assert ops.linear(x, w, b, out=out) is out
    torch.testing.assert_close(out, want, **tol(x.dtype))
    strided = torch.empty(5, 3, 2).permute(2, 1, 0)
    ops.linear(x, w, b, out=strided)
    torch.testing.assert_close(strided, want, **tol(x.dtype))


def test_empty_and_zero_inner_dim():
    assert ops.linear(rand(0, 8), rand(3, 8)).shape == (0, 3)
    assert ops.linear(rand(2, 0, 8), rand(3, 8), rand(3)).shape == (2, 0, 3)
    assert ops.linear(rand(4, 8), rand(0, 8)).shape == (4, 0)
    got = ops.linear(rand(4, 0), rand(3, 0), torch.tensor([1.0, 2.0, 3.0]))
    torch.testing.assert_close(got, torch.tensor([[1.0, 2.0, 3.0]]).expand(4, 3))


def test_llama_shapes_against_nn_linear():
    layer = torch.nn.Linear(256, 688, bias=False)
    x = torch.randn(1, 1, 256)
    with torch.no_grad():
        torch.testing.assert_close(ops.linear(x, layer.weight), layer(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "args,kind,words",
    [
        ((rand(4, 8), rand(8)), ValueError, "weight"),
        ((rand(4, 8), rand(3, 7)), ValueError, "in_features"),
        ((rand(4, 8), rand(3, 8), rand(4)), ValueError, "bias"),
        ((rand(4, 8), rand(3, 8), rand(1, 3)), ValueError, "bias"),
        ((torch.tensor(1.0), rand(3, 1)), ValueError, "at least 1-D"),
        ((rand(4, 8), rand(3, 8, dtype=torch.float64)), TypeError, "dtype"),
        ((torch.ones(4, 8, dtype=torch.int32), torch.ones(3, 8, dtype=torch.int32)), TypeError, "float"),
    ],
)
def test_errors(args, kind, words):
    with pytest.raises(kind, match=words):
        ops.linear(*args)


def test_out_overlapping_an_input_is_refused():
    x = rand(4, 4)
    with pytest.raises(ValueError, match="overlap|alias|share"):
        ops.linear(x, rand(4, 4), out=x)


def test_wrong_out_shape_is_refused():
    with pytest.raises(ValueError, match="out"):
        ops.linear(rand(4, 8), rand(3, 8), out=torch.empty(4, 4))


def test_leading_dims_that_nest_in_no_way_repeat_the_call():
    # [3, 2, 4, K] and [2, 3, 2, 4, K] permuted so that neither every leading
    # dim nor all but the last collapse: the kernel takes the last two and
    # the host repeats it over the others.
    x = rand(4, 2, 3, 8).permute(1, 0, 2, 3).transpose(0, 2)
    assert not x.is_contiguous()
    for bias in (None, rand(5)):
        check(x, rand(5, 8), bias)
    x5 = rand(3, 2, 4, 2, 8).permute(1, 0, 3, 2, 4)
    check(x5, rand(6, 8), rand(6))
    check(x5[:, :, 1:], rand(6, 8))  # an offset into the repeated dims
    # out strided the other way from input; every element written once
    xin, w = x5.transpose(1, 2), rand(6, 8)
    out = torch.full((2, 3, 2, 4, 6), float("nan")).permute(0, 2, 1, 3, 4)
    assert ops.linear(xin, w, out=out) is out
    torch.testing.assert_close(out, REFERENCES["linear"](xin, w, None), **tol(torch.float32))
    check(rand(0, 3, 4, 8).permute(2, 0, 1, 3), rand(5, 8))  # an empty repeated dim


def test_requires_grad_is_refused_under_grad_mode():
    w = rand(3, 8).requires_grad_()
    with pytest.raises(RuntimeError, match="requires grad"):
        ops.linear(rand(4, 8), w)
    with torch.no_grad():
        check(rand(4, 8), w.detach())


def aten_cases():
    results = {}
    for dt in DTYPES:
        for shape, n in SHAPES:
            x, w, b = rand(*shape, dtype=dt), rand(n, shape[-1], dtype=dt), rand(n, dtype=dt)
            for bias in (None, b):
                got = ops.linear(x, w, bias)
                want = REFERENCES["linear"](x, w, bias)
                results[f"{shape} {n} {dt} {bias is not None}"] = bool(torch.allclose(got, want, **tol(dt)))
        x, w = rand(4, 24, dtype=dt), rand(24, 10, dtype=dt).t()
        results[f"weight.t() {dt}"] = bool(torch.allclose(ops.linear(x, w), REFERENCES["linear"](x, w), **tol(dt)))
    return results


@needs_aten
def test_aten_fallback_matches_torch():
    r = run_python(
        """
        import json
        from torchferry import plugins
        import test_ops_linear as t
        print(json.dumps({"served": plugins.kernel_for("linear", "cpu", "float32"), "checks": t.aten_cases()}))
        """,
        TORCHFERRY_PLUGINS="-cpu,-example_c",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["served"] == "aten"
    failed = [k for k, ok in result["checks"].items() if not ok]
    assert not failed, failed
    assert len(result["checks"]) > 50
