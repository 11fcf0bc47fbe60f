"""stack (every dim, every carried dtype, mixed layouts) and matmul (torch.
matmul's rules: 1-D operands, batch dims of any count that broadcast,
strided and expanded operands, batch dims that the host cannot merge)
against torch."""

import pytest
import torch

from torchferry import ops
from conftest import MyT, assert_matches, conversions, cpu_kernel_dtypes, dtype_id, make, plain


def dtypes(op):
    return [pytest.param(d, id=dtype_id(d)) for d in cpu_kernel_dtypes(op)]


# --- stack -----------------------------------------------------------------------

STACK_CASES = [
    pytest.param(shape, dim, id=f"{'x'.join(map(str, shape)) or 'scalar'}-dim{dim}")
    for shape in [(), (5,), (3, 4), (2, 3, 4), (0, 3)]
    for dim in range(-len(shape) - 1, len(shape) + 1)
]


@pytest.mark.parametrize("shape,dim", STACK_CASES)
@pytest.mark.parametrize("dtype", dtypes("stack"))
def test_stack_every_dim(path, dtype, shape, dim):
    xs = [make(shape, dtype) for _ in range(3)]
    with conversions(path, 4):
        out = ops.stack(xs, dim)
    assert_matches(out, torch.stack(xs, dim))
    with conversions(path, 4):
        out = ops.stack(tuple(xs), dim=dim)
    assert_matches(out, torch.stack(xs, dim))


@pytest.mark.parametrize("dtype", dtypes("stack"))
def test_stack_default_dim_and_single_tensor(path, dtype):
    x = make((2, 3), dtype)
    with conversions(path, 2):
        out = ops.stack([x])
    assert_matches(out, torch.stack([x]))
    with conversions(path, 2):
        out = ops.stack(tensors=[x], dim=-1)
    assert_matches(out, torch.stack([x], -1))


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", dtypes("stack"))
def test_stack_mixed_layouts_into_strided_out(path, dtype, dim):
    xs = [
        make((3, 4), dtype),
        make((4, 3), dtype).t(),
        make((5, 6), dtype)[1:4, 2:6],
        make((1, 4), dtype).expand(3, 4),
        make((3, 4), dtype).as_subclass(MyT),
        torch.nn.Parameter(make((3, 4), dtype), requires_grad=False),
    ]
    expected = torch.stack([plain(x) for x in xs], dim)
    out = torch.empty(expected.shape[::-1], dtype=dtype).permute(2, 1, 0)
    with conversions(path, len(xs) + 1):
        assert ops.stack(xs, dim, out=out) is out
    assert_matches(out, expected)


def test_stack_many_tensors(path):
    # More tensors than the call frame holds inline, and enough data that the
    # call releases the GIL.
    xs = [make((4096,)) for _ in range(40)]
    with conversions(path, 41):
        out = ops.stack(xs, 1)
    assert_matches(out, torch.stack(xs, 1))


def test_stack_the_same_tensor_twice(path):
    x = make((2, 3), torch.int64)
    with conversions(path, 3):
        out = ops.stack([x, x], 1)
    assert_matches(out, torch.stack([x, x], 1))


