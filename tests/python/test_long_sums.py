"""Long sums in every reducing op of the CPU plugin, against a float64
reference: rows past 2**24 elements (where a float32 accumulator that keeps
adding stops growing) and past 2**28 (where sixteen lane accumulators do),
on every layout a sum can run along (contiguous, strided, stride 0, a dim
that is not the last), and strided rows of ordinary length. Each result's
error against float64 is held to a few times torch's own, or a few float32
ulps where torch is exact; see the accumulation contract in the op table.

Stride-0 views (expand) keep the inputs of the 2**25-element rows small;
the one contiguous row past 2**28 is marked big_memory.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from torchferry import ops

# A few float32 ulps of the result: what an exact sum still leaves after the
# division, square root or exponential that follows it.
FLOOR = 1e-6
# Ours against torch's own error on the same input.
FACTOR = 4

LONG = 2**25  # past 2**24: one float32 accumulator stops at 2**24 ones


def rel_err(out, ref):
    ref = ref.double()
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


def assert_no_worse_than_torch(out, theirs, ref, floor=FLOOR):
    ours_err = rel_err(out, ref)
    torch_err = rel_err(theirs, ref) if theirs is not None else 0.0
    assert ours_err <= max(FACTOR * torch_err, floor), (
        f"relative error {ours_err:.3g} against float64, torch's {torch_err:.3g}"
    )


def shifted_randn(n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g) + 3


def rms_norm_ref(x, w, eps=1e-6):
    x = x.double()
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w.double()


# --- rms_norm and add_rms_norm ----------------------------------------------------


def test_rms_norm_stride0_row_past_2_24():
    x = torch.ones(1, 1).expand(1, LONG)
    w = torch.ones(LONG)
    out = ops.rms_norm(x, w)
    assert_no_worse_than_torch(out[:, :8], None, rms_norm_ref(x[:, :8], w[:8]))
    assert out.min().item() == out.max().item()


def test_rms_norm_strided_row():
    # A stride-4 row of 2**22 values: ordinary length, not unit stride.
    x = shifted_randn(4 * 2**22, 1)[::4].unsqueeze(0)
    w = torch.ones(x.shape[-1])
    out = ops.rms_norm(x, w, 1e-6)
    theirs = F.rms_norm(x, (x.shape[-1],), w, 1e-6)
    assert_no_worse_than_torch(out, theirs, rms_norm_ref(x, w))


def test_rms_norm_contiguous_row_past_2_24():
    # The unit-stride float32 line, with a real weight.
    x = shifted_randn(LONG, 2).unsqueeze(0)
    w = shifted_randn(LONG, 3)
    out = ops.rms_norm(x, w, 1e-6)
    theirs = F.rms_norm(x, (LONG,), w, 1e-6)
    assert_no_worse_than_torch(out, theirs, rms_norm_ref(x, w))


@pytest.mark.big_memory
def test_rms_norm_contiguous_row_past_2_28():
    # Sixteen lane accumulators of ones stop at 16 * 2**24 = 2**28; float16
    # keeps the row at 544 MiB. The exact answer 1 / sqrt(1 + eps) rounds to
    # float16 1.
    n = 2**28 + 2**24
    x = torch.ones(1, n, dtype=torch.float16)
    w = torch.ones(n, dtype=torch.float16)
    out = ops.rms_norm(x, w, 1e-6)
    del x, w
    assert out.min().item() == 1.0 and out.max().item() == 1.0


def test_add_rms_norm_strided_residual_past_2_24():
    x = torch.ones(1, 1).expand(1, LONG)
    residual = torch.zeros(LONG, 2)[:, 0].unsqueeze(0)  # stride 2
    w = torch.ones(1).expand(LONG)
    out = ops.add_rms_norm(x, residual, w, eps=1e-6)
    assert residual.min().item() == 1.0 and residual.max().item() == 1.0
    ref = 1 / math.sqrt(1 + 1e-6)
    assert abs(out.min().item() - ref) <= FLOOR and abs(out.max().item() - ref) <= FLOOR


def test_add_rms_norm_strided_residual():
    x = shifted_randn(2**22, 4).unsqueeze(0)
    residual = torch.zeros(4 * 2**22)[::4].unsqueeze(0)
    w = torch.ones(2**22)
    expected = residual + x
    out = ops.add_rms_norm(x, residual, w, eps=1e-6)
    theirs = F.rms_norm(expected, (2**22,), w, 1e-6)
    assert_no_worse_than_torch(out, theirs, rms_norm_ref(expected, w))


# --- softmax ---------------------------------------------------------------------


def test_softmax_strided_line_past_2_24():
    out = ops.softmax(torch.zeros(LONG, 2)[:, 0], dim=0)
    ref = torch.full((8,), 2.0**-25, dtype=torch.float64)
    assert_no_worse_than_torch(out[:8], None, ref)
    assert out.min().item() == out.max().item()


def test_softmax_over_a_leading_dim_past_2_24():
    # dim 0 of [2**25, 2]: two lines side by side, stride 0 along the dim.
    x = torch.zeros(1, 2).expand(LONG, 2)
    out = ops.softmax(x, dim=0)
    ref = torch.full((8, 2), 2.0**-25, dtype=torch.float64)
    assert_no_worse_than_torch(out[:8], None, ref)
    assert out.min().item() == out.max().item()


def test_softmax_strided_column():
    x = shifted_randn(4 * 2**22, 6)[::4]
    out = ops.softmax(x, dim=0)
    assert_no_worse_than_torch(out, torch.softmax(x, 0), torch.softmax(x.double(), 0))


def test_softmax_bfloat16_strided_line_past_2_24():
    # bfloat16 holds 2**-25 exactly (float16 does not): the float32 sums of a
    # 16-bit line, rounded once at the end.
    x = torch.zeros(LONG, 2, dtype=torch.bfloat16)[:, 0]
    out = ops.softmax(x, dim=0)
    assert out.float().min().item() == out.float().max().item() == 2.0**-25


# --- attention -------------------------------------------------------------------


@pytest.mark.parametrize("queries", [1, 16], ids=["row", "blocked"])
def test_attention_row_sums_past_2_24(queries):
    # Every key scores the same, so out is the mean of v over 2**25 keys: the
    # running sum of the weights and of p * v each over every key.
    q = torch.ones(1, 1, queries, 1)
    k = torch.ones(1, 1, 1, 1).expand(1, 1, LONG, 1)
    v = shifted_randn(LONG, 8).view(1, 1, LONG, 1)
    out = ops.scaled_dot_product_attention(q, k, v)
    ref = v.double().mean().expand(1, 1, queries, 1)
    # torch's on one query (every query is alike): it would hold all
    # queries' scores at once, 2 GiB for the blocked case.
    theirs = F.scaled_dot_product_attention(q[:, :, :1], k, v)
    assert_no_worse_than_torch(out, theirs.expand_as(out), ref)


# --- matmul and linear -----------------------------------------------------------


def test_matmul_long_depth_of_ones():
    a = torch.ones(1, 1).expand(2, LONG)
    b = torch.ones(1, 1).expand(LONG, 3)
    out = ops.matmul(a, b)
    assert out.min().item() == out.max().item() == float(LONG)


def test_matmul_long_depth():
    # (A single row is torch's weak spot: its own error there is 1e-5 at
    # this depth, above what any of our paths ever made.)
    rows = 4
    a = shifted_randn(rows * 2**22, 9).view(rows, 2**22)
    b = shifted_randn(3 * 2**22, 10).view(2**22, 3)
    out = ops.matmul(a, b)
    assert_no_worse_than_torch(out, a @ b, a.double() @ b.double())


@pytest.mark.parametrize("m,k,n", [(8, 4096, 4), (16, 4096, 8), (256, 4096, 16), (64, 16384, 4)])
def test_matmul_few_rows_or_narrow_at_ordinary_depth(m, k, n):
    # b's rows contiguous, few rows of a or a narrow b: the in-place tiles,
    # whose sums once ran on over the whole depth.
    a = shifted_randn(m * k, 13).view(m, k)
    b = shifted_randn(k * n, 14).view(k, n)
    out = ops.matmul(a, b)
    # A product's only rounding after its sum is the store: two ulps.
    assert_no_worse_than_torch(out, a @ b, a.double() @ b.double(), floor=2.5e-7)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_matmul_16_bit_long_depth(dtype):
    # Terms of 2**-10 so that the exact sum, 2**15, fits float16.
    a = torch.ones(1, 1, dtype=dtype).expand(2, LONG)
    b = torch.full((1, 1), 2.0**-10, dtype=dtype).expand(LONG, 3)
    out = ops.matmul(a, b)
    assert out.float().min().item() == out.float().max().item() == 2.0**15


def test_linear_long_depth():
    x = shifted_randn(2**22, 11).view(1, 2**22)
    w = shifted_randn(2 * 2**22, 12).view(2, 2**22)
    out = ops.linear(x, w)
    assert_no_worse_than_torch(out, F.linear(x, w), x.double() @ w.double().t())


def test_linear_long_depth_of_ones():
    x = torch.ones(1, 1).expand(3, LONG)
    w = torch.ones(1, 1).expand(2, LONG)
    out = ops.linear(x, w)
    assert out.min().item() == out.max().item() == float(LONG)
