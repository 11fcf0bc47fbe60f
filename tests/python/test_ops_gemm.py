"""matmul on the CPU plugin's GEMM (BLIS for float32 and float64, the panel
kernel for narrow contiguous float32 b, float16 and bfloat16, and the
strides BLIS refuses): every layout of each operand and of out, against
torch, around the width where the choice between them changes."""

import math

import pytest
import torch

from torchferry import ops
from conftest import assert_matches, cpu_kernel_dtypes, dtype_id, make


def dtypes():
    return [pytest.param(d, id=dtype_id(d)) for d in cpu_kernel_dtypes("matmul")]


def _b(layout, k, n, dtype):
    """A [k, n] operand in `layout`."""
    if layout == "contiguous":
        return make((k, n), dtype)
    if layout == "weight_t":  # nn.Linear's weight [n, k], read transposed
        return make((n, k), dtype).t()
    if layout == "rows_sliced":
        return make((2 * k, n), dtype)[::2]
    if layout == "cols_sliced":
        return make((k, 2 * n), dtype)[:, ::2]
    if layout == "column_expanded":  # stride 0 along n
        return make((k, 1), dtype).expand(k, n)
    if layout == "self_overlapping":  # b[p, j] = v[p + j]: strides (1, 1)
        return make((k + n,), dtype).as_strided((k, n), (1, 1))
    raise AssertionError(layout)


B_LAYOUTS = ["contiguous", "weight_t", "rows_sliced", "cols_sliced", "column_expanded", "self_overlapping"]


@pytest.mark.parametrize("n", [1, 16, 128, 129, 256])
# 64 rows and more take BLIS's AVX-512 kernels on a CPU that has them (gemm.cc).
@pytest.mark.parametrize("m", [1, 8, 33, 64, 97])
@pytest.mark.parametrize("layout", B_LAYOUTS)
@pytest.mark.parametrize("dtype", dtypes())
def test_every_b_layout(dtype, layout, m, n):
    k = 67
    a = (make((m, k)) / math.sqrt(k)).to(dtype)
    b = _b(layout, k, n, dtype)
    # float16 and bfloat16 against the float32 product rounded once: torch
    # 2.9.0's own gets rows_sliced wrong from 64 rows (errors of ~3.5 at n = 1).
    half = dtype in (torch.float16, torch.bfloat16)
    want = torch.matmul(a.float(), b.float()).to(dtype) if half else torch.matmul(a, b)
    assert_matches(ops.matmul(a, b), want, reduce=True)


@pytest.mark.parametrize("m", [9, 70])
@pytest.mark.parametrize("layout", ["transposed", "strided", "row_expanded", "one_row_any_stride"])
@pytest.mark.parametrize("dtype", dtypes())
def test_every_a_layout(dtype, layout, m):
    k, n = 40, 300
    if layout == "transposed":
        a = make((k, m), dtype).t()
    elif layout == "strided":
        a = make((m, 3 * k), dtype)[:, ::3]
    elif layout == "row_expanded":  # stride 0 along m
        a = make((1, k), dtype).expand(m, k)
    else:  # a size-1 dim carries any stride; BLIS must be given one it takes
        a = make((k, 5), dtype)[:, :1].t()
    w = make((n, k), dtype).t()
    # Against the float32 product rounded once: torch 2.9's own float16 and
    # bfloat16 matmul gets the one-row layout wrong (errors of ~25 here).
    want = torch.matmul(a.float(), w.float()).to(dtype) if dtype in (torch.float16, torch.bfloat16) else torch.matmul(a, w)
    assert_matches(ops.matmul(a, w), want, reduce=True)


@pytest.mark.parametrize("dtype", dtypes())
def test_out_transposed_and_sliced(dtype):
    a = make((7, 50), dtype) / math.sqrt(50)
    w = make((300, 50), dtype).t()
    out = torch.empty(300, 7, dtype=dtype).t()
    ops.matmul(a, w, out=out)
    assert_matches(out, torch.matmul(a, w), reduce=True)
    wide = torch.full((7, 600), 5.0, dtype=dtype)
    ops.matmul(a, w, out=wide[:, ::2])
    assert_matches(wide[:, ::2], torch.matmul(a, w), reduce=True)
    assert torch.all(wide[:, 1::2] == 5.0)  # the columns between are untouched


