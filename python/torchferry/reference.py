"""Torch's own computation of each built-in op: the results torchferry's
kernels are held to.

`REFERENCES[name]` takes the arguments `torchferry.ops.<name>` takes (less
`stream=`; `out=` only where the schema declares it, as for `cast`) and
returns what the op returns, computed with torch ops. Reductions accumulate
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


def _cast(input, *, out):
    out.copy_(input.to(out.dtype))
    return out


def _noop(*tensors):
    return None


REFERENCES = {
    "abs": torch.abs,
    "neg": torch.neg,
    "exp": torch.exp,
    "silu": torch.nn.functional.silu,
    "add": lambda input, other, alpha=1: torch.add(input, other, alpha=alpha),
    "mul": torch.mul,
    "clamp": lambda input, min=None, max=None: torch.clamp(input, min, max),
    "stack": lambda tensors, dim=0: torch.stack(list(tensors), dim),
    "cast": _cast,
    "silu_and_mul": _silu_and_mul,
    "rms_norm": _rms_norm,
    "softmax": _softmax,
    "matmul": _matmul,
    "noop": _noop,
    # The LLM ops of issue 12.
    "embedding": lambda input, weight: torch.nn.functional.embedding(
        input, weight
    ),
    "cat": lambda tensors, dim=0: torch.cat(list(tensors), dim),
}
