"""rotary_embedding and scaled_dot_product_attention against torch, for every
dtype the CPU plugin carries, over the layouts a decoder hands them
(heads-first and sequence-first, strided views, broadcast cos/sin and masks,
empty and decode shapes), in place where allowed, and every error path.
The same cases run on the ATen fallback in a subprocess."""

import json
import math

import pytest
import torch
import torch.nn.functional as F

from torchferry import ops
from torchferry.reference import REFERENCES
from conftest import needs_aten, assert_matches, cpu_kernel_dtypes, dtype_id, make, run_python

SDPA_NAME = "scaled_dot_product_attention"
ROTARY = REFERENCES["rotary_embedding"]
SDPA = REFERENCES["scaled_dot_product_attention"]


def dtypes(op):
    return [pytest.param(d, id=dtype_id(d)) for d in cpu_kernel_dtypes(op)]


def _freqs(positions, half, dtype, base=10000.0):
    """cos and sin [positions, half] as a Llama rotary embedding makes them."""
    inv = 1.0 / (base ** (torch.arange(0, half, dtype=torch.float32) / half))
    angles = torch.arange(positions, dtype=torch.float32)[:, None] * inv[None, :]
    return angles.cos().to(dtype), angles.sin().to(dtype)


# --- rotary_embedding ---------------------------------------------------------------

# (x shape, cos/sin shape, rotary half): heads and sequence in either order,
# partial rotary, 1-D rows, broadcast over the batch, empty.
ROTARY_CASES = {
    "bshd": ((2, 5, 3, 8), (5, 1, 4)),
    "bhsd": ((2, 3, 5, 8), (5, 4)),
    "partial": ((2, 3, 5, 10), (5, 3)),
    "per_batch": ((2, 3, 5, 8), (2, 1, 5, 4)),
    "one_row": ((8,), (4,)),
    "odd_head_dim": ((3, 7), (3, 2)),
    "no_rotary": ((2, 6), (2, 0)),
    "empty_seq": ((2, 3, 0, 8), (0, 4)),
    "long_rows": ((1, 2, 3, 300), (3, 150)),
    "llama": ((1, 8, 32, 64), (32, 32)),
    "partial_wide": ((2, 3, 5, 40), (5, 12)),
}


@pytest.mark.parametrize("interleaved", [False, True], ids=["half", "interleaved"])
@pytest.mark.parametrize("case", list(ROTARY_CASES))
@pytest.mark.parametrize("dtype", dtypes("rotary_embedding"))
def test_rotary_matches_torch(dtype, case, interleaved):
    xs, cs = ROTARY_CASES[case]
    x = make(xs, dtype)
    c, s = make(cs, dtype), make(cs, dtype)
    out = ops.rotary_embedding(x, c, s, interleaved=interleaved)
    assert_matches(out, ROTARY(x, c, s, interleaved=interleaved))


