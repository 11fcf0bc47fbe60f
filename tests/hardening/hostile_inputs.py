"""Hostile inputs to every op and to the bridge: each must be rejected cleanly.

"Cleanly" means: the call raises the exception a user would expect (never
SystemError, never a crash, never success), with a message, and afterwards the
process still computes correctly and every shim handle created was deleted.

Each input runs in a child forked from this process, so that one that kills
the process is reported as such and the others still run. Prints one line per
input and last:
    hostile inputs: N tried, M rejected cleanly
Exit status 0 only when M == N. Run it under any build of torchferry (the
AddressSanitizer run in tests/hardening/run.sh uses it too).
"""

import os
import signal
import sys
import warnings

import numpy as np
import torch

import torchferry
from torchferry import bridge, ops, plugins

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from forged_dlpack import Forged  # noqa: E402

warnings.filterwarnings("ignore")

REFUSED = (TypeError, ValueError, IndexError, NotImplementedError, OverflowError)
CASES = []


def hostile(name, call, expected=REFUSED, or_result=None):
    """`call` must raise one of `expected`; with `or_result`, returning a
    tensor equal to or_result() (torch's answer) is clean as well."""
    CASES.append((name, call, expected, or_result))


def f32(*shape):
    return torch.randn(*shape)


def np32(*shape):
    return np.ones(shape, dtype=np.float32)


class WrapperTensor(torch.Tensor):
    """A wrapper subclass: overrides __torch_dispatch__, as FakeTensor does."""

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


class DlpackRaises:
    def __dlpack__(self, *args, **kwargs):
        raise RuntimeError("this producer refuses to export")


class DlpackReturnsInt:
    def __dlpack__(self, *args, **kwargs):
        return 5


class DlpackNotCallable:
    __dlpack__ = 5


x4 = f32(4)
i4 = torch.arange(4, dtype=torch.int32)

# --- not tensors at all ------------------------------------------------------
hostile("abs(None)", lambda: ops.abs(None))
hostile("abs(3.5)", lambda: ops.abs(3.5))
hostile("abs('text')", lambda: ops.abs("text"))
hostile("abs([1, 2, 3])", lambda: ops.abs([1.0, 2.0, 3.0]))
hostile("abs(object())", lambda: ops.abs(object()))
hostile("noop(tensor, 'text')", lambda: ops.noop(x4, "text"))
hostile("bridge.view(None)", lambda: bridge.view(None))

# --- arguments and keywords --------------------------------------------------
hostile("abs() with no argument", lambda: ops.abs())
hostile("abs(x, x): too many positionals", lambda: ops.abs(x4, x4))
hostile("abs(x, bogus=1)", lambda: ops.abs(x4, bogus=1))
hostile("abs(x, out=3)", lambda: ops.abs(x4, out=3))
hostile("abs(x, stream=5) on the cpu", lambda: ops.abs(x4, stream=5))
hostile("cast(x) without out", lambda: ops.cast(x4))
hostile("noop(2**20 + 1 tensors)", lambda: ops.noop(*([x4] * (2**20 + 1))))
hostile("stack(2**20 + 1 tensors)", lambda: ops.stack([x4] * (2**20 + 1)))

# --- dtypes, layouts and devices torchferry does not carry -------------------
hostile("abs(complex64)", lambda: ops.abs(torch.ones(4, dtype=torch.complex64)))
hostile("abs(uint16)", lambda: ops.abs(torch.ones(4, dtype=torch.uint16)))
hostile("abs(float8_e4m3fn)", lambda: ops.abs(torch.ones(4).to(torch.float8_e4m3fn)))
hostile("abs(qint8)", lambda: ops.abs(torch.quantize_per_tensor(x4, 0.1, 0, torch.qint8)))
hostile("abs(sparse_coo)", lambda: ops.abs(x4.to_sparse()))
hostile("abs(sparse_csr)", lambda: ops.abs(f32(2, 2).to_sparse_csr()))
hostile("abs(nested tensor)",
        lambda: ops.abs(torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])))
hostile("abs(meta)", lambda: ops.abs(torch.empty(4, device="meta")))
hostile("abs(wrapper subclass)",
        lambda: ops.abs(torch.Tensor._make_subclass(WrapperTensor, torch.ones(2))))
hostile("abs(storage resized to 0 bytes, as FSDP frees it)",
        lambda: ops.abs(_freed_storage()))
hostile("exp(int32)", lambda: ops.exp(i4))
hostile("exp(bool)", lambda: ops.exp(torch.ones(4, dtype=torch.bool)))
hostile("silu_and_mul(int32)", lambda: ops.silu_and_mul(torch.ones(2, 4, dtype=torch.int32)))
hostile("softmax(int64)", lambda: ops.softmax(torch.ones(4, dtype=torch.int64)))
hostile("matmul(int32)", lambda: ops.matmul(torch.ones(2, 2, dtype=torch.int32),
                                           torch.ones(2, 2, dtype=torch.int32)))


