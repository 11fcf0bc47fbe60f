"""Numbers of every kind in every number argument, drawn at random with a
fixed seed: plain ints, floats and bools, int and float subclasses whose
__float__, __index__ or __int__ replaces a tensor's memory, numpy scalars of
every dtype and their subclasses, 0-dim tensors and objects that only have
__float__ or __index__. Every call must return a tensor of its input's shape
or raise a TypeError, ValueError, OverflowError or RuntimeError; none may
crash or read memory a hook freed (the victim's 256 KiB are unmapped when
freed). test_number_hooks.py checks the values for each kind of hook. The
draws run in a fresh interpreter, which must print its sentinel."""

import pytest

from conftest import run_python

SCRIPT = r"""
import random
import numpy as np
import torch
import torch.nn.functional as F
from torchferry import ops

rng = random.Random(SEED)
N = 1 << 16
victim = torch.ones(N)


def swap():
    victim.set_(torch.full((N,), 7.0))


def hooked(base, value):
    # A subclass of `base` whose conversions free the victim's memory first.
    class Hooked(base):
        def __float__(self):
            swap()
            return float(value)

        def __index__(self):
            swap()
            return int(value)

        def __int__(self):
            swap()
            return int(value)

    return Hooked(value)


class OnlyFloat:
    def __init__(self, v):
        self.v = v

    def __float__(self):
        swap()
        return float(self.v)


class OnlyIndex:
    def __init__(self, v):
        self.v = v

    def __index__(self):
        swap()
        return int(self.v)


NP = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_]


def number(kind_of_value):
    v = kind_of_value
    pick = rng.randrange(9)
    if pick == 0:
        return v
    if pick == 1 and isinstance(v, int) and not isinstance(v, bool):
        return hooked(int, v)
    if pick == 2:
        return hooked(float, float(v))
    if pick == 3:
        t = rng.choice(NP)
        try:
            return t(v)
        except (OverflowError, ValueError, TypeError):
            return v
    if pick == 4:
        t = rng.choice([np.float32, np.float64, np.int64])
        class Sub(t):
            def __float__(self):
                swap()
                return float(v)
        try:
            return Sub(v)
        except (OverflowError, ValueError, TypeError):
            return v
    if pick == 5:
        return torch.tensor(v)
    if pick == 6:
        return OnlyFloat(v)
    if pick == 7 and isinstance(v, int):
        return OnlyIndex(v)
    return v


VALUES = [0, 1, -1, 2, 3, 0.5, -2.5, 1e-6, 1e5, 300, 2**40, True, False, float("nan"), float("inf")]
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8, torch.bool]


def tensor(dtype):
    base = victim if dtype == torch.float32 and rng.random() < 0.5 else torch.randn(N) * 3
    return base.to(dtype) if dtype != torch.float32 else base


CALLS = [
    ("mul", lambda x, n: ops.mul(x, n)),
    ("add", lambda x, n: ops.add(x, n)),
    ("add_alpha", lambda x, n: ops.add(x, x, alpha=n)),
    ("clamp_min", lambda x, n: ops.clamp(x, min=n)),
    ("clamp_max", lambda x, n: ops.clamp(x, max=n)),
    ("rms_norm_eps", lambda x, n: ops.rms_norm(x.view(16, -1), torch.ones(N // 16, dtype=x.dtype), eps=n)),
    ("softmax_dim", lambda x, n: ops.softmax(x.view(16, -1), n)),
    ("axpby", lambda x, n: ops.example.axpby(x, x, a=n, b=n)),
]
ALLOWED = (TypeError, ValueError, OverflowError, RuntimeError, IndexError, NotImplementedError)
done = refused = 0
for i in range(DRAWS):
    name, call = rng.choice(CALLS)
    x = tensor(rng.choice(DTYPES))
    n = number(rng.choice(VALUES))
    try:
        out = call(x, n)
    except ALLOWED:
        refused += 1
        continue
    assert isinstance(out, torch.Tensor), (name, type(out))
    assert out.shape in (x.shape, x.view(16, -1).shape), (name, out.shape)
    done += 1
print("NUMBER FUZZ DONE", done, refused)
"""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_numbers_in_every_number_argument(seed):
    r = run_python(f"SEED = {seed}\nDRAWS = 400\n" + SCRIPT, timeout=600)
    assert r.returncode == 0 and "NUMBER FUZZ DONE" in r.stdout, (
        f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    )
