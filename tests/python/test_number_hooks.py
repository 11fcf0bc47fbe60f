"""Python code that runs while a number argument is read: a subclass's
__float__, __index__ or __int__, a numpy scalar's, a 0-dim tensor's. Such code
may replace a tensor's memory (x.set_(...)); torchferry converts every number
before it reads any tensor, so the kernel sees the tensor as it is after the
hook ran, never memory the hook freed. Each case runs in its own interpreter:
the failure this guards against is a crash."""

import pytest

from conftest import needs_aten, run_python

PRELUDE = """
import numpy as np
import torch
import torch.nn.functional as F
import torchferry
from torchferry import ops

N = 1 << 22
x = torch.ones(N)
y = torch.ones(N)
w = torch.ones(N)


x2 = x.view(4, -1)  # a view of its own: swapping it frees nothing x holds
TARGET = [x]


def swap():
    # Frees the target's old storage: a kernel that read it before this ran
    # would read freed memory.
    t = TARGET[0]
    t.set_(torch.full(t.shape, 7.0))


class IntFloat(int):
    def __float__(self):
        swap()
        return 2.0


class IntIndex(int):
    def __index__(self):
        swap()
        return 0

    def __int__(self):
        swap()
        return 0


class FloatFloat(float):
    def __float__(self):
        swap()
        return 2.0


class NpFloat(np.float32):
    def __float__(self):
        swap()
        return 2.0


class NpInt(np.int64):
    def __index__(self):
        swap()
        return 0


class Index:
    def __index__(self):
        swap()
        return 0


class Float:
    def __float__(self):
        swap()
        return 2.0


def check(got, want):
    assert got.shape == want.shape and torch.allclose(got, want), (got[:4], want[:4])
"""

CASES = {
    "mul_int_subclass_float": "check(ops.mul(x, IntFloat(2)), x * 2)",
    "mul_float_subclass_float": "check(ops.mul(x, FloatFloat(2.0)), x * 2)",
    "add_alpha_int_subclass": "check(ops.add(x, y, alpha=IntFloat(2)), x + 2 * y)",
    "add_number_numpy_subclass": "check(ops.add(x, NpFloat(2.0)), x + float(np.float32(2.0)))",
    "clamp_bounds_subclass": "check(ops.clamp(x, min=IntFloat(3)), torch.clamp(x, min=3))",
    "rms_norm_eps_numpy_subclass": "TARGET[0] = x2\ncheck(ops.rms_norm(x2, w[: N // 4], eps=NpFloat(1e-6)),"
    " F.rms_norm(x2, (N // 4,), w[: N // 4], eps=2.0))",
    "rms_norm_eps_object": "TARGET[0] = x2\ncheck(ops.rms_norm(x2, w[: N // 4], eps=Float()),"
    " F.rms_norm(x2, (N // 4,), w[: N // 4], eps=2.0))",
    "softmax_dim_index_object": "TARGET[0] = x2\ncheck(ops.softmax(x2, Index()), torch.softmax(x2, 0))",
    "softmax_dim_numpy_subclass": "TARGET[0] = x2\ncheck(ops.softmax(x2, NpInt(0)), torch.softmax(x2, 0))",
    "softmax_dim_int_subclass": "TARGET[0] = x2\ncheck(ops.softmax(x2, IntIndex(0)), torch.softmax(x2, 0))",
    "axpby_declared_float": "check(ops.example.axpby(x, y, a=IntFloat(2), b=1.0), 2 * x + y)",
    "axpby_declared_numpy": "check(ops.example.axpby(x, y, a=NpFloat(2.0), b=Float()), 2 * x + 2 * y)",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_number_hook_runs_before_any_tensor_is_read(name):
    r = run_python(PRELUDE + "\n" + CASES[name] + "\nprint('OK')\n")
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), (
        f"exit {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    )


@pytest.mark.parametrize(
    "plugins", [None, pytest.param("-cpu,-example_c", marks=needs_aten, id="aten")], ids=["default", "aten"]
)
def test_a_zero_dim_tensor_eps_on_a_deep_input(plugins):
    """eps as a numpy float32 or a 0-dim tensor on a 17-dim input: the number
    is converted before the input is read, so the call is prepared once (it
    was prepared twice, and refused, where the ATen plugin served it)."""
    r = run_python(
        """
        import numpy as np, torch, torch.nn.functional as F
        from torchferry import ops
        x = torch.randn([1] * 16 + [8])
        w = torch.randn(8)
        want = F.rms_norm(x, (8,), w, eps=1e-6)
        for eps in (np.float32(1e-6), torch.tensor(1e-6), np.float64(1e-6)):
            got = ops.rms_norm(x, w, eps=eps)
            assert torch.allclose(got, want, atol=1e-5), eps
            r = torch.randn_like(x)
            ops.add_rms_norm(x, r.clone(), w, eps=eps)
        print("OK")
        """,
        TORCHFERRY_PLUGINS=plugins,
    )
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr[-3000:]


def test_a_torch_function_that_runs_while_requires_grad_is_read():
    """Under grad mode the call reads each tensor's requires_grad; for a
    subclass with autograd metadata that runs its __torch_function__, which
    here frees another argument's memory. The call is refused, never run on
    the freed memory."""
    r = run_python(
        """
        import torch
        from torchferry import ops
        N = 1 << 22
        y = torch.ones(N)

        class Hooked(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if getattr(func, "__name__", "") == "__get__" or "requires_grad" in repr(func):
                    y.set_(torch.full((N,), 7.0))
                return super().__torch_function__(func, types, args, kwargs or {})

        x = torch.ones(N).as_subclass(Hooked)
        x.requires_grad_(True)
        x.requires_grad_(False)  # autograd metadata stays: the getter runs
        # y's first storage stays alive, so that a stale read finds its ones
        # (8 would be right, 2 is the stale read) rather than freed memory.
        keep = y.view(-1)
        try:
            out = ops.add(x, y)
        except RuntimeError as e:
            assert "changed while requires_grad was read" in str(e), e
            print("REFUSED")
        else:
            assert torch.equal(out.as_subclass(torch.Tensor), torch.full((N,), 8.0)), out
            print("OK")
        """
    )
    assert r.returncode == 0 and r.stdout.strip() in ("OK", "REFUSED"), r.stdout + r.stderr[-3000:]