def _freed_storage():
    t = f32(4)
    t.untyped_storage().resize_(0)
    return t


# --- out= that cannot be written ---------------------------------------------
hostile("abs(x, out=wrong shape)", lambda: ops.abs(x4, out=f32(5)))
hostile("abs(x, out=wrong dtype)", lambda: ops.abs(x4, out=torch.empty(4, dtype=torch.float64)))
hostile("abs(x, out=expanded)", lambda: ops.abs(x4, out=torch.empty(1).expand(4)))
hostile("abs(x, out=partly overlapping x)", lambda: _partial_overlap(ops.abs))
hostile("add(x, y, out=x transposed)", lambda: _transposed_alias())
hostile("cast(x, out=x)", lambda: ops.cast(x4, out=x4))
hostile("matmul(a, b, out=a)", lambda: (lambda a: ops.matmul(a, f32(3, 3), out=a))(f32(3, 3)))
hostile("stack([x, y], out=overlapping x)",
        lambda: (lambda b: ops.stack([b[:2], b[2:4]], out=b[:4].view(2, 2)))(f32(8)))
hostile("abs(x, out=requires_grad)", lambda: ops.abs(x4, out=torch.zeros(4, requires_grad=True)),
        RuntimeError)
hostile("add(x requiring grad, y)", lambda: ops.add(f32(4).requires_grad_(), x4), RuntimeError)
hostile("abs(numpy, out=read-only numpy)", lambda: ops.abs(np32(4), out=_read_only(np32(4))))
hostile("abs(numpy) with no out to allocate", lambda: ops.abs(np32(4)))
hostile("abs(expand to 2**40 elements)", lambda: ops.abs(torch.empty(1).expand(2**40)),
        (RuntimeError, MemoryError))


def _partial_overlap(op):
    base = f32(8)
    return op(base[:4], out=base[1:5])


def _transposed_alias():
    x = f32(3, 3)
    return ops.add(x, x, out=x.t())


def _read_only(a):
    a.flags.writeable = False
    return a


# --- shapes, dims and scalars ------------------------------------------------
hostile("add(x, y): shapes that do not broadcast", lambda: ops.add(f32(3), f32(4)))
hostile("add(float32, float64)", lambda: ops.add(x4, torch.ones(4, dtype=torch.float64)))
hostile("add(x, y, alpha='a')", lambda: ops.add(x4, x4, alpha="a"))
hostile("add(int, int, alpha=1.5)", lambda: ops.add(i4, i4, alpha=1.5))
hostile("add(int, int, alpha=2**70)", lambda: ops.add(i4, i4, alpha=2**70))
hostile("mul of 65-dim tensors (TF_MAX_NDIM is 64)", lambda: ops.mul(torch.ones([1] * 65), torch.ones([1] * 65)))
hostile("clamp(x) with no bound", lambda: ops.clamp(x4))
hostile("clamp(x, min='a')", lambda: ops.clamp(x4, min="a"))
hostile("clamp(int, min=0.5)", lambda: ops.clamp(i4, min=0.5))
hostile("clamp(x, min=tensor that does not broadcast)", lambda: ops.clamp(x4, min=f32(3)))
hostile("stack([])", lambda: ops.stack([]))
hostile("stack(tensor)", lambda: ops.stack(x4))
hostile("stack([x, y]) of different shapes", lambda: ops.stack([x4, f32(5)]))
hostile("stack([x, None])", lambda: ops.stack([x4, None]))
hostile("stack([x, x], dim=5)", lambda: ops.stack([x4, x4], dim=5))
hostile("stack([x, x], dim=-2**63)", lambda: ops.stack([x4, x4], dim=-(2**63)))
hostile("stack([x], dim='0')", lambda: ops.stack([x4], dim="0"))
hostile("silu_and_mul(odd last dim)", lambda: ops.silu_and_mul(f32(2, 3)))
hostile("silu_and_mul(0-dim)", lambda: ops.silu_and_mul(torch.tensor(1.0)))
hostile("rms_norm(x, weight of the wrong size)", lambda: ops.rms_norm(f32(2, 4), f32(3)))
hostile("rms_norm(x, w, eps='a')", lambda: ops.rms_norm(f32(2, 4), f32(4), eps="a"))
hostile("rms_norm(0-dim)", lambda: ops.rms_norm(torch.tensor(1.0), f32(1)))
hostile("softmax(x, dim=5)", lambda: ops.softmax(f32(2, 3), dim=5))
hostile("softmax(x, dim=1.5)", lambda: ops.softmax(f32(2, 3), dim=1.5))
hostile("softmax(x, dim=2**70)", lambda: ops.softmax(x4, dim=2**70))
hostile("matmul(1-D, 1-D) of sizes 4 and 3", lambda: ops.matmul(x4, f32(3)))
hostile("matmul: inner sizes differ", lambda: ops.matmul(f32(2, 3), f32(4, 2)))
hostile("matmul(4-D, 4-D), batches 2 and 3", lambda: ops.matmul(f32(2, 1, 2, 2), f32(3, 1, 2, 2)))
hostile("matmul: batches 2 and 3", lambda: ops.matmul(f32(2, 2, 2), f32(3, 2, 2)))
_empty_batch = (torch.ones(0, 4, 2), torch.ones(2, 3))
hostile("matmul of a batch of 0 by a 2-D operand", lambda: ops.matmul(*_empty_batch),
        or_result=lambda: torch.matmul(*_empty_batch))
