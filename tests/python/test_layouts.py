"""What every op does with out= and with unusual tensors: out allocated when
omitted, out returned when given, 0-dim and zero-element inputs, subclasses,
nn.Parameter under no_grad, inference tensors, and tensors whose memory
does not say what they hold (neg-bit views, zero-element outs with stride 0)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from torchferry import ops
from conftest import MyT, assert_matches, conversions, make, plain


def _rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _silu_and_mul(x):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


# op -> (inputs builder (shape-parametrised), call, torch reference, tensors bridged)
OPS = {
    "abs": (lambda s: [make(s)], lambda a, **kw: ops.abs(*a, **kw), lambda a: torch.abs(*a), 2),
    "neg": (lambda s: [make(s)], lambda a, **kw: ops.neg(*a, **kw), lambda a: torch.neg(*a), 2),
    "exp": (lambda s: [make(s)], lambda a, **kw: ops.exp(*a, **kw), lambda a: torch.exp(*a), 2),
    "silu": (lambda s: [make(s)], lambda a, **kw: ops.silu(*a, **kw), lambda a: F.silu(*a), 2),
    "add": (lambda s: [make(s), make(s)], lambda a, **kw: ops.add(*a, 0.5, **kw), lambda a: torch.add(*a, alpha=0.5), 3),
    "mul": (lambda s: [make(s), make(s)], lambda a, **kw: ops.mul(*a, **kw), lambda a: torch.mul(*a), 3),
    "clamp": (
        lambda s: [make(s), make(s) - 1, make(s) + 1],
        lambda a, **kw: ops.clamp(*a, **kw),
        lambda a: torch.clamp(*a),
        4,
    ),
    "stack": (
        lambda s: [make(s), make(s)],
        lambda a, **kw: ops.stack(a, -1, **kw),
        lambda a: torch.stack(a, -1),
        3,
    ),
    "silu_and_mul": (
        lambda s: [make(s[:-1] + (2 * s[-1],)) if s else make((2,))],
        lambda a, **kw: ops.silu_and_mul(*a, **kw),
        lambda a: _silu_and_mul(*a),
        2,
    ),
    "rms_norm": (
        lambda s: [make(s or (1,)), make((s or (1,))[-1:])],
        lambda a, **kw: ops.rms_norm(*a, **kw),
        lambda a: _rms(*a),
        3,
    ),
    "softmax": (lambda s: [make(s)], lambda a, **kw: ops.softmax(*a, **kw), lambda a: torch.softmax(a[0], -1), 2),
    "matmul": (
        lambda s: [make((s + (3, 3))[-2:]), make((s + (3, 3))[-2:])],
        lambda a, **kw: ops.matmul(*a, **kw),
        lambda a: torch.matmul(*a),
        3,
    ),
}
# The ops whose kernels sum in an order of their own, as the op table says.
REDUCING = {s["name"] for s in ops.schemas() if s["accumulates"]}


@pytest.mark.parametrize("op", list(OPS))
def test_out_is_allocated_when_omitted(path, op):
    build, call, ref, n = OPS[op]
    args = build((3, 4))
    expected = ref(args)
    with conversions(path, n):
        out = call(args)
    assert type(out) is torch.Tensor
    assert out.is_contiguous() and out.device.type == "cpu"
    assert_matches(out, expected, reduce=op in REDUCING)
    # each call allocates a fresh out
    with conversions(path, n):
        again = call(args)
    assert again.data_ptr() != out.data_ptr()


@pytest.mark.parametrize("op", list(OPS))
def test_out_given_is_returned_and_written(path, op):
    build, call, ref, n = OPS[op]
    args = build((3, 4))
    expected = ref(args)
    out = torch.full(expected.shape, float("nan"))
    with conversions(path, n):
        result = call(args, out=out)
    assert result is out
    assert_matches(out, expected, reduce=op in REDUCING)
    out = torch.full(expected.shape, float("nan"))
    with conversions(path, n):
        result = call(args, out=out, stream=None)
    assert result is out
    assert_matches(out, expected, reduce=op in REDUCING)


@pytest.mark.parametrize("op", list(OPS))
def test_out_is_allocated_beside_the_input_whatever_the_default_device(path, op):
    # The output goes where the input lives, not to torch's default device.
    build, call, ref, n = OPS[op]
    args = build((3, 4))
    expected = ref(args)
    with torch.device("meta"):
        with conversions(path, n):
            out = call(args)
    assert out.device.type == "cpu" and out.dtype == expected.dtype
    assert_matches(out, expected, reduce=op in REDUCING)


@pytest.mark.parametrize("op", list(OPS))
def test_out_none_allocates(path, op):
    build, call, ref, n = OPS[op]
    args = build((2, 2))
    with conversions(path, n):
        out = call(args, out=None)
    assert_matches(out, ref(args), reduce=op in REDUCING)


@pytest.mark.parametrize("op", [o for o in OPS if o not in ("matmul", "rms_norm", "silu_and_mul")])
def test_zero_dim_inputs(path, op):
    build, call, ref, n = OPS[op]
    args = build(())
    expected = ref(args)
    with conversions(path, n):
        out = call(args)
    assert out.shape == expected.shape
    assert_matches(out, expected, reduce=op in REDUCING)


@pytest.mark.parametrize("shape", [(0,), (0, 4), (3, 0), (2, 0, 5)], ids=str)
@pytest.mark.parametrize("op", [o for o in OPS if o != "matmul"])
def test_zero_element_inputs(path, op, shape):
    build, call, ref, n = OPS[op]
    args = build(shape)
    expected = ref(args)
    with conversions(path, n):
        out = call(args)
    assert out.shape == expected.shape and out.numel() == 0


@pytest.mark.parametrize("op", list(OPS))
def test_subclass_inputs(path, op):
    build, call, ref, n = OPS[op]
    args = build((3, 4))
    expected = ref(args)
    with conversions(path, n):
        out = call([a.as_subclass(MyT) for a in args])
    assert type(out) is torch.Tensor
    assert_matches(out, expected, reduce=op in REDUCING)


@pytest.mark.parametrize("op", list(OPS))
def test_parameters_under_no_grad(path, op):
    build, call, ref, n = OPS[op]
    args = [torch.nn.Parameter(a) for a in build((3, 4))]
    with torch.no_grad():
        expected = ref([a.detach() for a in args])
        with conversions(path, n):
            out = call(args)
    assert not out.requires_grad
    assert_matches(out, expected, reduce=op in REDUCING)


@pytest.mark.parametrize("op", list(OPS))
def test_inference_tensors(path, op):
    build, call, ref, n = OPS[op]
    with torch.inference_mode():
        args = build((3, 4))
        expected = ref(args)
    with conversions(path, n):
        out = call(args)
    assert_matches(out, expected, reduce=op in REDUCING)
    with torch.inference_mode(), conversions(path, n):
        out = call(args)
    assert_matches(out, expected, reduce=op in REDUCING)


def test_detached_views_of_grad_tensors(path):
    w = torch.randn(3, 4, requires_grad=True)
    x = w.detach()[1:].t()
    with conversions(path, 2):
        assert_matches(ops.exp(x), torch.exp(plain(x)))


def test_grad_check_reads_each_tensors_autograd_state():
    # The check settles a tensor with no autograd metadata with one load;
    # every tensor that has some is asked of torch's TensorImpl.
    x = make((4,))
    leaf = make((4,)).requires_grad_()
    cases = {
        "leaf": leaf,
        "view of a leaf": leaf[1:],
        "result of a grad op": leaf * 2,
        "parameter": torch.nn.Parameter(make((4,))),
    }
    for name, t in cases.items():
        with pytest.raises(RuntimeError, match="automatic differentiation"):
            ops.abs(t)
        with pytest.raises(RuntimeError, match="automatic differentiation"):
            ops.add(make(t.shape), t)
    with pytest.raises(RuntimeError, match=r"out=\.\.\. arguments don't"):
        ops.abs(x, out=torch.empty(4).requires_grad_())
    # Metadata, but no grad: taken, as torch takes it.
    cleared = make((4,)).requires_grad_().requires_grad_(False)
    assert_matches(ops.abs(cleared), torch.abs(cleared))
    assert_matches(ops.abs(leaf.detach()), torch.abs(leaf.detach()))
    with torch.no_grad():
        assert_matches(ops.abs(leaf), torch.abs(leaf.detach()))


def test_views_of_views_of_views(path):
    base = make((6, 8, 10))
    x = base[1:5].transpose(0, 2)[2:9:3].unsqueeze(1).squeeze(1)[..., 1:].permute(1, 2, 0)
    assert x.storage_offset() > 0 and not x.is_contiguous()
    with conversions(path, 3):
        out = ops.mul(x, x)
    assert_matches(out, x * x)
    with conversions(path, 2):
        out = ops.softmax(x, 1)
    assert_matches(out, torch.softmax(x, 1), reduce=True)


# --- memory that does not say what it holds ----------------------------------------


def neg_view():
    """A real tensor with torch's negative bit set: its memory holds -value."""
    z = torch.complex(torch.zeros(3), torch.tensor([1.5, -2.0, 3.25]))
    t = z.conj().imag
    assert t.is_neg() and torch.equal(t, torch.tensor([-1.5, 2.0, -3.25]))
    return t


def test_neg_bit_input_is_resolved_or_refused(path):
    t = neg_view()
    try:
        out = ops.add(t, torch.zeros(3))
    except (TypeError, ValueError) as e:
        assert "neg" in str(e)
    else:
        assert_matches(out, t.resolve_neg() + 0)


def test_neg_bit_out_is_resolved_or_refused(path):
    out = neg_view()
    try:
        ops.abs(torch.tensor([1.0, -2.0, 3.0]), out=out)
    except (TypeError, ValueError) as e:
        assert "neg" in str(e)
    else:
        assert torch.equal(out.resolve_neg(), torch.tensor([1.0, 2.0, 3.0]))


def test_zero_element_out_with_stride_zero_is_accepted(path):
    x = torch.empty(0, 4)
    out = torch.empty_strided((0, 4), (0, 0))
    torch.neg(x, out=out)  # torch takes it
    with conversions(path, 2):
        assert ops.neg(x, out=out) is out
    a, b = np.empty((0, 4), np.float32), np.empty((0, 4), np.float32)  # strides (0, 0) via DLPack
    with conversions(path, 0, dlpack=2):
        assert ops.neg(a, out=b) is b
