"""Hostile inputs: each must raise a Python exception of the right type with a
message that says what is wrong, leak no shim handle and never crash. The
whole set runs once more in a fresh interpreter, which must survive it and
print a sentinel at the end.

Run as a script (python test_hostile_inputs.py) it plays the whole set on
every bridge path and prints the tally."""

import os
import sys
import warnings
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from torchferry import bridge, ops, plugins


def READ_ONLY(what):
    """How a read-only numpy array is refused: numpy >= 2 exports it flagged
    read-only, which torchferry refuses where it writes; numpy 1 refuses to
    export it at all, which torchferry reports with numpy's reason."""
    if int(np.__version__.split(".")[0]) >= 2:
        return ValueError, (what, "read-only")
    return TypeError, (what, "Cannot export readonly array")
from conftest import HOSTILE_TALLY, PATHS, make, no_handle_leak, run_python, rms_norm_ref

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hardening"))
from forged_dlpack import Forged  # noqa: E402

SENTINEL = "HOSTILE SET DONE: the process survived"


@dataclass
class Case:
    name: str
    call: Callable[[], object]
    exc: type
    match: tuple  # every one of these substrings is in the message
    # When set, a result equal to this reference also counts as clean (an
    # optional plugin, such as the ATen fallback, may serve the call).
    or_result: Optional[Callable[[], torch.Tensor]] = None


def x4(dtype=torch.float32):
    return make((4,), dtype)


def read_only_numpy():
    a = np.zeros(4, np.float32)
    a.flags.writeable = False
    return a


def fake_tensor():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        return torch.empty(4)


class Wrapper(torch.Tensor):
    """A wrapper subclass in the style of DTensor: no storage of its own."""

    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device)

    def __init__(self, elem):
        self.elem = elem

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda a: a.elem if isinstance(a, Wrapper) else a  # noqa: E731
        return func(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in (kwargs or {}).items()})


class DlpackRaises:
    def __dlpack__(self, *args, **kwargs):
        raise RuntimeError("boom from __dlpack__")


class DlpackNotACapsule:
    def __dlpack__(self, *args, **kwargs):
        return 42


class DlpackIsNone:
    __dlpack__ = None


def quiet(make_tensor):
    """make_tensor() without torch's beta/deprecation warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_tensor()


def nested(layout):
    return quiet(lambda: torch.nested.nested_tensor([torch.randn(2), torch.randn(3)], layout=layout))


def partial_overlap():
    x = make((8,))
    return ops.abs(x[:-1], out=x[1:])


def overlap_other():
    x, y = make((8,)), make((9,))
    return ops.add(x, y[1:], out=y[:-1])


def transposed_alias():
    x = make((4, 4))
    return ops.neg(x, out=x.t())


def rms_out_overlaps_weight():
    buf = make((3, 8))
    return ops.rms_norm(make((3, 8)), buf[0], out=buf)


def silu_and_mul_in_place():
    x = make((3, 8))
    return ops.silu_and_mul(x, out=x[:, :4])


def stack_out_aliases_input():
    out = make((2, 3))
    return ops.stack([out[0], make((3,))], out=out)


def grad_out():
    p = torch.nn.Parameter(make((4,)))
    return ops.abs(x4(), out=p)


def many_dims(n):
    return torch.ones([1] * n)


def freed(shape):
    """A tensor whose storage was resized to 0 bytes under it, as FSDP frees
    a sharded parameter's."""
    t = make(shape)
    t.untyped_storage().resize_(0)
    return t


def memory_of(t):
    """What a refused call must leave as it was: all of the buffer `t` views,
    or None where `t` has no memory here to read (freed, meta, a wrapper
    subclass, a foreign DLPack producer, not a tensor)."""
    if isinstance(t, np.ndarray):
        return t
    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.device.type != "cpu":
        return None
    base = t if t._base is None else t._base
    return base if base.untyped_storage().nbytes() else None


def untouched(call, *given):
    """call(), which is to refuse: if it changed any tensor of `given` (all
    the memory each views), that is the finding, in place of the refusal."""
    watched = [(m, m.copy() if isinstance(m, np.ndarray) else m.detach().clone())
               for m in map(memory_of, given) if m is not None]
    try:
        return call()
    finally:
        for m, saved in watched:
            same = np.array_equal(m, saved) if isinstance(m, np.ndarray) else torch.equal(m.detach(), saved)
            if not same:
                raise AssertionError(f"the call changed a tensor it was given: {saved.tolist()} became {m.tolist()}")


def linear_with(**given):
    """linear of a [2, 4] input by a [3, 4] weight plus a [3] bias, any of
    them (or out) replaced by `given`; nothing it is given may change."""
    a = dict(input=make((2, 4)), weight=make((3, 4)), bias=make((3,)))
    a.update(given)
    x, w, b = a.pop("input"), a.pop("weight"), a.pop("bias")
    return untouched(lambda: ops.linear(x, w, b, **a), x, w, b, a.get("out"))


def add_rms_norm_with(**given):
    """add_rms_norm of a [3, 8] input and residual with an [8] weight, any of
    them (or eps, out) replaced by `given`; nothing it is given may change,
    the residual it writes above all."""
    a = dict(input=make((3, 8)), residual=make((3, 8)), weight=make((8,)))
    a.update(given)
    x, r, w = a.pop("input"), a.pop("residual"), a.pop("weight")
    return untouched(lambda: ops.add_rms_norm(x, r, w, **a), x, r, w, a.get("out"))


def add_rms_norm_eps(eps, reference=False):
    """add_rms_norm with this eps, or torch's two calls when `reference`, on
    the same inputs. torch takes a non-finite eps, so torchferry may too; then
    the residual must be residual + input exactly and out torch's, NaN where
    torch's is (NaN made comparable); a refusal leaves the residual as it was."""
    g = torch.Generator().manual_seed(11)
    x, residual, weight = make((3, 8), gen=g), make((3, 8), gen=g), make((8,), gen=g)
    total, saved = residual + x, residual.clone()
    if reference:
        out = rms_norm_ref(total, (8,), weight, eps)
    else:
        try:
            out = ops.add_rms_norm(x, residual, weight, eps=eps)
        except ValueError:
            if not torch.equal(residual, saved):
                raise AssertionError("the refused call changed the residual") from None
            raise
        if not torch.equal(residual, total):
            raise AssertionError(f"residual is not residual + input after the call: {residual.tolist()}")
    return out.nan_to_num(nan=1234.5)


I32, I64, F64 = torch.int32, torch.int64, torch.float64
NAN_OUT = lambda shape, dt=torch.float32: torch.full(shape, 0, dtype=dt)  # noqa: E731