hostile("matmul of a 2-D operand by a batch of 0",
        lambda: ops.matmul(torch.ones(4, 2), torch.ones(0, 2, 3)),
        or_result=lambda: torch.matmul(torch.ones(4, 2), torch.ones(0, 2, 3)))

# --- the decoder ops: linear, rotary_embedding, scaled_dot_product_attention,
# embedding, cat, add_rms_norm ------------------------------------------------
hostile("linear(x, weight of another in_features)", lambda: ops.linear(f32(2, 4), f32(3, 5)))
hostile("linear(x, 1-D weight)", lambda: ops.linear(f32(2, 4), f32(4)))
hostile("linear(0-dim, weight)", lambda: ops.linear(torch.tensor(1.0), f32(3, 1)))
hostile("linear(float32, float64 weight)", lambda: ops.linear(f32(2, 4), f32(3, 4).double()))
hostile("linear(x, w, float16 bias)", lambda: ops.linear(f32(2, 4), f32(3, 4), f32(3).half()))
hostile("linear(x, w, bias of the wrong length)", lambda: ops.linear(f32(2, 4), f32(3, 4), f32(4)))
hostile("linear(x, w, bias='b')", lambda: ops.linear(f32(2, 4), f32(3, 4), "b"))
hostile("linear(int32)", lambda: ops.linear(torch.ones(2, 4, dtype=torch.int32),
                                           torch.ones(3, 4, dtype=torch.int32)))
hostile("linear(x, weight whose storage was resized to 0)",
        lambda: ops.linear(f32(2, 4), _freed(3, 4)))
hostile("linear(x, meta weight)", lambda: ops.linear(f32(2, 4), torch.empty(3, 4, device="meta")))
hostile("linear(x, wrapper subclass weight)",
        lambda: ops.linear(f32(2, 4), _wrapper(3, 4)))
hostile("linear(x, negated-bit weight)", lambda: ops.linear(f32(2, 4), f32(3, 4)._neg_view()))
hostile("linear(x, DLPack weight whose strides overflow int64)",
        lambda: ops.linear(f32(2, 4), _strides_overflow(3, 4)))
hostile("linear(x, w, out=x)", lambda: (lambda x: ops.linear(x, f32(4, 4), out=x))(f32(4, 4)))
hostile("linear(x, w, b, out=overlapping b)",
        lambda: (lambda o: ops.linear(f32(1, 4), f32(4, 4), o[0], out=o))(f32(1, 4)))
hostile("linear(x, w, out=expanded)",
        lambda: ops.linear(f32(2, 4), f32(3, 4), out=torch.empty(1, 3).expand(2, 3)))
hostile("linear(x, weight requiring grad)",
        lambda: ops.linear(f32(2, 4), f32(3, 4).requires_grad_()), RuntimeError)
hostile("linear(expand to 2**40 rows)",
        lambda: ops.linear(torch.ones(1, 4).expand(2**40, 4), f32(3, 4)),
        (RuntimeError, MemoryError))
hostile("rotary_embedding(0-dim)", lambda: ops.rotary_embedding(torch.tensor(1.0), f32(4), f32(4)))
hostile("rotary_embedding: cos wider than half the head dim",
        lambda: ops.rotary_embedding(f32(2, 8), f32(2, 5), f32(2, 5)))
hostile("rotary_embedding: cos whose leading dims do not broadcast",
        lambda: ops.rotary_embedding(f32(2, 3, 8), f32(4, 4), f32(4, 4)))
hostile("rotary_embedding(int32)",
        lambda: ops.rotary_embedding(*(torch.ones(2, n, dtype=torch.int32) for n in (8, 4, 4))))
hostile("rotary_embedding(float32, float64 cos)",
        lambda: ops.rotary_embedding(f32(2, 8), f32(2, 4).double(), f32(2, 4).double()))
hostile("rotary_embedding(x, None, sin)", lambda: ops.rotary_embedding(f32(2, 8), None, f32(2, 4)))
hostile("rotary_embedding(interleaved='yes')",
        lambda: ops.rotary_embedding(f32(2, 8), f32(2, 4), f32(2, 4), interleaved="yes"))
hostile("rotary_embedding(out=cos)",
        lambda: (lambda c: ops.rotary_embedding(c, c[:, :2], c[:, :2], out=c))(f32(2, 4)))
