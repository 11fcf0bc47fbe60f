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
    # An empty result has no bytes, but torch cannot make one whose
    # contiguous strides (sizes of 0 counted as 1) pass int64 either.
    "empty_result_strides": f"""
refused(lambda: ops.add(huge(0, BIG, 1), huge(1, 1, BIG)), "shape [0, {BIG}, {BIG}]", "strides")
refused(lambda: ops.matmul(huge(0, BIG, 2), huge(1, 2, BIG // 4)), "shape [0, {BIG}, {BIG // 4}]")
refused(lambda: ops.stack([huge(0, BIG)] * 3, dim=2), "shape [0, {BIG}, 3]")
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


# Random calls of the geometry rules on stride-0 operands whose sizes are
# tiny or near 2**61 to 2**63 - 1. Only the sizes of dims each output covers
# are drawn huge (a huge dim the kernel reduces over, such as matmul's k,
# would be a correct call that runs for years). Every call must end in a
# Python exception (refused, or out of memory for a result too large to
# allocate) or in a result: never a crash.
FUZZ = f"""
import random
import torch
from torchferry import ops
BIG, MAX = {BIG}, {MAX}
rng = random.Random(20261205)
HUGE = [2**61, 2**61 + 1, BIG - 1, BIG, BIG + 3, 2**62 + 2**61, MAX - 1, MAX]
def size():
    return rng.choice(HUGE) if rng.random() < 0.4 else rng.choice([0, 1, 2, 3])
def draw(*spec):
    # A shape torch can make: None dims drawn, the others as given.
    while True:
        s = [size() if d is None else d for d in spec]
        n = 1
        for d in s:
            n *= max(d, 1)  # as torch counts, a size of 0 as 1
        if n <= MAX:
            return s
def shape(rank):
    return draw(*[None] * rank)
def huge(s, dtype=torch.float32):
    t = torch.zeros([1] * len(s), dtype=dtype)
    return t.expand(*s) if s else t
calls = {{
    "abs": lambda: ops.abs(huge(shape(rng.randint(0, 3)))),
    "add": lambda: ops.add(huge(shape(rng.randint(0, 3))), huge(shape(rng.randint(0, 3)))),
    "mul": lambda: ops.mul(huge(shape(2)), 2.0),
    "clamp": lambda: ops.clamp(huge(shape(2)), min=huge(shape(2)), max=0.5),
    "stack": lambda: ops.stack([huge(shape(2))] * rng.randint(1, 3), dim=rng.randint(0, 2)),
    "cat": lambda: ops.cat([huge(shape(2)) for _ in range(rng.randint(1, 3))], dim=rng.randint(0, 1)),
    "embedding": lambda: ops.embedding(huge(shape(rng.randint(0, 2)), torch.int64), huge(draw(3, None))),
    "silu_and_mul": lambda: ops.silu_and_mul(huge(shape(2))),
    "rms_norm": lambda: (lambda x: ops.rms_norm(x, huge(x.shape[-1:])))(huge(shape(2))),
    "softmax": lambda: ops.softmax(huge(shape(2)), dim=-1),
    "rotary": lambda: (lambda x: ops.rotary_embedding(x, huge(draw(None)), huge(draw(None))))(huge(shape(2))),
    "matmul": lambda: ops.matmul(huge(draw(None, None, 2)), huge(draw(None, 2, None))),
    "linear": lambda: ops.linear(huge(draw(None, None, 2)), huge(draw(None, 2))),
    "sdpa": lambda: ops.scaled_dot_product_attention(
        huge(draw(None, None, 2)), huge(draw(None, 3, 2)), huge(draw(None, 3, None))),
}}
outcomes = {{}}
for i in range(400):
    name = rng.choice(sorted(calls))
    try:
        calls[name]()
        outcome = "ok"
    except (ValueError, IndexError, TypeError, RuntimeError, MemoryError) as e:
        outcome = type(e).__name__
    outcomes[(name, outcome)] = outcomes.get((name, outcome), 0) + 1
refused = sum(n for (name, o), n in outcomes.items() if o == "ValueError")
assert refused > 50, outcomes
print(sorted(outcomes.items()))
print("OK")
"""


def test_random_geometries_near_2_63_never_crash():
    r = run_python(FUZZ, timeout=300)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    assert r.stdout.strip().splitlines()[-1] == "OK", r.stdout + r.stderr