CASES = [
    # not tensors at all
    Case("none_input", lambda: ops.abs(None), TypeError, ("abs()", "input: expected a torch.Tensor", "got NoneType")),
    Case("int_input", lambda: ops.abs(3), TypeError, ("got int",)),
    Case("float_input", lambda: ops.neg(2.5), TypeError, ("got float",)),
    Case("str_input", lambda: ops.exp("tensor"), TypeError, ("got str",)),
    Case("list_input", lambda: ops.abs([1.0, 2.0]), TypeError, ("got list",)),
    Case("dict_input", lambda: ops.silu({}), TypeError, ("got dict",)),
    Case("object_input", lambda: ops.abs(object()), TypeError, ("got object",)),
    Case("none_other", lambda: ops.add(x4(), None), TypeError, ("other: expected a torch.Tensor", "NoneType")),
    Case("int_out", lambda: ops.abs(x4(), out=3), TypeError, ("out: expected a torch.Tensor", "got int")),
    Case("tuple_out", lambda: ops.abs(x4(), out=(x4(),)), TypeError, ("out: expected", "got tuple")),
    Case("view_of_none", lambda: bridge.view(None), TypeError, ("expected a torch.Tensor", "NoneType")),
    Case("noop_none", lambda: ops.noop(x4(), None), TypeError, ("noop()", "NoneType")),
    # numpy and other DLPack producers
    Case("numpy_read_only_out", lambda: ops.abs(x4(), out=read_only_numpy()), *READ_ONLY("out:")),
    Case(
        "numpy_broadcast_out",
        lambda: ops.abs(x4(), out=np.broadcast_to(np.float32(0), (4,))),
        *READ_ONLY("out:"),
    ),
    Case(
        "numpy_big_endian",
        lambda: ops.abs(np.arange(4, dtype=">f4"), out=np.zeros(4, np.float32)),
        TypeError,
        ("__dlpack__", "byte order"),
    ),
    Case(
        "numpy_complex",
        lambda: ops.abs(np.zeros(4, np.complex64), out=np.zeros(4, np.float32)),
        TypeError,
        ("does not carry DLPack dtype", "code 5"),
    ),
    Case(
        "numpy_without_out",
        lambda: ops.abs(np.zeros(4, np.float32)),
        TypeError,
        ("missing argument 'out'", "only when input is a torch.Tensor"),
    ),
    Case(
        "numpy_out_wrong_shape",
        lambda: ops.abs(x4(), out=np.zeros(5, np.float32)),
        ValueError,
        ("expected out of shape [4], got [5]",),
    ),
    Case("dlpack_raises", lambda: ops.abs(DlpackRaises(), out=x4()), TypeError, ("__dlpack__", "boom from __dlpack__")),
    Case("dlpack_not_capsule", lambda: ops.abs(DlpackNotACapsule(), out=x4()), TypeError, ("DLPack capsule",)),
    Case("dlpack_is_none", lambda: ops.abs(DlpackIsNone(), out=x4()), TypeError, ("could not be exported",)),
    # tensors torchferry cannot carry
    Case("fake_tensor", lambda: ops.abs(fake_tensor()), TypeError, ("FakeTensor", "__torch_dispatch__")),
    Case("fake_tensor_out", lambda: ops.abs(x4(), out=fake_tensor()), TypeError, ("out: FakeTensor",)),
    Case("wrapper_subclass", lambda: ops.abs(Wrapper(x4())), TypeError, ("Wrapper", "__torch_dispatch__")),
    Case("wrapper_subclass_other", lambda: ops.mul(x4(), Wrapper(x4())), TypeError, ("other: ", "Wrapper")),
    Case("nested_jagged", lambda: ops.abs(nested(torch.jagged)), TypeError, ("NestedTensor", "__torch_dispatch__")),
    Case("nested_strided", lambda: ops.abs(nested(torch.strided)), TypeError, ("input:", "nested tensors", "to_padded_tensor")),
    Case("sparse_coo", lambda: ops.abs(make((3, 3)).to_sparse()), TypeError, ("torch.strided", "torch.sparse_coo")),
    Case("sparse_csr", lambda: ops.abs(quiet(make((3, 3)).to_sparse_csr)), TypeError, ("torch.sparse_csr", "to_dense")),
    Case("sparse_out", lambda: ops.abs(make((3, 3)), out=make((3, 3)).to_sparse()), TypeError, ("out:", "sparse")),
    Case("meta_input", lambda: ops.abs(torch.empty(4, device="meta")), ValueError, ("meta tensors carry no data",)),
    Case("meta_out", lambda: ops.abs(x4(), out=torch.empty(4, device="meta")), ValueError, ("out:", "meta")),
    Case(
        "meta_bound",
        lambda: ops.clamp(x4(), torch.empty(4, device="meta")),
        ValueError,
        ("min:", "meta"),
    ),
    Case("meta_noop", lambda: ops.noop(x4(), torch.empty(1, device="meta")), ValueError, ("meta",)),
    Case(
        "quantized",
        lambda: ops.abs(quiet(lambda: torch.quantize_per_tensor(make((4,)), 0.1, 0, torch.qint8))),
        TypeError,
        ("does not carry dtype torch.qint8",),
    ),
    Case("complex64", lambda: ops.abs(torch.zeros(4, dtype=torch.complex64)), TypeError, ("torch.complex64",)),
    Case(
        "complex_out",
        lambda: ops.abs(x4(), out=torch.zeros(4, dtype=torch.complex64)),
        TypeError,
        ("out:", "torch.complex64"),
    ),
    Case("float8", lambda: ops.abs(torch.zeros(4, dtype=torch.float8_e4m3fn)), TypeError, ("torch.float8_e4m3fn",)),
    # uint16/32/64 are carried, but torch computes only mul, casts and data
    # movement for them (torchferry adds add, which wraps).
    Case("uint16_abs", lambda: ops.abs(torch.zeros(4, dtype=torch.uint16)), NotImplementedError,
         ("no loaded plugin has a kernel for uint16",)),
    Case("uint32_neg", lambda: ops.neg(torch.zeros(4, dtype=torch.uint32)), NotImplementedError, ("uint32",)),
    Case("uint64_clamp", lambda: ops.clamp(torch.zeros(4, dtype=torch.uint64), torch.zeros(4, dtype=torch.uint64)),
         NotImplementedError, ("uint64",)),
    Case("uint64_mul_float", lambda: ops.mul(torch.zeros(4, dtype=torch.uint64), x4()), TypeError,
         ("expected other to have dtype uint64",)),
    Case("cast_to_uint16_from_bits", lambda: ops.cast(x4(), out=torch.zeros(4, dtype=torch.bits16)), TypeError,
         ("bits16",)),
    # mismatches
    Case("add_dtypes", lambda: ops.add(x4(), x4(F64)), TypeError, ("expected other to have dtype float32", "float64")),
    Case("mul_int_float", lambda: ops.mul(x4(I32), x4()), TypeError, ("dtype int32", "got float32")),
    Case("clamp_bound_dtype", lambda: ops.clamp(x4(), x4(F64)), TypeError, ("expected min to have dtype float32",)),
    Case("matmul_dtypes", lambda: ops.matmul(make((2, 2)), make((2, 2), F64)), TypeError, ("other", "float64")),
    Case("stack_dtypes", lambda: ops.stack([x4(), x4(I64)]), TypeError, ("tensors[1]", "int64")),
    Case("rms_weight_dtype", lambda: ops.rms_norm(make((2, 4)), x4(F64)), TypeError, ("weight", "float64")),
    Case("add_no_broadcast", lambda: ops.add(x4(), make((5,))), ValueError, ("do not broadcast", "[4] and [5]")),
    Case("mul_no_broadcast", lambda: ops.mul(make((2, 3)), make((3, 2))), ValueError, ("do not broadcast",)),
    Case("clamp_no_broadcast", lambda: ops.clamp(x4(), max=make((3,))), ValueError, ("do not broadcast",)),
    Case("stack_shapes", lambda: ops.stack([make((2, 3)), make((3, 2))]), ValueError, ("tensors[1] of shape [2, 3]",)),
    Case("rms_weight_size", lambda: ops.rms_norm(make((3, 8)), x4()), ValueError, ("expected weight of shape [8]",)),
    Case("rms_weight_2d", lambda: ops.rms_norm(make((3, 8)), make((1, 8))), ValueError, ("weight of shape [8]",)),
    Case("out_shape", lambda: ops.abs(x4(), out=make((5,))), ValueError, ("expected out of shape [4], got [5]",)),
    Case("out_rank", lambda: ops.add(x4(), x4(), out=make((1, 4))), ValueError, ("expected out of shape [4]",)),
    Case(
        "out_broadcast_shape",
        lambda: ops.add(make((3, 1)), x4(), out=make((3, 1))),
        ValueError,
        ("out of shape [3, 4]",),
    ),
    Case("out_dtype", lambda: ops.abs(x4(), out=x4(F64)), TypeError, ("expected out to have dtype float32", "float64")),
    Case("out_dtype_int", lambda: ops.matmul(make((2, 2)), make((2, 2)), out=make((2, 2), I32)), TypeError, ("int32",)),
    # outs that cannot hold the result
    Case("out_expanded", lambda: ops.abs(x4(), out=make((1,)).expand(4)), ValueError, ("stride 0", "expanded")),
    Case(
        "out_expanded_inner",
        lambda: ops.add(make((2, 3)), make((2, 3)), out=make((2, 1)).expand(2, 3)),
        ValueError,
        ("stride 0 on dim 1",),
    ),
    Case("out_overlaps_partially", partial_overlap, ValueError, ("overlaps input", "exactly the same view")),
    Case("out_overlaps_other", overlap_other, ValueError, ("overlaps other",)),
    Case("out_transposed_alias", transposed_alias, ValueError, ("overlaps input",)),
    Case(
        "softmax_in_place",
        lambda: (lambda x: ops.softmax(x, out=x))(make((3, 4))),
        ValueError,
        ("softmax()", "does not work in place"),
    ),
    Case(
        "matmul_in_place",
        lambda: (lambda a: ops.matmul(a, make((4, 4)), out=a))(make((4, 4))),
        ValueError,
        ("matmul()", "does not work in place"),
    ),
    Case(
        "matmul_out_is_other",
        lambda: (lambda b: ops.matmul(make((4, 4)), b, out=b))(make((4, 4))),
        ValueError,
        ("overlaps other",),
    ),
    Case("stack_out_aliases_input", stack_out_aliases_input, ValueError, ("stack()", "overlaps an input")),
    Case(
        "rms_norm_in_place",
        lambda: (lambda x: ops.rms_norm(x, make((8,)), out=x))(make((3, 8))),
        ValueError,
        ("rms_norm()", "does not work in place"),
    ),
    Case("rms_norm_out_is_weight", rms_out_overlaps_weight, ValueError, ("overlaps weight",)),
    Case("silu_and_mul_in_place", silu_and_mul_in_place, ValueError, ("silu_and_mul()", "in place")),
    Case(
        "cast_in_place",
        lambda: (lambda x: ops.cast(x, out=x.view(torch.int32)))(x4()),
        ValueError,
        ("cast()", "does not work in place"),
    ),
    # arguments
    Case("too_many_positional", lambda: ops.abs(x4(), x4()), TypeError, ("abs() takes at most 1 positional", "2 given")),
    Case("too_many_for_add", lambda: ops.add(x4(), x4(), 1, 2), TypeError, ("add() takes at most 3",)),
    Case("too_few", lambda: ops.add(x4()), TypeError, ("add() missing required argument 'other' (pos 2)",)),
    Case("no_arguments", lambda: ops.abs(), TypeError, ("missing required argument 'input'",)),
    Case("unknown_keyword", lambda: ops.abs(x4(), foo=1), TypeError, ("unexpected keyword argument 'foo'",)),
    Case("keyword_on_stack", lambda: ops.stack([x4()], axis=0), TypeError, ("unexpected keyword argument 'axis'",)),
    Case("duplicate_keyword", lambda: ops.add(x4(), x4(), other=x4()), TypeError, ("multiple values", "'other'")),
    Case("duplicate_input", lambda: ops.abs(x4(), input=x4()), TypeError, ("multiple values for argument 'input'",)),
    Case("noop_keyword", lambda: ops.noop(x=x4()), TypeError, ("noop() takes no keyword arguments",)),
    Case("softmax_dim_high", lambda: ops.softmax(make((3, 4)), 2), IndexError, ("[-2, 1], but got 2",)),
    Case("softmax_dim_low", lambda: ops.softmax(make((3, 4)), dim=-3), IndexError, ("dimension out of range",)),
    Case("softmax_0dim_dim", lambda: ops.softmax(torch.tensor(1.0), 1), IndexError, ("[-1, 0], but got 1",)),
    Case("stack_dim_high", lambda: ops.stack([make((2, 3))], 3), IndexError, ("[-3, 2], but got 3",)),
    Case("stack_dim_low", lambda: ops.stack([make((2, 3))], -4), IndexError, ("dimension out of range",)),
    Case("dim_float", lambda: ops.softmax(x4(), 0.0), TypeError, ("expected dim to be an int, got float",)),
    Case("dim_str", lambda: ops.stack([x4()], "0"), TypeError, ("expected dim to be an int, got str",)),
    Case("dim_none", lambda: ops.softmax(x4(), None), TypeError, ("dim", "NoneType")),
    Case("dim_huge", lambda: ops.softmax(x4(), 2**70), OverflowError, ("int",)),
    Case("alpha_float_for_int", lambda: ops.add(x4(I32), x4(I32), 1.5), TypeError, ("alpha is a float", "int32")),
    Case("alpha_str", lambda: ops.add(x4(), x4(), alpha="2"), TypeError, ("expected alpha to be a number, got str",)),
    Case("alpha_none", lambda: ops.add(x4(), x4(), alpha=None), TypeError, ("alpha", "NoneType")),
    Case("alpha_overflow", lambda: ops.add(x4(I64), x4(I64), alpha=2**64), OverflowError, ("alpha", "int64")),
    Case("alpha_tensor", lambda: ops.add(x4(), x4(), alpha=x4()), TypeError, ("alpha", "Tensor")),
    Case("clamp_both_none", lambda: ops.clamp(x4(), None, None), ValueError, ("at least one of 'min' or 'max'",)),
    Case("clamp_no_bounds", lambda: ops.clamp(x4()), ValueError, ("at least one of 'min' or 'max'",)),
    Case("clamp_float_for_int", lambda: ops.clamp(x4(I32), min=0.5), TypeError, ("min is a float", "int32")),
    Case("clamp_str_bound", lambda: ops.clamp(x4(), max="1"), TypeError, ("max: expected a torch.Tensor", "str")),
    Case("stack_empty_list", lambda: ops.stack([]), ValueError, ("non-empty",)),
    Case("stack_empty_tuple", lambda: ops.stack(()), ValueError, ("non-empty",)),
    Case("stack_a_tensor", lambda: ops.stack(make((2, 3))), TypeError, ("list or tuple", "got Tensor")),
    Case("stack_generator", lambda: ops.stack(t for t in [x4()]), TypeError, ("list or tuple", "generator")),
    Case("stack_none_item", lambda: ops.stack([x4(), None]), TypeError, ("tensors[1]: expected a torch.Tensor",)),
    Case("silu_and_mul_odd", lambda: ops.silu_and_mul(make((2, 5))), ValueError, ("even last dim", "[2, 5]")),
    Case("silu_and_mul_0dim", lambda: ops.silu_and_mul(torch.tensor(1.0)), ValueError, ("at least one dim",)),
    Case("rms_norm_0dim", lambda: ops.rms_norm(torch.tensor(1.0), x4()), ValueError, ("at least one dim",)),
    Case("rms_norm_eps_str", lambda: ops.rms_norm(make((2, 4)), x4(), "1e-6"), TypeError, ("eps to be a float", "str")),
    Case("matmul_k", lambda: ops.matmul(make((2, 3)), make((4, 5))), ValueError, ("[2, 3] and [4, 5] cannot be multiplied",)),
    Case("matmul_batch", lambda: ops.matmul(make((2, 3, 4)), make((3, 4, 5))), ValueError, ("cannot be multiplied",)),
    Case("matmul_1d", lambda: ops.matmul(x4(), make((5,))), ValueError, ("[4] and [5] cannot be multiplied",)),
    Case("matmul_4d", lambda: ops.matmul(make((2, 2, 3, 4)), make((3, 2, 4, 5))), ValueError, ("cannot be multiplied",)),
    Case("matmul_0d", lambda: ops.matmul(torch.tensor(1.0), make((2, 2))), ValueError, ("at least 1 dim",)),
    Case("matmul_rank_65", lambda: ops.matmul(make((1,) * 65), make((1, 1))), ValueError,
         ("input has 65 dims", "at most 64 dims (TF_MAX_NDIM)")),
    Case("add_65_dims", lambda: ops.add(many_dims(65), many_dims(1)), ValueError,
         ("input has 65 dims", "at most 64 dims")),
    Case("add_broadcast_to_65_dims", lambda: ops.add(many_dims(64), many_dims(1).expand([2] + [1] * 64)),
         ValueError, ("at most 64",)),
    Case("stack_64_dims", lambda: ops.stack([many_dims(64)]), ValueError, ("stack into 65", "at most 64 dims")),
    # autograd, dtypes without kernels, streams
    Case(
        "requires_grad",
        lambda: ops.abs(make((4,)).requires_grad_()),
        RuntimeError,
        ("abs()", "automatic differentiation", "torch.no_grad()"),
    ),
    Case(
        "requires_grad_other",
        lambda: ops.mul(x4(), torch.nn.Parameter(x4())),
        RuntimeError,
        ("automatic differentiation",),
    ),
    Case("requires_grad_out", grad_out, RuntimeError, ("automatic differentiation",)),
    Case("exp_int", lambda: ops.exp(x4(I32)), TypeError, ("exp()", "expected a floating-point input", "int32")),
    Case("silu_bool", lambda: ops.silu(x4(torch.bool)), TypeError, ("floating-point", "bool")),
    Case("softmax_int", lambda: ops.softmax(x4(I64)), TypeError, ("floating-point", "int64")),
    Case("matmul_int", lambda: ops.matmul(make((2, 2), I32), make((2, 2), I32)), TypeError, ("floating-point",)),
    Case("rms_norm_int", lambda: ops.rms_norm(make((2, 4), I32), x4(I32)), TypeError, ("floating-point",)),
    Case("silu_and_mul_int", lambda: ops.silu_and_mul(make((2, 4), I64)), TypeError, ("floating-point",)),
    Case("cast_without_out", lambda: ops.cast(x4()), TypeError, ("cast() missing required argument 'out'",)),
    Case("cast_out_none", lambda: ops.cast(x4(), out=None), TypeError, ("missing required argument 'out'",)),
    Case("stream_on_cpu", lambda: ops.abs(x4(), stream=1), ValueError, ("stream= applies to CUDA tensors only",)),
    Case("stream_object_on_cpu", lambda: ops.matmul(make((2, 2)), make((2, 2)), stream=object()), ValueError, ("cpu",)),
    Case(
        "abs_int8_no_kernel",
        lambda: ops.abs(torch.tensor([-3, 0, 5], dtype=torch.int8)),
        NotImplementedError,
        ("abs(): no loaded plugin has a kernel for int8 on cpu", "torchferry info"),
        or_result=lambda: torch.abs(torch.tensor([-3, 0, 5], dtype=torch.int8)),
    ),
    Case(
        "neg_uint8_no_kernel",
        lambda: ops.neg(torch.tensor([1, 2, 250], dtype=torch.uint8)),
        NotImplementedError,
        ("no loaded plugin has a kernel for uint8",),
        or_result=lambda: torch.neg(torch.tensor([1, 2, 250], dtype=torch.uint8)),
    ),
    Case(
        "mul_bool_no_kernel",
        lambda: ops.mul(torch.tensor([True, False]), torch.tensor([True, True])),
        NotImplementedError,
        ("kernel for bool",),
        or_result=lambda: torch.mul(torch.tensor([True, False]), torch.tensor([True, True])),
    ),
    # attention: rotary_embedding and scaled_dot_product_attention
    Case("rotary_0dim", lambda: ops.rotary_embedding(torch.tensor(1.0), x4(), x4()), ValueError, ("0-dim",)),
    Case(
        "rotary_wide_cos",
        lambda: ops.rotary_embedding(make((2, 8)), make((2, 5)), make((2, 5))),
        ValueError,
        ("at most half input's last dim 8", "got 5"),
    ),
    Case(
        "rotary_cos_leading",
        lambda: ops.rotary_embedding(make((2, 3, 8)), make((4, 4)), make((4, 4))),
        ValueError,
        ("broadcast to input's leading dims [2, 3]", "[4, 4]"),
    ),
    Case("rotary_sin_shape", lambda: ops.rotary_embedding(make((2, 8)), make((2, 4)), make((2, 3))), ValueError, ("sin",)),
    Case("rotary_int", lambda: ops.rotary_embedding(make((2, 8), I32), make((2, 4), I32), make((2, 4), I32)), TypeError, ("floating-point",)),
    Case("rotary_cos_dtype", lambda: ops.rotary_embedding(make((2, 8)), make((2, 4), F64), make((2, 4), F64)), TypeError, ("cos", "float64")),
    Case("rotary_cos_none", lambda: ops.rotary_embedding(make((2, 8)), None, make((2, 4))), TypeError, ("cos",)),
    Case(
        "rotary_out_is_cos",
        lambda: (lambda c: ops.rotary_embedding(c, c[:, :2], c[:, :2], out=c))(make((2, 4))),
        ValueError,
        ("rotary_embedding()", "cos"),
    ),
    Case("sdpa_1d", lambda: ops.scaled_dot_product_attention(x4(), x4(), x4()), ValueError, ("at least 2 dims",)),
    Case(
        "sdpa_head_dim",
        lambda: ops.scaled_dot_product_attention(make((1, 2, 3, 8)), make((1, 2, 5, 7)), make((1, 2, 5, 8))),
        ValueError,
        ("E = 8",),
    ),
    Case(
        "sdpa_gqa_heads",
        lambda: ops.scaled_dot_product_attention(make((1, 4, 3, 8)), make((1, 3, 5, 8)), make((1, 3, 5, 8)), enable_gqa=True),
        ValueError,
        ("Hq = 4", "key's 3"),
    ),
    Case(
        "sdpa_mask_and_causal",
        lambda: ops.scaled_dot_product_attention(
            make((1, 2, 3, 8)), make((1, 2, 5, 8)), make((1, 2, 5, 8)), torch.ones(3, 5, dtype=torch.bool), is_causal=True
        ),
        ValueError,
        ("either attn_mask or is_causal",),
    ),
    Case(
        "sdpa_mask_int",
        lambda: ops.scaled_dot_product_attention(make((1, 2, 3, 8)), make((1, 2, 5, 8)), make((1, 2, 5, 8)), make((3, 5), I32)),
        TypeError,
        ("attn_mask of dtype bool", "int32"),
    ),
    Case(
        "sdpa_mask_shape",
        lambda: ops.scaled_dot_product_attention(make((1, 2, 3, 8)), make((1, 2, 5, 8)), make((1, 2, 5, 8)), make((4, 5))),
        ValueError,
        ("broadcasts to the scores' [1, 2, 3, 5]", "[4, 5]"),
    ),
    Case(
        "sdpa_lower_right_alone",
        lambda: ops.scaled_dot_product_attention(make((1, 2, 3, 8)), make((1, 2, 5, 8)), make((1, 2, 5, 8)), lower_right=True),
        ValueError,
        ("needs is_causal=True",),
    ),
    Case(
        "sdpa_scale_str",
        lambda: ops.scaled_dot_product_attention(make((1, 2, 3, 8)), make((1, 2, 5, 8)), make((1, 2, 5, 8)), scale="x"),
        TypeError,
        ("scale", "str"),
    ),
    Case(
        "sdpa_out_is_query",
        lambda: (lambda q: ops.scaled_dot_product_attention(q, make((1, 2, 5, 8)), make((1, 2, 5, 8)), out=q))(make((1, 2, 3, 8))),
        ValueError,
        ("scaled_dot_product_attention()", "query"),
    ),
    Case(
        "sdpa_value_dtype",
        lambda: ops.scaled_dot_product_attention(make((1, 2, 3, 8)), make((1, 2, 5, 8)), make((1, 2, 5, 8), F64)),
        TypeError,
        ("value", "float64"),
    ),
    # embedding and cat
    Case("embedding_float_ids", lambda: ops.embedding(x4(), make((3, 2))), TypeError, ("int32 or int64", "float32")),
    Case("embedding_id_past_table", lambda: ops.embedding(torch.tensor([1, 3]), make((3, 2))), IndexError,
         ("id 3 at index [1]", "table of 3 rows")),
    Case("embedding_negative_id", lambda: ops.embedding(torch.tensor([[-1]], dtype=torch.int32), make((3, 2))),
         IndexError, ("id -1 at index [0, 0]",)),
    Case("embedding_huge_id", lambda: ops.embedding(torch.tensor([2**62]), make((3, 2))), IndexError,
         (f"id {2**62}",)),
    Case("embedding_1d_table", lambda: ops.embedding(torch.tensor([0]), x4()), ValueError, ("2-D", "[4]")),
    Case("embedding_table_device_none", lambda: ops.embedding(torch.tensor([0]), None), TypeError, ("weight",)),
    Case("embedding_out_overlaps_table", lambda: (lambda t: ops.embedding(torch.tensor([0]), t[:2], out=t[1:2]))(
        make((3, 2))), ValueError, ("overlaps weight",)),
    Case("cat_dtypes", lambda: ops.cat([x4(), x4(I64)]), TypeError, ("tensors[1]", "int64")),
    Case("cat_ranks", lambda: ops.cat([make((2, 3)), make((2, 3, 1))]), ValueError, ("same number of dimensions",)),
    Case("cat_sizes", lambda: ops.cat([make((2, 3)), make((3, 2))]), ValueError, ("must match except in dimension 0",)),
    Case("cat_0d", lambda: ops.cat([torch.tensor(1.0)]), ValueError, ("zero-dimensional",)),
    Case("cat_empty_list", lambda: ops.cat([]), ValueError, ("non-empty",)),
    # Expanded to 2^62 each: the sum along dim 0 passes 2^63 - 1 at the
    # second (four of them wrap to 0, and torch's own cat returns a [0]).
    Case("rms_norm_eps_int_past_float", lambda: ops.rms_norm(x4(), torch.ones(4), eps=2**2000),
         OverflowError, ("eps", "too large")),
    Case("cat_sizes_wrap", lambda: ops.cat([torch.ones(1).expand(2**62)] * 4), ValueError,
         ("add up past 2^63 - 1", "tensors[1]")),
    Case("cat_sizes_wrap_out", lambda: ops.cat([torch.ones(1).expand(2**62)] * 2, out=torch.empty(4)),
         ValueError, ("add up past 2^63 - 1", "tensors[1]")),
    Case("cat_dim_high", lambda: ops.cat([make((2, 3))], 2), IndexError, ("[-2, 1], but got 2",)),
    Case("cat_generator", lambda: ops.cat(t for t in [x4()]), TypeError, ("list or tuple", "generator")),
    Case("cat_out_aliases_input", lambda: (lambda o: ops.cat([o[:1], make((1, 3))], out=o))(make((2, 3))),
         ValueError, ("cat()", "overlaps an input")),
    Case("cat_65_dims", lambda: ops.cat([many_dims(65)]), ValueError, ("tensors[0] has 65 dims", "at most 64")),
    # linear and add_rms_norm: a refusal leaves every tensor they were given
    # as it was (untouched(), in linear_with and add_rms_norm_with), above all
    # the residual that add_rms_norm writes
    Case("linear_weight_freed", lambda: linear_with(weight=freed((3, 4))), TypeError,
         ("linear()", "weight:", "has 12 elements but no memory")),
    Case("linear_bias_freed", lambda: linear_with(bias=freed((3,))), TypeError, ("bias:", "no memory")),
    Case("linear_k", lambda: linear_with(weight=make((3, 5))), ValueError,
         ("in_features 5", "expected weight [out_features, 4]")),
    Case("linear_weight_1d", lambda: linear_with(weight=make((4,))), ValueError,
         ("weight [out_features, in_features]", "[2, 4] and [4]")),
    Case("linear_0dim", lambda: linear_with(input=torch.tensor(1.0)), ValueError, ("at least 1-D",)),
    Case("linear_weight_dtype", lambda: linear_with(weight=make((3, 4), F64)), TypeError,
         ("expected weight to have dtype float32", "float64")),
    Case("linear_bias_dtype", lambda: linear_with(bias=make((3,), torch.float16)), TypeError,
         ("expected bias to have dtype float32", "float16")),
    Case("linear_int", lambda: linear_with(input=make((2, 4), I32), weight=make((3, 4), I32), bias=None), TypeError,
         ("floating-point", "int32")),
    Case("linear_bias_length", lambda: linear_with(bias=make((4,))), ValueError,
         ("expected bias [3] (weight's out_features), got shape [4]",)),
    Case("linear_bias_2d", lambda: linear_with(bias=make((1, 3))), ValueError, ("expected bias [3]", "[1, 3]")),
    Case("linear_bias_str", lambda: linear_with(bias="b"), TypeError, ("bias: expected a torch.Tensor", "got str")),
    Case("linear_meta_weight", lambda: linear_with(weight=torch.empty(3, 4, device="meta")), ValueError,
         ("weight:", "meta tensors carry no data")),
    Case("linear_wrapper_weight", lambda: linear_with(weight=Wrapper(make((3, 4)))), TypeError,
         ("weight:", "Wrapper", "__torch_dispatch__")),
    Case("linear_fake_bias", lambda: linear_with(weight=make((4, 4)), bias=fake_tensor()), TypeError,
         ("bias: FakeTensor",)),
    Case("linear_negated_weight", lambda: linear_with(weight=make((3, 4))._neg_view()), TypeError,
         ("weight:", "negative bit", "resolve_neg()")),
    Case("linear_negated_out", lambda: linear_with(out=make((2, 3))._neg_view()), TypeError, ("out:", "negative bit")),
    Case("linear_requires_grad_bias", lambda: linear_with(bias=torch.nn.Parameter(make((3,)))), RuntimeError,
         ("linear()", "automatic differentiation")),
    Case("linear_out_is_input", lambda: (lambda x: linear_with(input=x, weight=make((4, 4)), bias=None, out=x))(
        make((4, 4))), ValueError, ("linear()", "out overlaps input")),
    Case("linear_out_is_weight", lambda: (lambda w: linear_with(input=make((4, 4)), weight=w, bias=None, out=w))(
        make((4, 4))), ValueError, ("out overlaps weight",)),
    Case("linear_out_is_bias",
         lambda: (lambda o: linear_with(input=make((1, 4)), weight=make((4, 4)), bias=o[0], out=o))(make((1, 4))),
         ValueError, ("out overlaps bias",)),
    Case("linear_out_expanded", lambda: linear_with(out=make((1, 3)).expand(2, 3)), ValueError,
         ("out has stride 0 on dim 0", "expanded")),
    Case("linear_out_dtype", lambda: linear_with(out=make((2, 3), F64)), TypeError,
         ("expected out to have dtype float32", "float64")),
    Case("linear_out_shape", lambda: linear_with(out=make((3, 2))), ValueError,
         ("expected out of shape [2, 3], got [3, 2]",)),
    Case("linear_huge_rows_small_out", lambda: linear_with(input=make((1, 4)).expand(2**40, 4), out=make((2, 3))),
         ValueError, ("expected out of shape [1099511627776, 3], got [2, 3]",)),
    Case("linear_weight_strides_overflow", lambda: linear_with(weight=Forged(shape=(3, 4), strides=(2**62, 1))),
         ValueError, ("weight:", "than fit in int64")),
    Case("linear_input_sizes_overflow", lambda: linear_with(input=Forged(shape=(2**62, 4)), out=make((2, 3))),
         ValueError, ("input:", "than fit in int64")),
    Case("linear_65_dims", lambda: linear_with(input=torch.ones([1] * 64 + [4])), ValueError,
         ("input has 65 dims", "at most 64")),
    Case("add_rms_norm_weight_freed", lambda: add_rms_norm_with(weight=freed((8,))), TypeError,
         ("add_rms_norm()", "weight:", "no memory")),
    Case("add_rms_norm_residual_freed", lambda: add_rms_norm_with(residual=freed((3, 8))), TypeError,
         ("residual:", "has 24 elements but no memory")),
    Case("add_rms_norm_out_freed", lambda: add_rms_norm_with(out=freed((3, 8))), TypeError, ("out:", "no memory")),
    Case("add_rms_norm_residual_is_input", lambda: (lambda r: add_rms_norm_with(input=r, residual=r))(make((3, 8))),
         ValueError, ("residual overlaps input", "does not work in place")),
    Case("add_rms_norm_residual_overlaps_input", lambda: (lambda b: add_rms_norm_with(input=b[:3], residual=b[1:]))(
        make((4, 8))), ValueError, ("residual overlaps input",)),
    Case("add_rms_norm_residual_is_input_transposed",
         lambda: (lambda b: add_rms_norm_with(input=b.t(), residual=b, weight=make((4,))))(make((4, 4))),
         ValueError, ("residual overlaps input",)),
    Case("add_rms_norm_residual_overlaps_weight",
         lambda: (lambda b: add_rms_norm_with(input=make((1, 8)), residual=b[:1], weight=b[0]))(make((2, 8))),
         ValueError, ("residual overlaps weight",)),
    Case("add_rms_norm_out_is_residual", lambda: (lambda r: add_rms_norm_with(residual=r, out=r))(make((3, 8))),
         ValueError, ("out overlaps residual",)),
    Case("add_rms_norm_out_overlaps_residual", lambda: (lambda b: add_rms_norm_with(residual=b[:3], out=b[1:]))(
        make((4, 8))), ValueError, ("out overlaps residual",)),
    Case("add_rms_norm_out_is_input", lambda: (lambda x: add_rms_norm_with(input=x, out=x))(make((3, 8))),
         ValueError, ("out overlaps input",)),
    Case("add_rms_norm_out_is_weight", lambda: (lambda b: add_rms_norm_with(weight=b[0], out=b))(make((3, 8))),
         ValueError, ("out overlaps weight",)),
    Case("add_rms_norm_residual_expanded", lambda: add_rms_norm_with(residual=make((1, 8)).expand(3, 8)), ValueError,
         ("residual has stride 0 on dim 0", "expanded")),
    Case("add_rms_norm_residual_expanded_inner", lambda: add_rms_norm_with(residual=make((3, 1)).expand(3, 8)),
         ValueError, ("residual has stride 0 on dim 1",)),
    Case("add_rms_norm_residual_expanded_huge",
         lambda: add_rms_norm_with(input=make((1, 8)).expand(2**40, 8), residual=make((1, 8)).expand(2**40, 8)),
         ValueError, ("residual has stride 0 on dim 0 of size 1099511627776",)),
    Case("add_rms_norm_weight_size", lambda: add_rms_norm_with(weight=make((4,))), ValueError,
         ("expected weight of shape [8], got [4]",)),
    Case("add_rms_norm_residual_shape", lambda: add_rms_norm_with(residual=make((8,))), ValueError,
         ("expected residual of shape [3, 8], got [8]",)),
    Case("add_rms_norm_residual_broadcasts", lambda: add_rms_norm_with(input=make((8,))), ValueError,
         ("expected residual of shape [8], got [3, 8]",)),
    Case("add_rms_norm_input_huge_rows", lambda: add_rms_norm_with(input=make((1, 8)).expand(2**40, 8)), ValueError,
         ("expected residual of shape [1099511627776, 8], got [3, 8]",)),
    Case("add_rms_norm_residual_dtype", lambda: add_rms_norm_with(residual=make((3, 8), F64)), TypeError,
         ("expected residual to have dtype float32", "float64")),
    Case("add_rms_norm_input_dtype", lambda: add_rms_norm_with(input=make((3, 8), torch.bfloat16)), TypeError,
         ("expected residual to have dtype bfloat16", "got float32")),
    Case("add_rms_norm_weight_dtype", lambda: add_rms_norm_with(weight=make((8,), torch.float16)), TypeError,
         ("expected weight to have dtype float32", "float16")),
    Case("add_rms_norm_out_dtype", lambda: add_rms_norm_with(out=make((3, 8), F64)), TypeError,
         ("expected out to have dtype float32", "float64")),
    Case("add_rms_norm_out_shape", lambda: add_rms_norm_with(out=make((8, 3))), ValueError,
         ("expected out of shape [3, 8], got [8, 3]",)),
    Case("add_rms_norm_int", lambda: add_rms_norm_with(input=make((3, 8), I32), residual=make((3, 8), I32),
                                                      weight=make((8,), I32)), TypeError, ("floating-point", "int32")),
    Case("add_rms_norm_0dim", lambda: add_rms_norm_with(input=torch.tensor(1.0), residual=torch.tensor(1.0),
                                                       weight=make((1,))), ValueError, ("at least one dim",)),
    Case("add_rms_norm_meta_residual", lambda: add_rms_norm_with(residual=torch.empty(3, 8, device="meta")),
         ValueError, ("residual:", "meta tensors carry no data")),
    Case("add_rms_norm_wrapper_residual", lambda: add_rms_norm_with(residual=Wrapper(make((3, 8)))), TypeError,
         ("residual:", "Wrapper", "__torch_dispatch__")),
    Case("add_rms_norm_fake_residual", lambda: add_rms_norm_with(input=x4(), residual=fake_tensor(), weight=x4()),
         TypeError, ("residual: FakeTensor",)),
    Case("add_rms_norm_negated_residual", lambda: add_rms_norm_with(residual=make((3, 8))._neg_view()), TypeError,
         ("residual:", "negative bit", "resolve_neg()")),
    Case("add_rms_norm_negated_input", lambda: add_rms_norm_with(input=make((3, 8))._neg_view()), TypeError,
         ("input:", "negative bit")),
    Case("add_rms_norm_requires_grad_weight", lambda: add_rms_norm_with(weight=torch.nn.Parameter(make((8,)))),
         RuntimeError, ("add_rms_norm()", "automatic differentiation")),
    Case("add_rms_norm_read_only_numpy_residual",
         lambda: add_rms_norm_with(input=x4(), residual=read_only_numpy(), weight=x4()),
         *READ_ONLY("residual:")),
    Case("add_rms_norm_residual_strides_overflow",
         lambda: add_rms_norm_with(residual=Forged(shape=(3, 8), strides=(2**62, 1), elements=24)),
         ValueError, ("residual:", "than fit in int64")),
    Case("add_rms_norm_residual_sizes_overflow", lambda: add_rms_norm_with(residual=Forged(shape=(2**62, 8))),
         ValueError, ("residual:", "than fit in int64")),
    Case("add_rms_norm_eps_str", lambda: add_rms_norm_with(eps="big"), TypeError,
         ("expected eps to be a float, got str",)),
    Case("add_rms_norm_eps_positional",
         lambda: (lambda x, r, w: untouched(lambda: ops.add_rms_norm(x, r, w, 1e-6), x, r, w))(
             make((3, 8)), make((3, 8)), make((8,))),
         TypeError, ("add_rms_norm() takes at most 3 positional",)),
    Case("add_rms_norm_eps_nan", lambda: add_rms_norm_eps(float("nan")), ValueError, ("eps",),
         or_result=lambda: add_rms_norm_eps(float("nan"), reference=True)),
    Case("add_rms_norm_eps_inf", lambda: add_rms_norm_eps(float("inf")), ValueError, ("eps",),
         or_result=lambda: add_rms_norm_eps(float("inf"), reference=True)),
    Case("add_rms_norm_eps_minus_inf", lambda: add_rms_norm_eps(float("-inf")), ValueError, ("eps",),
         or_result=lambda: add_rms_norm_eps(float("-inf"), reference=True)),
    # the Python API around the ops
    Case("set_path_bogus", lambda: bridge.set_path("bogus"), ValueError, ("unknown bridge path 'bogus'",)),
    Case("kernel_for_unknown_op", lambda: plugins.kernel_for("nope", "cpu", "float32"), ValueError, ("unknown op 'nope'",)),
    Case("kernel_for_unknown_dtype", lambda: plugins.kernel_for("abs", "cpu", "complex64"), ValueError, ("complex64",)),
    Case("set_option_no_plugin", lambda: plugins.set_option("nope", "k", "v"), ValueError, ("no plugin named 'nope'",)),
]


