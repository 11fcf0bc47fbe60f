"""torch.library.opcheck over every op's custom op (torchferry.library): the
schema matches what the kernel does (mutation of out, no aliasing), the fake
implementation agrees with the real kernel on shape, dtype and strides, and
AOT dispatch (static and dynamic) traces it. Each op gets representative
inputs below; an op without any fails test_every_op_has_samples."""

import pytest
import torch

from torchferry import library, ops


def r(*shape, dtype=torch.float32):
    return torch.randn(shape).to(dtype)


# op -> [(args, kwargs)] for the functional overload; the out overload gets
# the same arguments plus an out of the functional result's shape and dtype.
SAMPLES = {
    "abs": [((r(4, 6),), {}), ((r(3).to(torch.int32),), {})],
    "neg": [((r(4, 6).t(),), {})],
    "exp": [((r(2, 3, 4),), {})],
    "silu": [((r(8, 16, dtype=torch.float64),), {})],
    "add": [((r(4, 6), r(6)), {}), ((r(4, 6), r(4, 1)), {"alpha": 2.0})],
    "mul": [((r(4, 6), r(1, 6)), {})],
    "clamp": [((r(4, 6), r(6), None), {}), ((r(5),), {"max": r(5)})],
    "stack": [(([r(2, 3), r(2, 3), r(2, 3)], 1), {})],
    "cast": [],  # out only: CAST_SAMPLES
    "silu_and_mul": [((r(4, 12),), {})],
    "rms_norm": [((r(4, 32), r(32).abs() + 0.5, 1e-5), {})],
    "add_rms_norm": [((r(4, 32), r(4, 32), r(32).abs() + 0.5), {}), ((r(2, 3, 16), r(2, 3, 16), r(16)), {"eps": 1e-5})],
    "softmax": [((r(4, 10), 0), {}), ((r(3, 5),), {})],
    "matmul": [((r(4, 8), r(8, 3)), {}), ((r(2, 4, 8), r(2, 8, 3)), {}), ((r(8,), r(2, 3, 8, 3)), {}),
               ((r(2, 1, 4, 8), r(3, 8, 5)), {})],
    "noop": [(([r(3), r(2, 2)],), {})],
    "rotary_embedding": [((r(2, 5, 4, 8), r(5, 1, 4), r(5, 1, 4)), {}),
                         ((r(3, 6), r(3, 2), r(3, 2)), {"interleaved": True})],
    "scaled_dot_product_attention": [((r(1, 4, 3, 8), r(1, 2, 5, 8), r(1, 2, 5, 8)),
                                      {"is_causal": True, "lower_right": True, "enable_gqa": True})],
    "embedding": [((torch.tensor([[0, 3], [2, 1]]), r(4, 6)), {})],
    "cat": [(([r(2, 3), r(4, 3)], 0), {}), (([r(2, 3), r(2, 1)],), {"dim": -1})],
    "linear": [((r(2, 3, 8), r(5, 8), r(5)), {}), ((r(8), r(5, 8)), {})],
    "example::axpby": [((r(4, 8), r(4, 8)), {"a": 2.0, "b": -1.0})],
}
CAST_SAMPLES = [((r(4, 6),), {"out": torch.empty(4, 6, dtype=torch.float64)})]


def _cases():
    for name, samples in SAMPLES.items():
        for i, (args, kwargs) in enumerate(samples):
            yield pytest.param(name, args, kwargs, id=f"{name}-{i}")


def _packet(name):
    return getattr(torch.ops.torchferry, library.torch_name(name))


def test_every_op_has_samples():
    names = {s["name"] for s in ops.schemas()}
    assert names == set(SAMPLES), "ops without samples here: " + ", ".join(sorted(names - set(SAMPLES)))


@pytest.mark.parametrize("name,args,kwargs", list(_cases()))
def test_opcheck_functional(name, args, kwargs):
    torch.library.opcheck(_packet(name).default, args, kwargs)


def _fresh(args):
    """Copies of the tensors in args: an op may update one in place."""
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


@pytest.mark.parametrize("name,args,kwargs", [c for c in _cases() if c.values[0] != "noop"])
def test_opcheck_out(name, args, kwargs):
    like = _packet(name).default(*_fresh(args), **kwargs)
    out = torch.empty_like(like, memory_format=torch.contiguous_format)
    torch.library.opcheck(_packet(name).out, _fresh(args), dict(kwargs, out=out))
    _packet(name).out(*_fresh(args), **kwargs, out=out)  # opcheck wrote into copies
    torch.testing.assert_close(out, like, rtol=0, atol=0)


@pytest.mark.parametrize("args,kwargs", CAST_SAMPLES)
def test_opcheck_cast(args, kwargs):
    torch.library.opcheck(torch.ops.torchferry.cast.default, args, kwargs)
    torch.ops.torchferry.cast(*args, **kwargs)
    torch.testing.assert_close(kwargs["out"], args[0].double())