@pytest.mark.parametrize("dtype", dtypes())
def test_batched_with_a_shared_weight_t(dtype):
    a = make((3, 5, 64), dtype) / 8
    w = make((200, 64), dtype).t()
    assert_matches(ops.matmul(a, w), torch.matmul(a, w), reduce=True)
    per_batch = make((3, 200, 64), dtype).transpose(1, 2)
    assert_matches(ops.matmul(a, per_batch), torch.matmul(a, per_batch), reduce=True)


def test_decode_shapes_float32():
    # One and eight rows against the square weights of a decode step, the
    # shapes the GEMM was chosen for.
    for m, k in [(1, 256), (8, 256), (1, 1024), (8, 1024)]:
        a = make((m, k)) / math.sqrt(k)
        for b in (make((k, k)), make((k, k)).t()):
            assert_matches(ops.matmul(a, b), torch.matmul(a, b), reduce=True)


# Against W.t() on AVX-512, four rows or more take tiles of four rows by four
# columns whose sixteen sums are reduced together and, in float32 with a
# depth of whole vectors and unit column stride out, stored a row of four at
# a time (matmul.cc's SumLanes4x4). Rows and columns that leave a partial
# tile, depths with and without a tail, and an out that is transposed or
# sliced, so that every sum must land in its own place. float32 takes them
# up to 96 rows (kDotRowsAvx512Float), BLIS from 97.
@pytest.mark.parametrize("m", [4, 5, 7, 8, 12, 16, 17, 63, 96, 97])
@pytest.mark.parametrize("k", [16, 17, 64, 256, 300])
@pytest.mark.parametrize("n", [1, 4, 6, 256])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
def test_weight_t_tiles_of_four_rows(dtype, m, k, n):
    a = (make((m, k)) / math.sqrt(k)).to(dtype)
    w = make((n, k), dtype).t()
    want = torch.matmul(a.float(), w.float()).to(dtype)
    assert_matches(ops.matmul(a, w), want, reduce=True)
    transposed = torch.empty(n, m, dtype=dtype).t()
    ops.matmul(a, w, out=transposed)
    assert_matches(transposed, want, reduce=True)
    wide = torch.full((m, 2 * n), 5.0, dtype=dtype)
    ops.matmul(a, w, out=wide[:, ::2])
    assert_matches(wide[:, ::2], want, reduce=True)
    assert torch.all(wide[:, 1::2] == 5.0)


# float16 and bfloat16 against W.t() with at most 16 rows take dot products
# (matmul.cc's MatmulDots), a widened on the stack up to 8192 elements and in
# an allocation beyond; 17 rows take the panels. Both sides of each bound,
# with depth tails that are not a multiple of the 16 or 8 lanes and a column
# count that is not one of 4.
@pytest.mark.parametrize("m,k", [(1, 8192), (1, 8193), (1, 40000), (16, 512), (16, 513), (17, 64), (3, 1), (5, 23)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
def test_half_weight_t_dot_products_around_their_bounds(dtype, m, k):
    n = 7
    a = (make((m, k)) / math.sqrt(k)).to(dtype)
    w = make((n, k), dtype).t()
    want = torch.matmul(a.float(), w.float()).to(dtype)
    assert_matches(ops.matmul(a, w), want, reduce=True)
    assert_matches(ops.linear(a, w.t()), want, reduce=True)


def test_half_weight_t_dot_products_keep_nan_and_inf():
    a = torch.ones(1, 40, dtype=torch.bfloat16)
    w = torch.ones(3, 40, dtype=torch.bfloat16)
    w[0, 5] = float("nan")
    w[1, 39] = float("inf")  # past the last full vector of 16 lanes
    got = ops.linear(a, w)
    assert torch.isnan(got[0, 0]) and torch.isinf(got[0, 1]) and got[0, 2].item() == 40.0
