"""The v1 ops. Each takes tensors first, then attributes, then the keyword-only
`out=` (allocated when omitted, except for `cast`) and `stream=` (CUDA only:
a torch.cuda.Stream or a raw handle; torch's current stream by default).

The functions are the native ones themselves: a call goes from Python straight
into C++ with no Python frame in between.
"""

from ._C import (  # noqa: F401
    abs,
    add,
    cast,
    clamp,
    exp,
    matmul,
    mul,
    neg,
    noop,
    rms_norm,
    silu,
    silu_and_mul,
    softmax,
    stack,
)

__all__ = [
    "abs",
    "add",
    "cast",
    "clamp",
    "exp",
    "matmul",
    "mul",
    "neg",
    "noop",
    "rms_norm",
    "silu",
    "silu_and_mul",
    "softmax",
    "stack",
]