hostile("rotary_embedding(out=expanded)",
        lambda: ops.rotary_embedding(f32(2, 8), f32(2, 4), f32(2, 4),
                                     out=torch.empty(1, 8).expand(2, 8)))
hostile("rotary_embedding(sin whose storage was resized to 0)",
        lambda: ops.rotary_embedding(f32(2, 8), f32(2, 4), _freed(2, 4)))
hostile("rotary_embedding(DLPack cos whose strides overflow int64)",
        lambda: ops.rotary_embedding(f32(2, 8), _strides_overflow(2, 4), f32(2, 4)))
hostile("rotary_embedding(expand to 2**40 rows)",
        lambda: ops.rotary_embedding(torch.ones(1, 8).expand(2**40, 8), f32(1, 4), f32(1, 4)),
        (RuntimeError, MemoryError))
_q, _kv = (1, 2, 3, 8), (1, 2, 5, 8)
hostile("scaled_dot_product_attention(1-D)", lambda: ops.scaled_dot_product_attention(x4, x4, x4))
hostile("scaled_dot_product_attention: key of another head dim",
        lambda: ops.scaled_dot_product_attention(f32(*_q), f32(1, 2, 5, 7), f32(*_kv)))
hostile("scaled_dot_product_attention: value of another length",
        lambda: ops.scaled_dot_product_attention(f32(*_q), f32(*_kv), f32(1, 2, 6, 8)))
hostile("scaled_dot_product_attention(enable_gqa): 3 kv heads for 4",
        lambda: ops.scaled_dot_product_attention(f32(1, 4, 3, 8), f32(1, 3, 5, 8), f32(1, 3, 5, 8),
                                                 enable_gqa=True))
hostile("scaled_dot_product_attention: heads that differ without enable_gqa",
        lambda: ops.scaled_dot_product_attention(f32(1, 4, 3, 8), f32(*_kv), f32(*_kv)))
hostile("scaled_dot_product_attention(mask and is_causal)",
        lambda: ops.scaled_dot_product_attention(f32(*_q), f32(*_kv), f32(*_kv),
                                                 torch.ones(3, 5, dtype=torch.bool),
                                                 is_causal=True))
hostile("scaled_dot_product_attention(int32 mask)",
        lambda: ops.scaled_dot_product_attention(f32(*_q), f32(*_kv), f32(*_kv),
                                                 torch.ones(3, 5, dtype=torch.int32)))
hostile("scaled_dot_product_attention(mask that does not broadcast)",
        lambda: ops.scaled_dot_product_attention(f32(*_q), f32(*_kv), f32(*_kv), f32(4, 5)))
hostile("scaled_dot_product_attention(meta mask)",
        lambda: ops.scaled_dot_product_attention(f32(*_q), f32(*_kv), f32(*_kv),
                                                 torch.empty(3, 5, dtype=torch.bool,
                                                             device="meta")))
hostile("scaled_dot_product_attention(lower_right without is_causal)",
        lambda: ops.scaled_dot_product_attention(f32(*_q), f32(*_kv), f32(*_kv), lower_right=True))
hostile("scaled_dot_product_attention(scale='x')",
        lambda: ops.scaled_dot_product_attention(f32(*_q), f32(*_kv), f32(*_kv), scale="x"))
hostile("scaled_dot_product_attention(is_causal='yes')",
        lambda: ops.scaled_dot_product_attention(f32(*_q), f32(*_kv), f32(*_kv), is_causal="yes"))
hostile("scaled_dot_product_attention(float32, float64 value)",
        lambda: ops.scaled_dot_product_attention(f32(*_q), f32(*_kv), f32(*_kv).double()))
hostile("scaled_dot_product_attention(int32)",
        lambda: ops.scaled_dot_product_attention(*(torch.ones(s, dtype=torch.int32)
                                                   for s in (_q, _kv, _kv))))
hostile("scaled_dot_product_attention(out=query)",
        lambda: (lambda q: ops.scaled_dot_product_attention(q, f32(*_kv), f32(*_kv), out=q))(
            f32(*_q)))
hostile("scaled_dot_product_attention(DLPack key of 2**62 rows)",
        lambda: ops.scaled_dot_product_attention(f32(*_q), Forged(shape=(1, 2, 2**62, 8)),
                                                 f32(*_kv)))
hostile("embedding(float32 ids)", lambda: ops.embedding(x4, f32(3, 2)))
hostile("embedding(uint64 ids)",
        lambda: ops.embedding(torch.ones(2, dtype=torch.uint64), f32(3, 2)))
hostile("embedding(id past the table)", lambda: ops.embedding(torch.tensor([1, 3]), f32(3, 2)))
hostile("embedding(id -1)",
        lambda: ops.embedding(torch.tensor([[-1]], dtype=torch.int32), f32(3, 2)))
hostile("embedding(id -2**63)", lambda: ops.embedding(torch.tensor([-2**63]), f32(3, 2)))
hostile("embedding(id 2**62)", lambda: ops.embedding(torch.tensor([2**62]), f32(3, 2)))
hostile("embedding(id 0 of a table of 0 rows)",
        lambda: ops.embedding(torch.tensor([0]), f32(0, 2)))
