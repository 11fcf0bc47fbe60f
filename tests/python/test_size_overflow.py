"""Sizes near 2**62 and 2**63 - 1. A stride-0 view (torch.zeros(1).expand(n))
has any size torch can count in int64 and no memory behind it, so every
product and sum of sizes a preparation rule or kernel forms from it may wrap.
Each op must refuse such a call with a ValueError that names the sizes (or
end in another Python exception), never compute with a wrapped size. Each
case runs in a fresh interpreter of its own: a wrapped size was a segfault."""

import pytest

from conftest import run_python

pytestmark = pytest.mark.subprocess

BIG = 2**62
MAX = 2**63 - 1

PRELUDE = f"""
import torch
from torchferry import ops
BIG, MAX = {BIG}, {MAX}
def huge(*sizes, dtype=torch.float32):
    # A tensor of `sizes` with no memory behind it: every stride 0.
    return torch.zeros([1] * len(sizes), dtype=dtype).expand(*sizes)
def refused(fn, *needles, kind=ValueError):
    try:
        fn()
    except kind as e:
        for needle in needles:
            assert needle in str(e), (needle, str(e))
        return
    raise AssertionError("no exception")
"""

# name -> the body of a case; each must print OK at the end.
CASES = {
    # The rotary dim r = 2 * cos.shape[-1] doubled past int64 and wrapped
    # into a check that passed, then the kernel read 2**62 columns.
    "rotary_half_2**62": """
c = huge(BIG)
refused(lambda: ops.rotary_embedding(torch.randn(4, 8), c, c), "at most half", "got 4611686018427387904")
""",
    "rotary_half_max": """
c = huge(MAX)
refused(lambda: ops.rotary_embedding(torch.randn(4, 8), c, c), "at most half")
c = huge(1, BIG)
refused(lambda: ops.rotary_embedding(torch.randn(4, 8), c, c, interleaved=True), "at most half")
""",
    # Results whose element count multiplies past int64: refused before any
    # allocation, naming the shape.
    "broadcast": f"""
refused(lambda: ops.add(huge(BIG, 1), torch.zeros(1, 4)), "shape [{BIG}, 4]", "int64")
refused(lambda: ops.mul(huge(2, BIG // 4, 1), torch.zeros(1, 1, 4)), "shape [2, {BIG // 4}, 4]")
refused(lambda: ops.mul(huge(MAX, 1), torch.zeros(1, 2)), "shape [{MAX}, 2]")
refused(lambda: ops.add(huge(BIG, 1), torch.zeros(1, 4), out=torch.empty(0)), "shape [{BIG}, 4]")
""",
    "broadcast_bytes": f"""
# 2**62 float32 elements fit in int64 as a count, not as bytes.
refused(lambda: ops.add(huge(BIG // 2, 1), torch.zeros(1, 2)), "shape [{BIG // 2}, 2]", "bytes")
""",
    "clamp": f"""
refused(lambda: ops.clamp(huge(BIG, 1), min=torch.zeros(1, 4)), "shape [{BIG}, 4]")
""",
    "stack": f"""
refused(lambda: ops.stack([huge(BIG)] * 4), "shape [4, {BIG}]")
refused(lambda: ops.stack([huge(MAX)] * 2, dim=1), "shape [{MAX}, 2]")
""",
    "cat": f"""
refused(lambda: ops.cat([huge(BIG, 1)] * 5, dim=1), "shape [{BIG}, 5]")
refused(lambda: ops.cat([huge(BIG, 1)] * 2, dim=0), "add up past")
refused(lambda: ops.cat([huge(MAX)] * 2), "add up past")
""",
    "embedding": f"""
ids = huge(BIG, dtype=torch.int64)
refused(lambda: ops.embedding(ids, torch.randn(10, 4)), "shape [{BIG}, 4]")
ids = huge(MAX, dtype=torch.int32)
refused(lambda: ops.embedding(ids, torch.randn(10, 2)), "shape [{MAX}, 2]")
""",
    "matmul": f"""
refused(lambda: ops.matmul(huge(BIG, 1), torch.zeros(1, 4)), "shape [{BIG}, 4]")
refused(lambda: ops.matmul(huge(2, BIG // 4, 1), torch.zeros(1, 1, 4)), "shape [2, {BIG // 4}, 4]")
refused(lambda: ops.matmul(huge(MAX, 1, 1), huge(1, 1, 3)), "shape [{MAX}, 1, 3]")
""",
    "linear": f"""
refused(lambda: ops.linear(huge(BIG, 1), torch.zeros(4, 1)), "shape [{BIG}, 4]")
refused(lambda: ops.linear(huge(MAX, 1), torch.zeros(2, 1), torch.zeros(2)), "shape [{MAX}, 2]")
""",
    "sdpa_rows": f"""
q = huge(BIG, 1)  # [L, E]
refused(lambda: ops.scaled_dot_product_attention(q, torch.zeros(1, 1), torch.zeros(1, 4)), "shape [{BIG}, 4]")
refused(lambda: ops.scaled_dot_product_attention(huge(MAX, 1, 1), torch.zeros(1, 1, 1), torch.zeros(1, 1, 2)),
        "shape [{MAX}, 1, 2]")
""",
    # Head dims near 2**62: the kernel's scratch sizes multiplied past int64
    # and wrapped to a few KiB, which the blocks then overran. Now they are
    # an allocation that fails, reported as one.
    "sdpa_head_dim": """
E = 2**58
for L in (1, 16):
    q, k, v = huge(L, E), huge(1, E), torch.zeros(1, 4)
    refused(lambda: ops.scaled_dot_product_attention(q, k, v), "no memory", kind=MemoryError)
E = BIG
q, k, v = huge(1, E), huge(1, E), torch.zeros(1, 4)
refused(lambda: ops.scaled_dot_product_attention(q, k, v), "no memory", kind=MemoryError)
""",
    # torch.compile's specs of a declared op's arguments stand for
    # contiguous tensors: their element counts and strides multiplied past
    # int64 before the op's infer saw them.
    "infer_spec": f"""
from torchferry import _C
x = (({BIG}, 4), "float32")
refused(lambda: _C._infer("example::axpby", "cpu", (x, x, 1.0, 1.0), None), "shape [{BIG}, 4]", "2**63 - 1 bytes")
x = ((2, {BIG}, 2), "float16")
refused(lambda: _C._infer("example::axpby", "cpu", (x, x, 1.0, 1.0), None), "shape [2, {BIG}, 2]")
""",
}


@pytest.mark.parametrize("case", list(CASES))
def test_sizes_near_2_63_are_refused_not_wrapped(case):
    r = run_python(PRELUDE + CASES[case] + '\nprint("OK")\n', timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    assert r.stdout.strip().splitlines()[-1] == "OK", r.stdout + r.stderr