def check(case):
    """None when `case` behaved; otherwise what happened instead."""
    try:
        result = case.call()
    except case.exc as e:
        missing = [m for m in case.match if m not in str(e)]
        if missing:
            return f"{type(e).__name__} without {missing}: {str(e)[:300]}"
        return None
    except BaseException as e:  # noqa: BLE001 - anything else is the finding
        return f"expected {case.exc.__name__}, got {type(e).__name__}: {str(e)[:300]}"
    if case.or_result is not None:
        expected = case.or_result()
        if isinstance(result, torch.Tensor) and torch.equal(result, expected):
            return None
        return f"returned {result!r}, torch gives {expected!r}"
    return f"no exception; returned {type(result).__name__}"


def test_there_are_enough_distinct_cases():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_is_rejected_cleanly(path, case):
    HOSTILE_TALLY["tried"] += 1
    with no_handle_leak():
        problem = check(case)
    assert problem is None, problem
    HOSTILE_TALLY["clean"] += 1


def main():
    """Plays every case on every path in this process, then proves the process
    still computes; prints the tally and the sentinel."""
    tried = clean = 0
    for p in PATHS:
        bridge.set_path(p)
        for case in CASES:
            tried += 1
            problem = check(case)
            if problem is None:
                clean += 1
            else:
                print(f"NOT CLEAN [{p}] {case.name}: {problem}", flush=True)
    counts = bridge.path_counts()
    x = torch.randn(1000)
    assert torch.allclose(ops.silu(x), F.silu(x))
    assert counts["shim_handles_created"] == counts["shim_handles_deleted"], counts
    print(f"hostile inputs: {tried} tried, {clean} rejected cleanly", flush=True)
    print(SENTINEL, flush=True)
    return 0 if tried == clean else 1