hostile("embedding(id 5 expanded to 2**20 places)",
        lambda: ops.embedding(torch.tensor([5]).expand(2**20), f32(3, 2)))
hostile("embedding(ids, 1-D table)", lambda: ops.embedding(torch.tensor([0]), x4))
hostile("embedding(ids, None)", lambda: ops.embedding(torch.tensor([0]), None))
hostile("embedding(ids, table, out=overlapping the table)",
        lambda: (lambda t: ops.embedding(torch.tensor([0]), t[:2], out=t[1:2]))(f32(3, 2)))
hostile("embedding(a bad id after good ones, out=): out stays as it was",
        lambda: _embedding_out_kept(), IndexError)
hostile("embedding(ids, DLPack table of 2**62 rows)",
        lambda: ops.embedding(torch.tensor([0]), Forged(shape=(2**62, 4))))
hostile("cat([float32, int64])", lambda: ops.cat([x4, torch.ones(4, dtype=torch.int64)]))
hostile("cat of 2-D and 3-D", lambda: ops.cat([f32(2, 3), f32(2, 3, 1)]))
hostile("cat: sizes differ off the dim", lambda: ops.cat([f32(2, 3), f32(3, 2)]))
hostile("cat([0-dim])", lambda: ops.cat([torch.tensor(1.0)]))
hostile("cat([])", lambda: ops.cat([]))
hostile("cat(tensor)", lambda: ops.cat(f32(2, 3)))
hostile("cat([x, None])", lambda: ops.cat([x4, None]))
hostile("cat([x], dim=5)", lambda: ops.cat([x4], 5))
hostile("cat([x], dim=-2**63)", lambda: ops.cat([x4], -(2**63)))
hostile("cat([x], dim=2**70)", lambda: ops.cat([x4], 2**70))
hostile("cat([x, meta])", lambda: ops.cat([x4, torch.empty(4, device="meta")]))
hostile("cat of 65-dim tensors", lambda: ops.cat([torch.ones([1] * 65)]))
hostile("cat(2**20 + 1 tensors)", lambda: ops.cat([x4] * (2**20 + 1)))
hostile("cat([a, b], out=overlapping a)",
        lambda: (lambda o: ops.cat([o[:1], f32(1, 3)], out=o))(f32(2, 3)))
hostile("cat(out=expanded)", lambda: ops.cat([f32(2), f32(2)], out=torch.empty(1).expand(4)))
hostile("cat([DLPack tensor of 2**62 x 4])",
        lambda: ops.cat([Forged(shape=(2**62, 4))], out=f32(4)))
hostile("add_rms_norm(x, residual expanded from one row)",
        lambda: _add_rms_norm_refused(torch.ones(1, 8).expand(3, 8)))
hostile("add_rms_norm(x, residual expanded to 2**40 rows)",
        lambda: _add_rms_norm_refused(torch.ones(1, 8).expand(2**40, 8),
                                      x=torch.ones(1, 8).expand(2**40, 8)))
hostile("add_rms_norm(x, residual=x)",
        lambda: (lambda r: _add_rms_norm_refused(r, x=r))(f32(3, 8)))
hostile("add_rms_norm(x, residual partly overlapping x)",
        lambda: (lambda b: _add_rms_norm_refused(b[1:], x=b[:3]))(f32(4, 8)))
hostile("add_rms_norm(x, residual, weight inside the residual)",
        lambda: (lambda b: _add_rms_norm_refused(b[:1], x=f32(1, 8), weight=b[0]))(f32(2, 8)))
hostile("add_rms_norm(x, residual, w, out=residual)",
        lambda: (lambda r: _add_rms_norm_refused(r, out=r))(f32(3, 8)))
hostile("add_rms_norm(x, residual, w, out=partly overlapping the residual)",
        lambda: (lambda b: _add_rms_norm_refused(b[:3], out=b[1:]))(f32(4, 8)))
hostile("add_rms_norm(x, residual, weight of the wrong size)",
        lambda: _add_rms_norm_refused(f32(3, 8), weight=f32(4)))
hostile("add_rms_norm(x, residual of another shape)", lambda: _add_rms_norm_refused(f32(8)))
hostile("add_rms_norm(x, float64 residual)", lambda: _add_rms_norm_refused(f32(3, 8).double()))
hostile("add_rms_norm(bfloat16 x, float32 residual)",
        lambda: _add_rms_norm_refused(f32(3, 8), x=f32(3, 8).bfloat16()))
hostile("add_rms_norm(int32)",
        lambda: _add_rms_norm_refused(torch.ones(3, 8, dtype=torch.int32),
                                      x=torch.ones(3, 8, dtype=torch.int32),
                                      weight=torch.ones(8, dtype=torch.int32)))
