"""torchferry.reference: one torch computation per built-in op, and the ops
agree with it on a plain case."""

import pytest
import torch

from torchferry import ops
from torchferry.reference import REFERENCES


def builtin_ops():
    return [s["name"] for s in ops.schemas() if not s["declared_by"]]


def test_every_builtin_op_has_a_reference():
    assert sorted(REFERENCES) == sorted(builtin_ops())


def plain_call(name):
    x = torch.randn(3, 8)
    calls = {
        "stack": (([x, x],), {"dim": 1}),
        "cast": ((x,), {"out": torch.empty(3, 8, dtype=torch.float64)}),
        "rms_norm": ((x, torch.randn(8)), {"eps": 1e-5}),
        "softmax": ((x,), {"dim": 0}),
        "matmul": ((x, torch.randn(8, 5)), {}),
        "add": ((x, torch.randn(8)), {"alpha": 2}),
        "mul": ((x, torch.randn(8)), {}),
        "clamp": ((x,), {"min": -0.5, "max": 0.5}),
        "noop": ((x, x), {}),
        # attention
        "rotary_embedding": ((x, torch.randn(3, 3), torch.randn(3, 3)), {"interleaved": True}),
        "linear": ((x, torch.randn(5, 8), torch.randn(5)), {}),
        "scaled_dot_product_attention": ((x, torch.randn(5, 8), torch.randn(5, 8)), {"is_causal": True}),
        "embedding": ((torch.tensor([[2, 0], [1, 2]]), x), {}),
        "cat": (([x, x[:1]],), {"dim": 0}),
        "add_rms_norm": ((x, torch.randn(3, 8), torch.randn(8)), {"eps": 1e-5}),
    }
    return calls.get(name, ((x,), {}))


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_op_agrees_with_its_reference(name):
    args, kwargs = plain_call(name)
    # Each side gets its own copies: an op may write an argument in place
    # (add_rms_norm's residual), and then so does its reference.
    mine = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    want = REFERENCES[name](*args, **kwargs)
    if name == "cast":
        kwargs = {"out": torch.empty_like(kwargs["out"])}
    got = getattr(ops, name)(*mine, **kwargs)
    if want is None:
        assert got is None
    else:
        torch.testing.assert_close(got, want)
    for theirs, ours in zip(args, mine):
        if isinstance(theirs, torch.Tensor):
            torch.testing.assert_close(ours, theirs)
