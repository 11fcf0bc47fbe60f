"""Torch's own computation of each built-in op: the results torchferry's
kernels are held to.

`REFERENCES[name]` takes the arguments `torchferry.ops.<name>` takes (less
`stream=`; `out=` only where the schema declares it, as for `cast`) and
returns what the op returns, computed with torch ops; an argument the op
updates in place (add_rms_norm's residual), the reference updates too.
Reductions accumulate
in float32 as the op table asks kernels to, then round once to the input's
dtype. The test suite compares against these, the conformance check
(`python -m torchferry check`) compares plugins against them, and
torch.compile integration uses them on fake tensors for output shapes.

Adding a built-in op: add its reference here beside its op table entry.
"""

import torch


def _rms_norm(input, weight, eps=1e-6):
    x = input.float()
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return (normed * weight.float()).to(input.dtype)


def _add_rms_norm(input, residual, weight, *, eps=1e-6):
    residual.add_(input)  # in place, as the op updates it
    return _rms_norm(residual, weight, eps)


def _softmax(input, dim=-1):
    return torch.softmax(input.float(), dim).to(input.dtype)


def _silu_and_mul(input):
    d = input.shape[-1] // 2
    x = input.float()
    return (torch.nn.functional.silu(x[..., :d]) * x[..., d:]).to(input.dtype)


def _matmul(input, other):
    if input.dtype in (torch.float16, torch.bfloat16):
        return torch.matmul(input.float(), other.float()).to(input.dtype)
    return torch.matmul(input, other)


def _linear(input, weight, bias=None):
    if input.dtype in (torch.float16, torch.bfloat16):
        b = None if bias is None else bias.float()
        return torch.nn.functional.linear(input.float(), weight.float(), b).to(input.dtype)
    return torch.nn.functional.linear(input, weight, bias)


def _cast(input, *, out):
    out.copy_(input.to(out.dtype))
    return out


def _noop(*tensors):
    return None


# --- attention ---


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rotary_embedding(input, cos, sin, *, interleaved=False):
    """Rotate-half is transformers' apply_rotary_pos_emb, computed in float32
    (float64 for float64).

    transformers' cos and sin span the rotary dim r as two equal halves
    (torch.cat((freqs, freqs), -1)); torchferry takes one half, so pass
    theirs as cos[..., : r // 2] and sin[..., : r // 2]. Dims of input past r
    pass through unchanged (partial rotary).
    """
    r = 2 * cos.shape[-1]
    wide = torch.float64 if input.dtype == torch.float64 else torch.float32
    x, c, s = input.to(wide), cos.to(wide), sin.to(wide)
    rot, rest = x[..., :r], x[..., r:]
    if interleaved:  # GPT-J: pairs (2i, 2i + 1)
        a, b = rot[..., 0::2], rot[..., 1::2]
        out = torch.stack((a * c - b * s, b * c + a * s), dim=-1).flatten(-2)
    else:
        out = rot * torch.cat((c, c), -1) + _rotate_half(rot) * torch.cat((s, s), -1)
    return torch.cat((out, rest), dim=-1).to(input.dtype)


def _scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    *,
    is_causal=False,
    scale=None,
    enable_gqa=False,
    lower_right=False,
):
    """torch's scaled_dot_product_attention (no dropout) in float32 for the
    16-bit dtypes; lower_right is torch.nn.attention.bias.causal_lower_right
    (key j is kept for query i when j <= i + S - L)."""
    if lower_right:
        if not is_causal:
            raise ValueError("lower_right=True needs is_causal=True")
        L, S = query.shape[-2], key.shape[-2]
        attn_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(S - L)
        is_causal = False
    wide = query.dtype in (torch.float16, torch.bfloat16)
    q, k, v = (t.float() if wide else t for t in (query, key, value))
    if wide and attn_mask is not None and attn_mask.dtype != torch.bool:
        attn_mask = attn_mask.float()
    if enable_gqa and q.shape[-3] != k.shape[-3]:
        # What enable_gqa does, spelled out for torch < 2.5, which lacks it:
        # each k and v head serves a run of query heads.
        groups = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(groups, -3), v.repeat_interleave(groups, -3)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale)
    return out.to(query.dtype)


_WIDE_UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)


def _add(input, other, alpha=1):
    """torch.add; for uint16/32/64, which torch does not add, the sum
    modulo 2**bits computed in int64 (whose wrap is uint64's)."""
    if input.dtype not in _WIDE_UNSIGNED:
        return torch.add(input, other, alpha=alpha)
    bits = torch.iinfo(input.dtype).bits
    alpha = (int(alpha) + 2**63) % 2**64 - 2**63  # int64 with alpha's low bits
    if bits == 64:
        x, y = input.view(torch.int64), other.view(torch.int64)
        return (x + y * alpha).view(torch.uint64)
    total = (input.to(torch.int64) + other.to(torch.int64) * alpha) & (2**bits - 1)
    return total.to(input.dtype)


def _clamp(input, min=None, max=None):
    """torch.clamp; for bool, which torch clamps only by one tensor bound,
    its definition min(max(input, min), max), with bool bounds (an int bound
    makes torch promote to int64, which torchferry refuses)."""
    if input.dtype != torch.bool:
        return torch.clamp(input, min, max)
    out = input
    if min is not None:
        out = torch.maximum(out, torch.as_tensor(min, device=input.device).bool())
    if max is not None:
        out = torch.minimum(out, torch.as_tensor(max, device=input.device).bool())
    return out.clone()


REFERENCES = {
    "abs": torch.abs,
    "neg": torch.neg,
    "exp": torch.exp,
    "silu": torch.nn.functional.silu,
    "add": _add,
    "mul": torch.mul,
    "clamp": _clamp,
    "stack": lambda tensors, dim=0: torch.stack(list(tensors), dim),
    "cast": _cast,
    "silu_and_mul": _silu_and_mul,
    "rms_norm": _rms_norm,
    "softmax": _softmax,
    "matmul": _matmul,
    "noop": _noop,
    # attention
    "rotary_embedding": _rotary_embedding,
    "scaled_dot_product_attention": _scaled_dot_product_attention,
    # linear
    "linear": _linear,
    # embedding and cat
    "embedding": lambda input, weight: torch.nn.functional.embedding(
        input, weight
    ),
    "cat": lambda tensors, dim=0: torch.cat(list(tensors), dim),
    "add_rms_norm": _add_rms_norm,
}