hostile("add_rms_norm(0-dim)",
        lambda: _add_rms_norm_refused(torch.tensor(1.0), x=torch.tensor(1.0), weight=f32(1)))
hostile("add_rms_norm(x, residual, weight whose storage was resized to 0)",
        lambda: _add_rms_norm_refused(f32(3, 8), weight=_freed(8)))
hostile("add_rms_norm(x, residual whose storage was resized to 0)",
        lambda: ops.add_rms_norm(f32(3, 8), _freed(3, 8), f32(8)))
hostile("add_rms_norm(x, meta residual)",
        lambda: ops.add_rms_norm(f32(3, 8), torch.empty(3, 8, device="meta"), f32(8)))
hostile("add_rms_norm(x, wrapper subclass residual)",
        lambda: ops.add_rms_norm(f32(2), _wrapper(2), f32(2)))
hostile("add_rms_norm(x, negated-bit residual)",
        lambda: _add_rms_norm_refused(f32(3, 8)._neg_view()))
hostile("add_rms_norm(x, read-only numpy residual)",
        lambda: ops.add_rms_norm(f32(4), _read_only(np32(4)), f32(4)))
hostile("add_rms_norm(x, DLPack residual whose strides overflow int64)",
        lambda: ops.add_rms_norm(f32(3, 8), _strides_overflow(3, 8), f32(8)))
hostile("add_rms_norm(x, residual, w, eps='a')", lambda: _add_rms_norm_refused(f32(3, 8), eps="a"))
hostile("add_rms_norm(x, residual, w, eps) with eps positional",
        lambda: (lambda r: _residual_kept(
            r, lambda: ops.add_rms_norm(f32(3, 8), r, f32(8), 1e-6)))(f32(3, 8)))
hostile("add_rms_norm(x, residual requiring grad)",
        lambda: _add_rms_norm_refused(f32(3, 8).requires_grad_()), RuntimeError)


def _freed(*shape):
    """_freed_storage() of any shape."""
    t = f32(*shape)
    t.untyped_storage().resize_(0)
    return t


def _wrapper(*shape):
    return torch.Tensor._make_subclass(WrapperTensor, torch.ones(*shape))


def _strides_overflow(rows, cols):
    """A DLPack [rows, cols] float32 tensor whose row stride, 2**62, puts its
    last element past what int64 can address."""
    return Forged(shape=(rows, cols), strides=(2**62, 1), elements=rows * cols)


def _residual_kept(residual, call):
    """call(), which must refuse, with `residual` (all the memory it views)
    as it was afterwards."""
    memory = residual if residual._base is None else residual._base
    before = memory.detach().clone()
    try:
        return call()
    finally:
        if not torch.equal(memory.detach(), before):
            raise AssertionError("the refused call changed the residual")


def _add_rms_norm_refused(residual, x=None, weight=None, **kwargs):
    """add_rms_norm(x, residual, weight), which must refuse and leave the
    residual as it was; x and weight are [3, 8] and [8] unless given."""
    x = f32(3, 8) if x is None else x
    weight = f32(8) if weight is None else weight
    return _residual_kept(residual, lambda: ops.add_rms_norm(x, residual, weight, **kwargs))


def _embedding_out_kept():
    """ids 0, 1 and 2, then 7 of a table of 3 rows: the refusal must come
    before any row is written to out."""
    out = torch.zeros(2, 2, 2)
    try:
        return ops.embedding(torch.tensor([[0, 1], [2, 7]]), f32(3, 2), out=out)
    finally:
        if out.any():
            raise AssertionError(f"the refused call wrote out: {out.tolist()}")


# --- uint16, uint32, uint64: carried, but torch computes only mul and cast ---
_u16, _u32, _u64 = (lambda *s, d=d: torch.ones(*s, dtype=d)
                    for d in (torch.uint16, torch.uint32, torch.uint64))
hostile("mul(uint64, int64)", lambda: ops.mul(_u64(4), torch.ones(4, dtype=torch.int64)))
hostile("mul(uint32, uint16)", lambda: ops.mul(_u32(4), _u16(4)))
hostile("mul(uint32, float32)", lambda: ops.mul(_u32(4), x4))
hostile("mul(uint16, uint16, out=uint32)", lambda: ops.mul(_u16(4), _u16(4), out=_u32(4)))
hostile("mul(uint64, uint64, out=expanded)",
        lambda: ops.mul(_u64(4), _u64(4), out=_u64(1).expand(4)))
hostile("mul(uint64, uint64, out=partly overlapping input)",
        lambda: (lambda b: ops.mul(b[:4], b[:4], out=b[1:5]))(_u64(8)))
hostile("mul(uint16): shapes that do not broadcast", lambda: ops.mul(_u16(4), _u16(5)))
hostile("mul of 65-dim uint64 tensors", lambda: ops.mul(_u64(*[1] * 65), _u64(*[1] * 65)))
hostile("mul(DLPack uint64 of 2**62 x 4, out=itself)",
        lambda: (lambda f: ops.mul(f, f, out=f))(Forged(shape=(2**62, 4), code=1, bits=64)))