@pytest.mark.subprocess
def test_whole_set_in_a_fresh_process_survives():
    r = run_python("import sys, test_hostile_inputs as h; sys.exit(h.main())", timeout=300)
    lines = r.stdout.strip().splitlines()
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert lines[-1] == SENTINEL
    n = len(CASES) * len(PATHS)
    assert lines[-2] == f"hostile inputs: {n} tried, {n} rejected cleanly"
    print(lines[-2])


# --- cases that once crashed or misled: each in its own process ---------------------

CRASHERS = {
    # torch._to_functional_tensor gives a plain torch.Tensor whose data pointer
    # is NULL (FunctionalTensorWrapper has no storage).
    "functional_input": "ops.abs(torch._to_functional_tensor(torch.randn(3)))",
    "functional_out": "ops.abs(torch.randn(3), out=torch._to_functional_tensor(torch.randn(3)))",
    # ZeroTensor: numel 3, no memory at all.
    "zerotensor_input": "ops.neg(torch._efficientzerotensor(3))",
    "zerotensor_out": "ops.neg(torch.randn(3), out=torch._efficientzerotensor(3))",
    "functional_linear_weight": "ops.linear(torch.randn(2, 4), torch._to_functional_tensor(torch.randn(3, 4)))",
    "zerotensor_add_rms_norm_residual":
        "ops.add_rms_norm(torch.randn(3, 8), torch._efficientzerotensor(3, 8), torch.randn(8))",
}