# --- matmul ----------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((1, 1), (1, 1)),
    ((2, 3, 4), (2, 4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((1, 3, 4), (6, 4, 5)),
    ((6, 3, 4), (1, 4, 5)),
    ((0, 4), (4, 5)),
    ((3, 0), (0, 5)),
    ((2, 3, 4), (2, 4, 0)),
    ((64, 96), (96, 80)),
    # 1-D operands: a row, a column, a dot product.
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((4,), (2, 4, 5)),
    ((2, 3, 4), (4,)),
    ((0,), (0,)),
    # Batch dims of any count, broadcast against each other.
    ((2, 3, 4, 5), (2, 3, 5, 6)),
    ((2, 3, 4, 5), (5, 6)),
    ((2, 1, 4, 5), (3, 5, 6)),
    ((2, 1, 4, 5), (1, 3, 5, 6)),
    ((1, 2, 1, 3, 4), (2, 1, 2, 4, 5)),
    ((2, 0, 4, 5), (1, 5, 6)),
]


def matmul_ref(a, b):
    dtype = a.dtype
    if dtype in (torch.float16, torch.bfloat16):
        return torch.matmul(a.float(), b.float()).to(dtype)
    return torch.matmul(a, b)


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
@pytest.mark.parametrize("dtype", dtypes("matmul"))
def test_matmul_shapes(path, dtype, sa, sb):
    a, b = make(sa, dtype), make(sb, dtype)
    expected = torch.matmul(a, b)  # shape and dtype from torch itself
    with conversions(path, 3):
        out = ops.matmul(a, b)
    assert out.shape == expected.shape
    assert_matches(out, matmul_ref(a, b), reduce=True)


STRIDED_OPERANDS = {
    "a_transposed": (lambda dt: make((4, 3), dt).t(), lambda dt: make((4, 5), dt)),
    "b_transposed": (lambda dt: make((3, 4), dt), lambda dt: make((5, 4), dt).t()),
    "both_transposed_3d": (
        lambda dt: make((2, 4, 3), dt).transpose(1, 2),
        lambda dt: make((2, 5, 4), dt).transpose(1, 2),
    ),
    "batch_last": (lambda dt: make((3, 4, 2), dt).permute(2, 0, 1), lambda dt: make((2, 4, 5), dt)),
    "offsets": (lambda dt: make((5, 7), dt)[1:4, 2:6], lambda dt: make((2, 6, 9), dt)[:, 1:5, 3:8]),
    "stepped": (lambda dt: make((6, 8), dt)[::2, ::2], lambda dt: make((8, 10), dt)[::2, ::2]),
    "expanded_batch": (lambda dt: make((1, 3, 4), dt).expand(3, 3, 4), lambda dt: make((3, 4, 5), dt)),
    "expanded_rows": (lambda dt: make((1, 4), dt).expand(3, 4), lambda dt: make((4, 1), dt).expand(4, 5)),
    # K/V heads shared by groups of query heads (GQA): a head dim of stride
    # 0 between strided ones, which no single batch stride describes.
    "gqa_expanded": (
        lambda dt: make((2, 2, 3, 4, 8), dt),
        lambda dt: make((2, 2, 5, 8), dt)[:, :, None].expand(2, 2, 3, 5, 8).transpose(-1, -2),
    ),
    "batch_dims_permuted_4d": (
        lambda dt: make((3, 2, 4, 5), dt).permute(1, 0, 2, 3),
        lambda dt: make((2, 3, 5, 6), dt),
    ),
    "row_vector_strided": (lambda dt: make((9,), dt)[::3], lambda dt: make((5, 3), dt).t()),
    "subclass_and_parameter": (
        lambda dt: make((3, 4), dt).as_subclass(MyT),
        lambda dt: torch.nn.Parameter(make((4, 5), dt)),
    ),
}


@pytest.mark.parametrize("case", list(STRIDED_OPERANDS))
@pytest.mark.parametrize("dtype", dtypes("matmul"))
def test_matmul_strided_operands(path, dtype, case):
    make_a, make_b = STRIDED_OPERANDS[case]
    a, b = make_a(dtype), make_b(dtype)
    with torch.no_grad():
        expected = matmul_ref(plain(a), plain(b))
        with conversions(path, 3):
            out = ops.matmul(a, b)
    assert_matches(out, expected, reduce=True)


# 64 rows or more against a narrow b (at most 128 columns): the CPU plugin
# widens float16 and bfloat16 b once and a block by block onto its float32
# tiles. Row counts off the block, every operand strided, and a b past the
# widening budget (k * n > 2**20), which keeps the panels.
NARROW_B = {
    "rows_70": (lambda dt: make((70, 50), dt), lambda dt: make((50, 16), dt), None),
    "n_128": (lambda dt: make((64, 9), dt), lambda dt: make((9, 128), dt), None),
    "a_transposed_b_column_major": (
        lambda dt: make((33, 70), dt).t(),
        lambda dt: make((7, 33), dt).t(),
        None,
    ),
    "stepped_and_offset": (
        lambda dt: make((70, 40), dt)[3:, ::2],
        lambda dt: make((22, 30), dt)[2:, ::3],
        lambda dt: torch.empty((10, 67), dtype=dt).t(),
    ),
    "batch_broadcast_b": (lambda dt: make((3, 65, 24), dt), lambda dt: make((24, 5), dt), None),
    # Scaled so that float32's rounding over 8200 terms stays inside its
    # tolerance.
    "past_the_budget": (lambda dt: make((64, 8200), dt) / 90, lambda dt: make((8200, 128), dt), None),
}


@pytest.mark.parametrize("case", list(NARROW_B))
@pytest.mark.parametrize("dtype", dtypes("matmul"))
def test_matmul_many_rows_narrow_b(path, dtype, case):
    make_a, make_b, make_out = NARROW_B[case]
    a, b = make_a(dtype), make_b(dtype)
    kwargs = {"out": make_out(dtype)} if make_out else {}
    with conversions(path, 3):
        out = ops.matmul(a, b, **kwargs)
    if kwargs:
        assert out is kwargs["out"]
    assert_matches(out, matmul_ref(a, b), reduce=True)


@pytest.mark.parametrize("dtype", dtypes("matmul"))
def test_matmul_into_strided_out(path, dtype):
    a, b = make((2, 3, 4), dtype), make((4, 5), dtype)
    out = torch.empty((5, 3, 2), dtype=dtype).permute(2, 1, 0)
    with conversions(path, 3):
        assert ops.matmul(a, b, out=out) is out
    assert_matches(out, matmul_ref(a, b), reduce=True)
    out2 = torch.empty((3, 10), dtype=dtype)[:, ::2]
    with conversions(path, 3):
        assert ops.matmul(a[0], b, out=out2) is out2
    assert_matches(out2, matmul_ref(a[0], b), reduce=True)


@pytest.mark.parametrize("dtype", dtypes("matmul"))
def test_matmul_batch_dims_into_strided_out(path, dtype):
    # Batch dims that merge in the operands but not in out: the host calls
    # the kernel once per outer index, each into its slice of out.
    a, b = make((2, 3, 4, 5), dtype), make((5, 6), dtype)
    out = torch.empty((3, 2, 4, 6), dtype=dtype).transpose(0, 1)
    with conversions(path, 3):
        assert ops.matmul(a, b, out=out) is out
    assert_matches(out, matmul_ref(a, b), reduce=True)
    # A 1-D other: out drops its dim.
    v = make((5,), dtype)
    out1 = torch.empty((2, 3, 8), dtype=dtype)[:, :, ::2]
    with conversions(path, 3):
        assert ops.matmul(a, v, out=out1) is out1
    assert_matches(out1, matmul_ref(a, v), reduce=True)


def test_matmul_refuses_what_torch_refuses():
    with pytest.raises(ValueError, match=r"at least 1 dim, got shapes \[\] and \[2\]"):
        ops.matmul(torch.tensor(1.0), torch.ones(2))
    with pytest.raises(RuntimeError):
        torch.matmul(torch.ones(2, 3, 4, 5), torch.ones(4, 5, 6))
    with pytest.raises(ValueError, match=r"\[2, 3, 4, 5\] and \[4, 5, 6\] cannot be multiplied"):
        ops.matmul(torch.ones(2, 3, 4, 5), torch.ones(4, 5, 6))
    with pytest.raises(ValueError, match=r"\[4\] and \[5\] cannot be multiplied"):
        ops.matmul(torch.ones(4), torch.ones(5))
    with pytest.raises(ValueError, match=r"expected out of shape \[2, 3, 4\], got \[2, 3, 4, 1\]"):
        ops.matmul(torch.ones(2, 3, 4, 5), torch.ones(5), out=torch.empty(2, 3, 4, 1))


def test_matmul_large_releases_the_gil(path):
    a, b = make((64, 128)), make((128, 64))
    with conversions(path, 3):
        out = ops.matmul(a, b)
    assert_matches(out, a @ b, reduce=True)


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((0, 4, 2), (2, 3)), ((1, 4, 2), (0, 2, 3)), ((0, 4, 2), (1, 2, 3)), ((2, 4, 0), (2, 0, 3))],
)
def test_matmul_with_an_empty_batch_or_inner_dim_matches_torch(a_shape, b_shape):
    a, b = torch.ones(a_shape), torch.ones(b_shape)
    out = ops.matmul(a, b)
    expected = torch.matmul(a, b)
    assert out.shape == expected.shape and torch.equal(out, expected)