hostile("mul(numpy uint16, out=read-only numpy)",
        lambda: ops.mul(np.ones(4, np.uint16), np.ones(4, np.uint16),
                        out=_read_only(np.ones(4, np.uint16))))
hostile("abs(uint32), which no default plugin serves", lambda: ops.abs(_u32(4)), NotImplementedError)
hostile("clamp(uint64, min=0)", lambda: ops.clamp(_u64(4), min=0), NotImplementedError)
hostile("cast(uint64, out=bits16)",
        lambda: ops.cast(_u64(4), out=torch.empty(4, dtype=torch.bits16)))
hostile("cast(uint16, out=complex64)",
        lambda: ops.cast(_u16(4), out=torch.empty(4, dtype=torch.complex64)))
hostile("cast(uint32, out=itself as int32)",
        lambda: (lambda u: ops.cast(u, out=u.view(torch.int32)))(_u32(4)))
hostile("cast(uint64, out=wrong shape)", lambda: ops.cast(_u64(4), out=f32(5)))
hostile("cast(uint64 expanded to 2**40, out of 4)",
        lambda: ops.cast(_u64(1).expand(2**40), out=f32(4)))

# --- DLPack producers that misbehave -----------------------------------------
hostile("__dlpack__ raises", lambda: ops.noop(DlpackRaises()))
hostile("__dlpack__ returns an int", lambda: ops.noop(DlpackReturnsInt()))
hostile("__dlpack__ is not callable", lambda: ops.noop(DlpackNotCallable()))
hostile("capsule of the wrong name", lambda: ops.noop(Forged(capsule_name=b"not_dltensor")))
hostile("numpy complex64", lambda: ops.abs(np.ones(4, np.complex64), out=np.ones(4, np.complex64)))
hostile("numpy datetime64", lambda: ops.noop(np.array(["2020-01-01"], dtype="datetime64[D]")))
hostile("DLPack dtype with 4 lanes", lambda: ops.noop(Forged(lanes=4)))
hostile("DLPack dtype code 9", lambda: ops.noop(Forged(code=9)))
hostile("DLPack device 7 (vulkan)", lambda: ops.noop(Forged(device=7)))
# NULL strides meant compact before DLPack 1.2 (test_layouts.py reads such a
# tensor); 1.2 forbids them.
hostile("DLPack 1.2 2-D tensor without strides",
        lambda: ops.noop(Forged(shape=(2, 2), strides=None, versioned=True, version=(1, 2))))
hostile("DLPack read-only versioned tensor as out",
        lambda: ops.abs(np32(4), out=Forged(versioned=True, read_only=True)))
hostile("DLPack negative ndim", lambda: ops.noop(Forged(shape=(), ndim=-1)))
hostile("DLPack negative size", lambda: ops.abs(Forged(shape=(-4,)), out=np32(4)))
hostile("DLPack negative size, out aliasing it",
        lambda: (lambda f: ops.abs(f, out=f))(Forged(shape=(-4,))))
hostile("DLPack sizes whose product overflows int64",
        lambda: (lambda f: ops.abs(f, out=f))(Forged(shape=(2**62, 4))))
hostile("DLPack non-empty tensor with a NULL data pointer",
        lambda: ops.abs(Forged(null_data=True), out=np32(4)))
hostile("DLPack producer whose deleter runs Python, in a call refused later",
        lambda: _python_deleter_refused(), ValueError)


def _python_deleter_refused():
    """The deleter runs when the refused call releases its tensors; Python
    code must not run with the refusal's exception pending."""
    producer = Forged(python_deleter=True)
    try:
        ops.abs(producer, out=np32(5))  # out of the wrong shape
    finally:
        if producer.deleted != 1:
            raise AssertionError(f"the deleter ran {producer.deleted} times; expected once")


# --- generated: argument names, DLPack versions and exceptions, int ranges ---
# A fixed seed, so that a run repeats the last one; each case is its own child.
_rng = __import__("random").Random(20261201)


def _odd_name(rng):
    """A keyword name mixing ASCII, lone surrogates, NUL, astral characters."""
    pools = [(0x61, 0x7A), (0xD800, 0xDFFF), (0, 0x1F), (0x80, 0xFF), (0x1F600, 0x1F64F)]
    return "".join(chr(rng.randint(*rng.choice(pools))) for _ in range(rng.randint(1, 12)))


for _i in range(40):
    _name = _odd_name(_rng)
    hostile(f"keyword name #{_i} {_name.encode('utf-8', 'backslashreplace')[:24]!r}",
            lambda n=_name: ops.add(f32(2), f32(2), **{n: 1}), expected=TypeError)

for _i in range(12):
    _version = (_rng.choice([0, 2, 3, 2**31, 2**32 - 1]), _rng.randint(0, 2**32 - 1))
    hostile(f"DLPack versioned tensor claiming version {_version}",
            lambda v=_version: ops.abs(Forged(versioned=True, version=v), out=f32(4)),
            expected=BufferError)