@pytest.mark.subprocess
@pytest.mark.parametrize("name", list(CRASHERS))
def test_storageless_tensor_is_refused_without_a_crash(name):
    r = run_python(
        f"""
        import torch, torchferry
        from torchferry import ops
        try:
            {CRASHERS[name]}
        except (TypeError, ValueError, NotImplementedError) as e:
            print("REFUSED:", type(e).__name__, e)
        print("{SENTINEL}")
        """
    )
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    assert SENTINEL in r.stdout and "REFUSED:" in r.stdout, r.stdout


@pytest.mark.subprocess
def test_stack_survives_a_list_mutated_while_bridging():
    r = run_python(
        f"""
        import gc, numpy as np, torch, torchferry
        from torchferry import ops
        items = []

        class Mutator:
            def __dlpack__(self, *args, **kwargs):
                items.clear()
                gc.collect()
                junk = [bytearray(64) for _ in range(1000)]
                return np.zeros(3, np.float32).__dlpack__(*args, **kwargs)

        items.extend([torch.ones(3), Mutator()] + [torch.full((3,), float(i)) for i in range(30)])
        expected = torch.stack([torch.ones(3), torch.zeros(3)] + [torch.full((3,), float(i)) for i in range(30)])
        try:
            out = ops.stack(items)
        except (TypeError, ValueError, RuntimeError) as e:
            assert "bytearray" not in str(e), e
            print("REFUSED:", e)
        else:
            assert torch.equal(out, expected), out
        print("{SENTINEL}")
        """
    )
    assert r.returncode == 0, f"exit {r.returncode}: {r.stdout[-2000:]} {r.stderr[-2000:]}"
    assert SENTINEL in r.stdout


