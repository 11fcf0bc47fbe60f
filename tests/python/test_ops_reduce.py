"""softmax, rms_norm and silu_and_mul (the ops that read a row at a time)
against torch, for every dtype the CPU plugin carries."""

import pytest
import torch
import torch.nn.functional as F

from torchferry import ops
from conftest import MyT, assert_matches, conversions, cpu_kernel_dtypes, dtype_id, make, plain


def dtypes(op):
    return [pytest.param(d, id=dtype_id(d)) for d in cpu_kernel_dtypes(op)]


def _in_float32(fn, *tensors):
    """torch's result computed in float32 and rounded once to the inputs'
    dtype: what the ABI asks of half-precision kernels."""
    dtype = tensors[0].dtype
    up = [plain(t).to(torch.float32) if dtype != torch.float64 else plain(t) for t in tensors]
    return fn(*up).to(dtype)


# --- softmax ---------------------------------------------------------------------

SOFTMAX_SHAPES = [(7,), (3, 5), (2, 3, 4), (2, 3, 4, 5), (1, 1), (5, 1), (2, 0, 3)]
SOFTMAX_CASES = [
    pytest.param(shape, dim, id=f"{'x'.join(map(str, shape))}-dim{dim}")
    for shape in SOFTMAX_SHAPES
    for dim in range(-len(shape), len(shape))
]


@pytest.mark.parametrize("shape,dim", SOFTMAX_CASES)
@pytest.mark.parametrize("dtype", dtypes("softmax"))
def test_softmax_every_dim(path, dtype, shape, dim):
    x = make(shape, dtype)
    with conversions(path, 2):
        out = ops.softmax(x, dim)
    assert_matches(out, _in_float32(lambda t: torch.softmax(t, dim), x), reduce=True)
    with conversions(path, 2):
        out = ops.softmax(x, dim=dim)
    assert_matches(out, _in_float32(lambda t: torch.softmax(t, dim), x), reduce=True)


# Line lengths either side of each of the kernels' blocks: the vector groups
# (8 and 16 lanes, two and four vectors), the 4096 at which the 16-bit lines
# fuse widening with the max, and the 8192-element line buffer.
SOFTMAX_LINE_LENGTHS = [1, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 4095, 4097, 8191, 8192, 8193, 9000]