@pytest.mark.parametrize("dtype", dtypes("rotary_embedding"))
def test_rotary_is_transformers_apply_rotary_pos_emb(dtype):
    # transformers' Llama: cos/sin of the full head dim, two equal halves;
    # q * cos + rotate_half(q) * sin, with q [B, H, S, D] and cos [B, 1, S, D].
    B, H, S, D = 2, 4, 6, 16
    c, s = _freqs(S, D // 2, torch.float32)
    cos = torch.cat((c, c), -1)[None, None].expand(B, 1, S, D).to(dtype)
    sin = torch.cat((s, s), -1)[None, None].expand(B, 1, S, D).to(dtype)
    q = make((B, H, S, D), dtype)

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)

    wide = torch.float64 if dtype == torch.float64 else torch.float32
    qw, cw, sw = q.to(wide), cos.to(wide), sin.to(wide)
    hf = (qw * cw + rotate_half(qw) * sw).to(dtype)
    out = ops.rotary_embedding(q, cos[..., : D // 2], sin[..., : D // 2])
    assert_matches(out, hf)
    assert_matches(ROTARY(q, cos[..., : D // 2], sin[..., : D // 2]), hf)


@pytest.mark.parametrize("dtype", dtypes("rotary_embedding"))
def test_rotary_strided_and_offset_views(dtype):
    # q as a projection's output viewed [B, S, H, D] then transposed to
    # [B, H, S, D]: strided rows; cos from a larger cache, sliced (offset).
    B, S, H, D = 2, 5, 3, 8
    q = make((B, S, H * D + 4), dtype)[..., 2 : 2 + H * D].view(B, S, H, D).transpose(1, 2)
    c_all, s_all = _freqs(12, D // 2, dtype)
    c, s = c_all[3 : 3 + S], s_all[3 : 3 + S]
    assert not q.is_contiguous() and c.storage_offset() > 0
    for interleaved in (False, True):
        out = ops.rotary_embedding(q, c, s, interleaved=interleaved)
        assert_matches(out, ROTARY(q, c, s, interleaved=interleaved))
    # cos and sin as expanded (stride 0) views, and a strided out=.
    ce, se = c[:, None, :].expand(S, H, D // 2), s[:, None, :].expand(S, H, D // 2)
    x = make((B, S, H, D), dtype)
    out = torch.empty(B, H, S, D, dtype=dtype).transpose(1, 2)
    got = ops.rotary_embedding(x, ce, se, out=out)
    assert got is out
    assert_matches(out, ROTARY(x, ce, se))


@pytest.mark.parametrize("interleaved", [False, True], ids=["half", "interleaved"])
@pytest.mark.parametrize("dtype", dtypes("rotary_embedding"))
def test_rotary_in_place(dtype, interleaved):
    x = make((2, 3, 4, 10), dtype)
    c, s = make((4, 3), dtype), make((4, 3), dtype)
    want = ROTARY(x, c, s, interleaved=interleaved)
    view = x.transpose(1, 2)  # in place on a strided view, too
    got = ops.rotary_embedding(view, c[:, None], s[:, None], interleaved=interleaved, out=view)
    assert got is view
    assert_matches(x, want)


def test_rotary_errors():
    x = make((2, 3, 8))
    c = make((3, 4))
    with pytest.raises(ValueError, match="0-dim"):
        ops.rotary_embedding(torch.tensor(1.0), c, c)
    with pytest.raises(ValueError, match="at least one dim"):
        ops.rotary_embedding(x, torch.tensor(1.0), torch.tensor(1.0))
    with pytest.raises(ValueError, match=r"sin \(cos's shape\) of shape \[3, 4\], got \[3, 3\]"):
        ops.rotary_embedding(x, c, make((3, 3)))
    with pytest.raises(ValueError, match="at most half input's last dim 8.*got 5"):
        ops.rotary_embedding(x, make((3, 5)), make((3, 5)))
    with pytest.raises(ValueError, match=r"broadcast to input's leading dims \[2, 3\], got \[4, 4\]"):
        ops.rotary_embedding(x, make((4, 4)), make((4, 4)))
    with pytest.raises(ValueError, match="broadcast"):
        ops.rotary_embedding(x, make((5, 2, 3, 4)), make((5, 2, 3, 4)))
    with pytest.raises(TypeError, match="dtype"):
        ops.rotary_embedding(x, c.double(), c.double())
    with pytest.raises(TypeError):
        ops.rotary_embedding(x.int(), c.int(), c.int())
    with pytest.raises(TypeError, match="interleaved"):
        ops.rotary_embedding(x, c, c, interleaved=1)
    with pytest.raises(ValueError, match="overlap|alias|share"):
        ops.rotary_embedding(x, x[0, :, :4], x[0, :, :4], out=x)
    before = x.clone()
    with pytest.raises(ValueError):
        ops.rotary_embedding(x, make((3, 5)), make((3, 5)), out=x)
    assert torch.equal(x, before)  # nothing written on refusal


# --- scaled_dot_product_attention ----------------------------------------------------

# (q, k, v shapes): decode, prefill, several key blocks, Ev != E, 2-D and
# 3-D, broadcast batch and heads, empty.
SDPA_SHAPES = {
    "decode": ((1, 4, 1, 16), (1, 4, 37, 16), (1, 4, 37, 16)),
    "prefill": ((2, 3, 9, 8), (2, 3, 9, 8), (2, 3, 9, 8)),
    "long_keys": ((1, 2, 3, 32), (1, 2, 200, 32), (1, 2, 200, 32)),
    "ev_differs": ((2, 2, 4, 8), (2, 2, 6, 8), (2, 2, 6, 5)),
    "two_dims": ((5, 8), (7, 8), (7, 8)),
    "three_dims": ((3, 5, 8), (3, 7, 8), (3, 7, 8)),
    "broadcast_kv": ((2, 3, 4, 8), (1, 1, 6, 8), (1, 1, 6, 8)),
    "kv_lower_rank": ((2, 3, 4, 8), (6, 8), (6, 8)),
    "five_dims": ((2, 1, 3, 4, 8), (2, 2, 3, 5, 8), (2, 2, 3, 5, 8)),
    "big_head": ((1, 1, 2, 300), (1, 1, 70, 300), (1, 1, 70, 260)),
    "no_queries": ((1, 2, 0, 8), (1, 2, 5, 8), (1, 2, 5, 8)),
    "no_keys": ((1, 2, 3, 8), (1, 2, 0, 8), (1, 2, 0, 8)),
    "no_batch": ((0, 2, 3, 8), (0, 2, 5, 8), (0, 2, 5, 8)),
}


def _qkv(shapes, dtype):
    return [make(s, dtype) for s in shapes]


@pytest.mark.parametrize("case", list(SDPA_SHAPES))
@pytest.mark.parametrize("dtype", dtypes("scaled_dot_product_attention"))
def test_sdpa_matches_torch(dtype, case):
    q, k, v = _qkv(SDPA_SHAPES[case], dtype)
    out = ops.scaled_dot_product_attention(q, k, v)
    assert_matches(out, SDPA(q, k, v), reduce=True)
    if q.dtype == torch.float32:  # the reference is torch itself
        assert_matches(out, F.scaled_dot_product_attention(q, k, v), reduce=True)


@pytest.mark.parametrize("lower_right", [False, True], ids=["top_left", "lower_right"])
@pytest.mark.parametrize("L,S", [(1, 9), (4, 9), (9, 9), (9, 4), (70, 130)])
@pytest.mark.parametrize("dtype", dtypes("scaled_dot_product_attention"))
def test_sdpa_causal(dtype, L, S, lower_right):
    q, k, v = _qkv([(2, 2, L, 16), (2, 2, S, 16), (2, 2, S, 16)], dtype)
    out = ops.scaled_dot_product_attention(q, k, v, is_causal=True, lower_right=lower_right)
    want = SDPA(q, k, v, is_causal=True, lower_right=lower_right)
    assert_matches(out, want, reduce=True)
    if lower_right and L > S:  # queries before the first key keep nothing: 0
        assert torch.all(out[:, :, : L - S] == 0)


def test_lower_right_is_torch_causal_lower_right():
    from torch.nn.attention.bias import causal_lower_right

    q, k, v = _qkv([(1, 2, 3, 8), (1, 2, 10, 8), (1, 2, 10, 8)], torch.float32)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(3, 10))
    got = ops.scaled_dot_product_attention(q, k, v, is_causal=True, lower_right=True)
    assert_matches(got, want, reduce=True)
    # Decode (L = 1) lower-right sees every key: the same as no mask.
    q1 = q[:, :, -1:]
    got = ops.scaled_dot_product_attention(q1, k, v, is_causal=True, lower_right=True)
    assert_matches(got, F.scaled_dot_product_attention(q1, k, v), reduce=True)


@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("mask_shape", [(5, 70), (2, 1, 5, 70), (1, 3, 1, 70), (1, 70)])
@pytest.mark.parametrize("dtype", dtypes("scaled_dot_product_attention"))
def test_sdpa_masks(dtype, mask_shape, kind):
    q, k, v = _qkv([(2, 3, 5, 8), (2, 3, 70, 8), (2, 3, 70, 8)], dtype)
    keep = torch.rand(mask_shape) > 0.3
    mask = keep if kind == "bool" else torch.where(keep, 0.0, -1e4).to(dtype) + make(mask_shape, dtype)
    out = ops.scaled_dot_product_attention(q, k, v, mask)
    assert_matches(out, SDPA(q, k, v, mask), reduce=True)


@pytest.mark.parametrize("dtype", dtypes("scaled_dot_product_attention"))
def test_sdpa_fully_masked_rows_are_zero_as_in_torch(dtype):
    q, k, v = _qkv([(1, 2, 4, 8), (1, 2, 100, 8), (1, 2, 100, 8)], dtype)
    keep = torch.ones(4, 100, dtype=torch.bool)
    keep[1] = False
    additive = torch.zeros(4, 100, dtype=dtype)
    additive[2] = float("-inf")
    for mask in (keep, additive):
        out = ops.scaled_dot_product_attention(q, k, v, mask)
        assert_matches(out, SDPA(q, k, v, mask), reduce=True)
    assert torch.all(ops.scaled_dot_product_attention(q, k, v, keep)[:, :, 1] == 0)
    assert torch.all(ops.scaled_dot_product_attention(q, k, v, additive)[:, :, 2] == 0)
    # torch itself gives 0 there (2.5 and later), the fact the kernels follow.
    assert torch.all(F.scaled_dot_product_attention(q.float(), k.float(), v.float(), keep)[:, :, 1] == 0)


@pytest.mark.parametrize("dtype", dtypes("scaled_dot_product_attention"))
def test_sdpa_gqa_and_expanded_kv(dtype):
    q, k, v = _qkv([(2, 8, 3, 16), (2, 4, 11, 16), (2, 4, 11, 16)], dtype)
    out = ops.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    assert_matches(out, SDPA(q, k, v, enable_gqa=True), reduce=True)
    # The same through expanded (stride 0) K/V views, without enable_gqa.
    ke = k[:, :, None].expand(2, 4, 2, 11, 16).reshape(2, 8, 11, 16)
    ve = v[:, :, None].expand(2, 4, 2, 11, 16).reshape(2, 8, 11, 16)
    assert_matches(ops.scaled_dot_product_attention(q, ke, ve), out, reduce=True)
    # One kv head broadcast to every query head without enable_gqa.
    out1 = ops.scaled_dot_product_attention(q, k[:, :1], v[:, :1])
    assert_matches(out1, SDPA(q, k[:, :1], v[:, :1]), reduce=True)
    causal = ops.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=True, lower_right=True)
    assert_matches(causal, SDPA(q, k, v, enable_gqa=True, is_causal=True, lower_right=True), reduce=True)


@pytest.mark.parametrize("dtype", dtypes("scaled_dot_product_attention"))
def test_sdpa_strided_offset_views_scale_and_out(dtype):
    # transformers' layout: projections [B, S, H*E] viewed [B, S, H, E] and
    # transposed; a KV cache sliced from a larger buffer (offset, strides).
    B, L, H, E, S = 2, 3, 4, 16, 20
    q = make((B, L, H * E), dtype).view(B, L, H, E).transpose(1, 2)
    cache = make((B, H, 64, E), dtype)
    k = cache[:, :, 5 : 5 + S]
    v = make((B, H, E, 64), dtype)[..., :S].transpose(-1, -2)  # column-major rows
    assert not q.is_contiguous() and k.storage_offset() > 0 and v.stride(-1) != 1
    out = ops.scaled_dot_product_attention(q, k, v, scale=0.3)
    assert_matches(out, SDPA(q, k, v, scale=0.3), reduce=True)
    dst = torch.empty(B, L, H, E, dtype=dtype).transpose(1, 2)
    got = ops.scaled_dot_product_attention(q, k, v, out=dst)
    assert got is dst
    assert_matches(dst, SDPA(q, k, v), reduce=True)
    assert_matches(
        ops.scaled_dot_product_attention(q, k, v, scale=None),
        SDPA(q, k, v, scale=1 / math.sqrt(E)),
        reduce=True,
    )


# Query chunks of 16 rows or more take the CPU plugin's blocked path (blocks
# of 64 queries against 64 keys, two GEMMs each): lengths inside one block,
# at its edges and over several, against key counts that end mid-block.
CHUNKS = [(16, 16), (16, 300), (64, 64), (65, 129), (130, 70), (33, 1)]


@pytest.mark.parametrize("L,S", CHUNKS, ids=[f"L{l}_S{s}" for l, s in CHUNKS])
@pytest.mark.parametrize("dtype", dtypes("scaled_dot_product_attention"))
def test_sdpa_query_chunks(dtype, L, S):
    q, k, v = _qkv([(2, 4, L, 16), (2, 2, S, 16), (2, 2, S, 24)], dtype)
    out = ops.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    assert_matches(out, SDPA(q, k, v, enable_gqa=True), reduce=True)
    for lower_right in (False, True):
        got = ops.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=True, lower_right=lower_right)
        want = SDPA(q, k, v, enable_gqa=True, is_causal=True, lower_right=lower_right)
        assert_matches(got, want, reduce=True)
    keep = torch.rand(L, S) > 0.3
    keep[3] = False  # a row that keeps no key is 0
    additive = torch.where(keep, 0.0, float("-inf")).to(dtype) + make((L, S), dtype)
    for mask in (keep, additive, keep[None, None, :1].expand(2, 4, L, S)):
        got = ops.scaled_dot_product_attention(q, k, v, mask, enable_gqa=True)
        assert_matches(got, SDPA(q, k, v, mask, enable_gqa=True), reduce=True)
    assert torch.all(ops.scaled_dot_product_attention(q, k, v, keep, enable_gqa=True)[:, :, 3] == 0)
    if dtype == torch.float32:  # the reference is torch itself
        want = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        got = ops.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        assert_matches(got, want, reduce=True)


@pytest.mark.parametrize("dtype", dtypes("scaled_dot_product_attention"))
def test_sdpa_query_chunk_layouts(dtype):
    # Sequence-first projections viewed heads-first, a sliced KV cache, V
    # column-major, a strided output, a head larger than the in-place
    # tiles take (E = 300, Ev = 260), and stride-0 (expanded) K/V.
    B, L, H, E, S = 2, 40, 4, 16, 90
    q = make((B, L, H * E), dtype).view(B, L, H, E).transpose(1, 2)
    k = make((B, H, 128, E), dtype)[:, :, 7 : 7 + S]
    v = make((B, H, E, 128), dtype)[..., :S].transpose(-1, -2)
    dst = torch.empty(B, L, H, E, dtype=dtype).transpose(1, 2)
    got = ops.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3, out=dst)
    assert got is dst
    assert_matches(dst, SDPA(q, k, v, is_causal=True, scale=0.3), reduce=True)
    qb, kb, vb = _qkv([(1, 2, 20, 300), (1, 2, 70, 300), (1, 2, 70, 260)], dtype)
    assert_matches(ops.scaled_dot_product_attention(qb, kb, vb), SDPA(qb, kb, vb), reduce=True)
    k1, v1 = make((1, 1, S, E), dtype), make((1, 1, S, E), dtype)
    ke, ve = k1.expand(B, H, S, E), v1.expand(B, H, S, E)
    assert ke.stride(1) == 0
    got = ops.scaled_dot_product_attention(q, ke, ve, is_causal=True, lower_right=True)
    assert_matches(got, SDPA(q, ke, ve, is_causal=True, lower_right=True), reduce=True)


def _large_exact_scores(L, S):
    """q, k, v whose scores reach about 1e4 (exp overflows float32 past 88)
    yet are exact in float32 on every path: integer q and k, so every partial
    dot product is an integer below 2**24, and scale 0.5. Scaling random
    normals instead makes the answer ill-conditioned: two keys whose scores
    differ by less than a float32 ulp of 1e4 split their weight one way in
    torch and another here, past any fair tolerance."""
    gen = torch.Generator().manual_seed(L * 1000 + S)
    q = torch.randint(-150, 151, (1, 1, L, 8), generator=gen).float()
    k = torch.randint(-150, 151, (1, 1, S, 8), generator=gen).float()
    v = torch.randn((1, 1, S, 8), generator=gen)
    return q, k, v


def _assert_large_scores_match(q, k, v):
    out = ops.scaled_dot_product_attention(q, k, v, scale=0.5)
    assert torch.isfinite(out).all()
    assert_matches(out, F.scaled_dot_product_attention(q, k, v, scale=0.5), reduce=True)


def test_sdpa_query_chunk_large_scores_and_nan():
    q, k, v = _large_exact_scores(20, 300)
    _assert_large_scores_match(q, k, v)
    q, k, v = _qkv([(1, 1, 20, 8), (1, 1, 300, 8), (1, 1, 300, 8)], torch.float32)
    k[0, 0, 100, 0] = float("nan")  # a NaN score poisons every row, as in torch
    out = ops.scaled_dot_product_attention(q, k, v)
    assert torch.isnan(out).all() and torch.isnan(F.scaled_dot_product_attention(q, k, v)).all()


# Edge values of the scores, on both kernel paths: rows one at a time (under
# 16 queries) and query blocks (16 or more).
EDGE_ROWS = (3, 20)


def _wide(mask, wide):
    return mask.to(wide) if mask is not None and mask.is_floating_point() else mask


def _edge_masks(L, S, dtype):
    keep = torch.ones(L, S, dtype=torch.bool)
    keep[0] = False  # a fully masked row
    keep[1, 2:] = False
    additive = torch.zeros(L, S, dtype=dtype)
    additive[1] = float("-inf")
    return {"none": None, "bool": keep, "additive": additive}


@pytest.mark.parametrize("mask", ["none", "bool", "additive", "causal"])
@pytest.mark.parametrize("dtype", dtypes("scaled_dot_product_attention"))
def test_sdpa_head_dim_0_averages_value_as_in_torch(dtype, mask):
    # Every score is the empty dot product 0, whatever the scale: softmax
    # averages v over the keys each row keeps (torch's answer), not 0.
    wide = torch.float64 if dtype == torch.float64 else torch.float32  # torch's reference
    causal = mask == "causal"
    for L in EDGE_ROWS:
        q, k, v = _qkv([(1, 2, L, 0), (1, 2, 5, 0), (1, 2, 5, 4)], dtype)
        m = None if causal else _edge_masks(L, 5, dtype)[mask]
        for scale in (None, 0.5, float("nan"), float("inf")):
            out = ops.scaled_dot_product_attention(q, k, v, m, is_causal=causal, scale=scale)
            expected = F.scaled_dot_product_attention(
                q.to(wide), k.to(wide), v.to(wide), _wide(m, wide), is_causal=causal, scale=scale
            ).to(dtype)
            assert not torch.isnan(expected).any()
            assert_matches(out, expected, reduce=True)
            if mask == "none":
                mean = v.to(wide).mean(-2, keepdim=True).expand(1, 2, L, 4)
                assert_matches(out, mean.to(dtype), reduce=True)


@pytest.mark.parametrize("mask", ["none", "bool", "additive", "causal"])
@pytest.mark.parametrize("dtype", dtypes("scaled_dot_product_attention"))
def test_sdpa_nan_scale_is_nan_everywhere_as_in_torch(dtype, mask):
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    causal = mask == "causal"
    nan = float("nan")
    for L in EDGE_ROWS:
        q, k, v = _qkv([(1, 2, L, 8), (1, 2, 5, 8), (1, 2, 5, 4)], dtype)
        m = None if causal else _edge_masks(L, 5, dtype)[mask]
        out = ops.scaled_dot_product_attention(q, k, v, m, is_causal=causal, scale=nan)
        expected = F.scaled_dot_product_attention(
            q.to(wide), k.to(wide), v.to(wide), _wide(m, wide), is_causal=causal, scale=nan
        )
        assert torch.isnan(expected).all()  # masked rows too: torch adds the mask to NaN
        assert torch.isnan(out).all(), (L, out)
        # No key at all: nothing to be NaN, 0 as in torch.
        out = ops.scaled_dot_product_attention(q, k[:, :, :0], v[:, :, :0], scale=nan)
        expected = F.scaled_dot_product_attention(
            q.to(wide), k[:, :, :0].to(wide), v[:, :, :0].to(wide), scale=nan
        )
        assert_matches(out, expected.to(dtype))


def test_sdpa_a_nan_query_row_is_nan_on_both_paths():
    for L in EDGE_ROWS:
        q, k, v = _qkv([(1, 1, L, 8), (1, 1, 5, 8), (1, 1, 5, 4)], torch.float32)
        q[0, 0, 1, :] = float("nan")  # every score of row 1 is NaN
        out = ops.scaled_dot_product_attention(q, k, v)
        expected = F.scaled_dot_product_attention(q, k, v)
        assert torch.isnan(expected[0, 0, 1]).all() and not torch.isnan(expected[0, 0, 0]).any()
        assert_matches(out, expected, reduce=True)


def test_sdpa_large_scores_stay_finite():
    # The online softmax subtracts the running maximum: scores near 1e4 must
    # not overflow exp.
    _assert_large_scores_match(*_large_exact_scores(2, 300))


def test_sdpa_errors():
    q, k, v = _qkv([(1, 4, 3, 8), (1, 4, 5, 8), (1, 4, 5, 8)], torch.float32)
    f = ops.scaled_dot_product_attention
    with pytest.raises(ValueError, match="at least 2 dims"):
        f(q[0, 0, 0], k, v)
    with pytest.raises(ValueError, match="E = 8"):
        f(q, k[..., :7], v)
    with pytest.raises(ValueError, match="key's S"):
        f(q, k, v[:, :, :4])
    with pytest.raises(ValueError, match="batch and head dims broadcast"):
        f(q, k[:, :2], v[:, :2])
    with pytest.raises(ValueError, match="divides query's Hq, got Hq = 4, key's 3"):
        f(q, k[:, :3], v[:, :3], enable_gqa=True)
    with pytest.raises(ValueError, match="same number of heads"):
        f(q, k[:, :2], v[:, :1], enable_gqa=True)
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        f(q, k, v, torch.ones(3, 5, dtype=torch.bool), is_causal=True)
    with pytest.raises(ValueError, match="lower_right=True .* needs is_causal=True"):
        f(q, k, v, lower_right=True)
    with pytest.raises(TypeError, match="attn_mask of dtype bool .* got int32"):
        f(q, k, v, torch.ones(3, 5, dtype=torch.int32))
    with pytest.raises(TypeError, match="got float64"):
        f(q, k, v, torch.zeros(3, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"broadcasts to the scores' \[1, 4, 3, 5\], got \[4, 5\]"):
        f(q, k, v, torch.ones(4, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="broadcasts to the scores'"):
        f(q, k, v, torch.ones(2, 4, 3, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="dtype"):
        f(q, k.double(), v)
    with pytest.raises(TypeError, match="is_causal"):
        f(q, k, v, is_causal=1)
    with pytest.raises(TypeError, match="scale"):
        f(q, k, v, scale="big")
    with pytest.raises(TypeError):
        f(q.int(), k.int(), v.int())
    with pytest.raises(ValueError, match="shape"):
        f(q, k, v, out=torch.empty(1, 4, 3, 7))
    with pytest.raises(ValueError, match="overlap|alias|share"):
        f(q, k, v, out=q)


# --- the ATen fallback ------------------------------------------------------------


def aten_cases():
    """A compact run of the cases above: (name, ok) pairs."""
    results = {}
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        half = dt in (torch.float16, torch.bfloat16)
        tol = dict(rtol=5e-2, atol=5e-2) if half else dict(rtol=1e-4, atol=1e-5)

        def check(name, got, want):
            results[f"{name} {dt}"] = bool(torch.allclose(got.float(), want.float(), equal_nan=True, **tol))

        def same(name, op, *args, **kwargs):
            check(name, getattr(ops, op)(*args, **kwargs), REFERENCES[op](*args, **kwargs))

        for case, (xs, cs) in ROTARY_CASES.items():
            x, c, s = make(xs, dt), make(cs, dt), make(cs, dt)
            for inter in (False, True):
                same(f"rotary {case} {inter}", "rotary_embedding", x, c, s, interleaved=inter)
        x, c, s = make((2, 3, 4, 10), dt), make((4, 3), dt), make((4, 3), dt)
        want = ROTARY(x, c, s)
        ops.rotary_embedding(x, c, s, out=x)
        check("rotary in place", x, want)
        for case, shapes in SDPA_SHAPES.items():
            q, k, v = _qkv(shapes, dt)
            same(f"sdpa {case}", SDPA_NAME, q, k, v)
        q, k, v = _qkv([(2, 8, 3, 16), (2, 4, 11, 16), (2, 4, 11, 16)], dt)
        for lr in (False, True):
            same(f"sdpa gqa causal {lr}", SDPA_NAME, q, k, v, enable_gqa=True, is_causal=True, lower_right=lr)
        q, k, v = _qkv([(2, 2, 9, 8), (2, 2, 4, 8), (2, 2, 4, 8)], dt)
        same("sdpa lower right L>S", SDPA_NAME, q, k, v, is_causal=True, lower_right=True)
        mask = torch.rand(9, 4) > 0.5
        mask[0] = False
        same("sdpa bool mask", SDPA_NAME, q, k, v, mask)
        fmask = make((2, 1, 9, 4), dt)
        same("sdpa float mask", SDPA_NAME, q, k, v, fmask)
    return results


@needs_aten
def test_aten_fallback_matches_torch():
    r = run_python(
        """
        import json
        from torchferry import plugins
        import test_ops_attention as t
        served = {op: plugins.kernel_for(op, "cpu", "float32") for op in ("rotary_embedding", "scaled_dot_product_attention")}
        print(json.dumps({"served": served, "checks": t.aten_cases()}))
        """,
        TORCHFERRY_PLUGINS="-cpu,-example_c",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(result["served"].values()) == {"aten"}, result["served"]
    failed = [k for k, ok in result["checks"].items() if not ok]
    assert not failed, failed
    assert len(result["checks"]) > 40