def test_set_path_with_a_non_string_says_what_it_expects():
    with pytest.raises(TypeError, match="str"):
        bridge.set_path(None)


def test_nested_tensor_message_has_no_cpp_backtrace():
    with pytest.raises(TypeError) as e:
        ops.abs(nested(torch.strided))
    assert "frame #" not in str(e.value) and "nested" in str(e.value).lower()


if __name__ == "__main__":
    sys.exit(main())


@pytest.mark.parametrize("versioned, version", [(False, None), (True, (1, 0)), (True, (1, 1))])
def test_dlpack_without_strides_is_compact_before_1_2(versioned, version):
    """NULL strides meant compact and row-major before DLPack 1.2 (numpy 1.x
    exports so): read as such, into the right elements."""
    f = Forged(shape=(3, 4), strides=None, elements=12, versioned=versioned, version=version or (1, 0))
    for i in range(12):
        f.buffer[i] = float(i)
    out = torch.empty(3, 4)
    ops.neg(f, out=out)
    assert torch.equal(out, -torch.arange(12.0).reshape(3, 4))
    assert bridge.view(Forged(shape=(3, 4), strides=None, elements=12))["strides"] == (4, 1)


def test_dlpack_1_2_without_strides_is_refused():
    with pytest.raises(ValueError, match="no strides, which DLPack 1.2 and later require"):
        ops.noop(Forged(shape=(2, 2), strides=None, versioned=True, version=(1, 2)))