@pytest.mark.parametrize("n", SOFTMAX_LINE_LENGTHS)
@pytest.mark.parametrize("dtype", dtypes("softmax"))
def test_softmax_long_lines(dtype, n):
    g = torch.Generator().manual_seed(n)
    x = (torch.randn(3, n, generator=g) * 8).to(dtype)
    x[1, n // 2] = 60  # one value far above the rest: the max must be found
    x[2, 1 :: max(1, n // 7)] = float("-inf")  # masked positions weigh nothing
    out = ops.softmax(x, -1)
    assert_matches(out, _in_float32(lambda t: torch.softmax(t, -1), x), reduce=True)
    torch.testing.assert_close(out.double().sum(-1), torch.ones(3, dtype=torch.float64), rtol=0, atol=1e-2)


@pytest.mark.parametrize("dtype", dtypes("softmax"))
def test_softmax_default_dim_is_last(path, dtype):
    x = make((3, 4, 5), dtype)
    with conversions(path, 2):
        out = ops.softmax(x)
    assert_matches(out, _in_float32(lambda t: torch.softmax(t, -1), x), reduce=True)


@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("dtype", dtypes("softmax"))
def test_softmax_zero_dim(path, dtype, dim):
    x = make((), dtype)
    with conversions(path, 2):
        out = ops.softmax(x, dim)
    assert out.shape == ()
    assert_matches(out, torch.softmax(x, dim))


LAYOUTS_3D = {
    "transposed": lambda dt: make((4, 3, 5), dt).transpose(0, 2),
    "offset": lambda dt: make((3, 6, 7), dt)[1:, 2:, 1:6],
    "expanded": lambda dt: make((1, 4, 5), dt).expand(3, 4, 5),
    "stride0_last": lambda dt: make((3, 4, 1), dt).expand(3, 4, 5),
    "channels_last": lambda dt: make((2, 3, 4, 5), dt).to(memory_format=torch.channels_last)[0],
    "subclass": lambda dt: make((3, 4, 5), dt).as_subclass(MyT),
    "parameter": lambda dt: torch.nn.Parameter(make((3, 4, 5), dt)),
}


@pytest.mark.parametrize("layout_name", list(LAYOUTS_3D))
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", dtypes("softmax"))
def test_softmax_layouts(path, dtype, dim, layout_name):
    x = LAYOUTS_3D[layout_name](dtype)
    with torch.no_grad():
        expected = _in_float32(lambda t: torch.softmax(t, dim), x)
        out = torch.empty(x.shape[::-1], dtype=dtype).permute(2, 1, 0)  # strided out
        with conversions(path, 2):
            assert ops.softmax(x, dim, out=out) is out
    assert_matches(out, expected, reduce=True)


def test_softmax_is_stable_and_handles_inf(path):
    x = torch.tensor([[1000.0, 1001.0, 999.0], [-1000.0, -1e30, 0.0], [float("-inf"), 0.0, 1.0]])
    with conversions(path, 2):
        out = ops.softmax(x, -1)
    assert torch.isfinite(out).all()
    assert_matches(out, torch.softmax(x, -1), reduce=True)


def test_softmax_large_rows_release_the_gil(path):
    x = make((3, 40000))
    with conversions(path, 2):
        out = ops.softmax(x, 1)
    assert_matches(out, torch.softmax(x, 1), reduce=True)


# --- rms_norm --------------------------------------------------------------------


def rms_norm_ref(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


@pytest.mark.parametrize("shape", [(8,), (3, 8), (2, 3, 16), (2, 2, 2, 4), (0, 8), (4, 1), (5, 4096)])
@pytest.mark.parametrize("dtype", dtypes("rms_norm"))
def test_rms_norm_shapes(path, dtype, shape):
    x, w = make(shape, dtype), make(shape[-1:], dtype)
    with conversions(path, 3):
        out = ops.rms_norm(x, w)
    assert_matches(out, _in_float32(lambda a, b: rms_norm_ref(a, b, 1e-6), x, w), reduce=True)


@pytest.mark.parametrize("eps", [1e-6, 1e-2, 1.0, 0.0])
@pytest.mark.parametrize("dtype", dtypes("rms_norm"))
def test_rms_norm_eps(path, dtype, eps):
    x, w = make((4, 32), dtype), make((32,), dtype)
    with conversions(path, 3):
        out = ops.rms_norm(x, w, eps)
    assert_matches(out, _in_float32(lambda a, b: rms_norm_ref(a, b, eps), x, w), reduce=True)
    with conversions(path, 3):
        out = ops.rms_norm(x, w, eps=eps)
    assert_matches(out, _in_float32(lambda a, b: rms_norm_ref(a, b, eps), x, w), reduce=True)


def test_rms_norm_matches_torch_functional(path):
    x, w = make((6, 64)), make((64,))
    with conversions(path, 3):
        out = ops.rms_norm(x, w, 1e-5)
    assert_matches(out, F.rms_norm(x, (64,), w, 1e-5), reduce=True)


def test_rms_norm_eps_takes_an_int(path):
    x, w = make((3, 8)), make((8,))
    with conversions(path, 3):
        out = ops.rms_norm(x, w, 1)
    assert_matches(out, rms_norm_ref(x, w, 1.0), reduce=True)


@pytest.mark.parametrize("dtype", dtypes("rms_norm"))
def test_rms_norm_strided_operands(path, dtype):
    x = make((16, 6), dtype).t()  # last dim has stride 6
    w = make((32,), dtype)[::2]  # weight with stride 2
    out = torch.empty((16, 6), dtype=dtype).t()
    with conversions(path, 3):
        assert ops.rms_norm(x, w, 1e-6, out=out) is out
    assert_matches(out, _in_float32(lambda a, b: rms_norm_ref(a, b, 1e-6), x, w), reduce=True)
    xe = make((1, 16), dtype).expand(5, 16)
    we = make((1,), dtype).expand(16)
    with conversions(path, 3):
        out = ops.rms_norm(xe, we)
    assert_matches(out, _in_float32(lambda a, b: rms_norm_ref(a, b, 1e-6), xe, we), reduce=True)


def test_rms_norm_parameter_weight_under_no_grad(path):
    x = make((3, 8))
    w = torch.nn.Parameter(make((8,)))
    with torch.no_grad():
        with conversions(path, 3):
            out = ops.rms_norm(x, w)
        expected = rms_norm_ref(x, w.detach(), 1e-6)
    assert_matches(out, expected, reduce=True)


# --- silu_and_mul ----------------------------------------------------------------


def silu_and_mul_ref(x):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


@pytest.mark.parametrize("shape", [(2,), (4, 8), (2, 3, 16), (0, 4), (3, 0), (2, 2, 2, 6), (8, 8192)])
@pytest.mark.parametrize("dtype", dtypes("silu_and_mul"))
def test_silu_and_mul_shapes(path, dtype, shape):
    x = make(shape, dtype)
    with conversions(path, 2):
        out = ops.silu_and_mul(x)
    assert out.shape == shape[:-1] + (shape[-1] // 2,)
    assert_matches(out, _in_float32(silu_and_mul_ref, x))


@pytest.mark.parametrize("dtype", dtypes("silu_and_mul"))
def test_silu_and_mul_strided(path, dtype):
    x = make((10, 4), dtype).t()  # [4, 10], last dim stride 4
    out = torch.empty((5, 4), dtype=dtype).t()
    with conversions(path, 2):
        assert ops.silu_and_mul(x, out=out) is out
    assert_matches(out, _in_float32(silu_and_mul_ref, x))
    x = make((3, 20), dtype)[:, 2:14]  # storage offset, row stride 20
    with conversions(path, 2):
        out = ops.silu_and_mul(x)
    assert_matches(out, _in_float32(silu_and_mul_ref, x))
    x = make((1, 8), dtype).expand(3, 8)
    with conversions(path, 2):
        out = ops.silu_and_mul(x)
    assert_matches(out, _in_float32(silu_and_mul_ref, x))