class _DlpackRaisesThis:
    def __init__(self, exc):
        self.exc = exc

    def __dlpack__(self, *args, **kwargs):
        raise self.exc


for _exc in (KeyboardInterrupt("from __dlpack__"), SystemExit(3), MemoryError("from __dlpack__"),
             TypeError("a TypeError of its own"), BufferError("busy")):
    hostile(f"__dlpack__ raises {type(_exc).__name__}",
            lambda e=_exc: ops.abs(f32(4), out=_DlpackRaisesThis(e)),
            expected=(type(_exc),) if not isinstance(_exc, BufferError) else TypeError)

for _dtype in (torch.int8, torch.int16, torch.int32, torch.uint8):
    _info = torch.iinfo(_dtype)
    for _value in (_info.max + 1, _info.min - 1 if _info.min else -_info.max - 1, 2**63, -2**70):
        hostile(f"clamp {_dtype} with min={_value}",
                lambda d=_dtype, v=_value: ops.clamp(torch.zeros(4, dtype=d), min=v),
                expected=OverflowError)


# --- the bridge and plugins from Python --------------------------------------
hostile("bridge.set_path('bogus')", lambda: bridge.set_path("bogus"))
hostile("bridge.set_path(None)", lambda: bridge.set_path(None))
hostile("plugins.set_option on an unknown plugin", lambda: plugins.set_option("nope", "k", "v"))
hostile("plugins.set_option on a plugin without options",
        lambda: plugins.set_option("cpu", "k", "v"))


def still_works():
    """The process computes correctly and holds no shim handle afterwards."""
    x = torch.tensor([-1.5, 2.0, -0.0, 3.25])
    out = torch.empty(4)
    ops.add(x, x, alpha=2.0, out=out)
    if out.tolist() != [-4.5, 6.0, 0.0, 9.75]:
        return f"add computes {out.tolist()} afterwards"
    if ops.abs(x).tolist() != [1.5, 2.0, 0.0, 3.25]:
        return "abs computes wrongly afterwards"
    counts = bridge.path_counts()
    if counts["shim_handles_created"] != counts["shim_handles_deleted"]:
        return (f"{counts['shim_handles_created']} shim handles created but "
                f"{counts['shim_handles_deleted']} deleted")
    return None


def run_one(call, expected, or_result):
    """In the child: '' when the input was rejected cleanly, else why not."""
    try:
        result = call()
    except SystemError as e:
        return f"SystemError (an exception lost inside the C code): {e}"
    except expected as e:
        if not str(e):
            return f"{type(e).__name__} without a message"
        problem = still_works()
        return f"rejected with {type(e).__name__}, but {problem}" if problem else ""
    except BaseException as e:  # noqa: BLE001 - anything else is the finding
        names = " or ".join(t.__name__ for t in (expected if isinstance(expected, tuple)
                                                  else (expected,)))
        return f"raised {type(e).__name__} ({str(e)[:200]}); expected {names}"
    if or_result is not None:
        want = or_result()
        if (isinstance(result, torch.Tensor) and result.shape == want.shape
                and torch.equal(result, want)):
            return still_works() or ""
        shape = tuple(result.shape) if isinstance(result, torch.Tensor) else type(result).__name__
        return f"returned {shape}; expected torch's {tuple(want.shape)} or a refusal"
    return "accepted: no exception"


def main():
    clean = 0
    for name, call, expected, or_result in CASES:
        sys.stdout.flush()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            try:
                answer = run_one(call, expected, or_result)
            except BaseException as e:  # noqa: BLE001
                answer = f"the check itself failed: {e!r}"
            os.write(write_end, ("R" + answer).encode())
            os.close(write_end)
            os._exit(0)
        os.close(write_end)
        chunks = []
        while True:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        answer = b"".join(chunks).decode(errors="replace")
        if os.WIFSIGNALED(status):
            why = f"the process died of {signal.Signals(os.WTERMSIG(status)).name}"
        elif os.WEXITSTATUS(status) != 0 or not answer.startswith("R"):
            why = f"the process exited with status {os.WEXITSTATUS(status)} (a sanitizer report?)"
        else:
            why = answer[1:]
        if why:
            print(f"FAIL {name}: {why}")
        else:
            clean += 1
            print(f"ok   {name}")
    summary = f"hostile inputs: {len(CASES)} tried, {clean} rejected cleanly"
    print(summary)
    count_file = os.environ.get("TF_HARDENING_COUNT_FILE")
    if count_file:
        with open(count_file, "w") as f:
            f.write(summary + "\n")
    return 0 if clean == len(CASES) else 1


if __name__ == "__main__":
    print(f"torch {torch.__version__}, torchferry from {os.path.dirname(torchferry.__file__)}, "
          f"bridge path {bridge.path()}")
    sys.exit(main())
