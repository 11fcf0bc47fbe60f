#!/usr/bin/env python3
"""Runs every op on CUDA tensors and compares the result with torch's.

Each op runs in every dtype its CUDA kernel carries, on contiguous,
transposed, sliced (unaligned), stepped and broadcast operands, 0-dim and
empty tensors, sizes that exercise each kernel variant (vectorised,
strided 32- and 64-bit indexing, warp- and block-per-row reductions, the
thread-per-row softmax, cuBLAS transposes), then on a user stream from
torch.cuda.Stream(), where it also checks that the work was queued behind
that stream's earlier work and that the call did not wait for it.

Backends:
  torchferry  through torchferry.ops (the package must import): the host's
              own preparation checks and shapes every call, so a plugin file
              built on its own is checked by putting it on
              TORCHFERRY_PLUGIN_PATH
  torch       torch computes the outputs itself: with --device cpu, a dry run
              that proves the case list and the comparisons on a machine
              without a GPU (it proves no plugin)

--device cpu runs the cases on CPU tensors (no stream checks); meant for
dry runs of this script where there is no GPU.

Exit status: 0 all passed, 1 some failed, 3 skipped (no CUDA device or the
backend could not start), with the reason on stdout.
"""

import argparse
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

EXIT_SKIPPED = 3


class Refused(Exception):
    """The backend declined a valid case it cannot do (UNSUPPORTED)."""


# --------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------


class TorchferryBackend:
    name = "torchferry"

    def __init__(self):
        import torchferry
        import torchferry.ops

        self.torchferry = torchferry
        self.ops = torchferry.ops

    def describe(self):
        lines = [f"torchferry {getattr(self.torchferry, '__version__', '?')} "
                 f"from {os.path.dirname(self.torchferry.__file__)}"]
        try:
            from torchferry import plugins

            for p in plugins.loaded():
                lines.append(f"  plugin: {p}")
            for s in plugins.skipped():
                lines.append(f"  skipped: {s}")
        except Exception as e:  # the listing is a courtesy, not a check
            lines.append(f"  (plugin listing unavailable: {e})")
        return "\n".join(lines)

    def serving_plugin(self, op, dtype_name):
        try:
            from torchferry import plugins

            return plugins.kernel_for(op, "cuda", dtype_name)
        except Exception:
            return None

    def run(self, op, args, kwargs, out, stream=None):
        fn = getattr(self.ops, op)
        try:
            if op == "noop":
                return fn(*args)
            return fn(*args, **kwargs, out=out, stream=stream)
        except NotImplementedError as e:
            raise Refused(str(e)) from None


class TorchBackend:
    """torch's own ops write the outputs: a check of the checks."""

    name = "torch"

    def describe(self):
        return "torch's own ops (a dry run of the case list)"

    def serving_plugin(self, op, dtype_name):
        return None

    def run(self, op, args, kwargs, out, stream=None):
        import torch
        import torch.nn.functional as F

        x = args[0] if args else None
        if op == "noop":
            return
        if op == "abs":
            r = torch.abs(x)
        elif op == "neg":
            r = torch.neg(x)
        elif op == "exp":
            r = torch.exp(x)
        elif op == "silu":
            r = F.silu(x)
        elif op == "add":
            r = half_exact(torch.add, x, args[1], **kwargs)
        elif op == "mul":
            r = half_exact(torch.mul, x, args[1])
        elif op == "clamp":
            r = clamp_ref(torch, x, kwargs.get("min"), kwargs.get("max"))
        elif op == "stack":
            r = torch.stack(x, dim=kwargs.get("dim", 0))
        elif op == "cast":
            r = x.to(out.dtype)
        elif op == "silu_and_mul":
            d = x.shape[-1] // 2
            r = F.silu(x[..., :d]) * x[..., d:]
        elif op == "rms_norm":
            xf = x.float() if x.dtype != torch.float64 else x
            r = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + kwargs["eps"]) * args[1]
        elif op == "softmax":
            r = torch.softmax(x.float() if x.dtype != torch.float64 else x, kwargs["dim"])
        elif op == "matmul":
            a, b = x, args[1]
            if a.stride(-1) != 1 and a.stride(-2) != 1:
                raise Refused("no unit stride (as the CUDA plugin refuses it)")
            r = torch.matmul(a.double(), b.double())
        elif op == "rotary_embedding":
            r = rotary_ref(torch, *args, **kwargs)
        elif op == "scaled_dot_product_attention":
            r = sdpa_ref(torch, *args, **kwargs)
        # embedding and cat
        elif op == "embedding":
            r = gather_rows(torch, F, x, args[1])
        elif op == "cat":
            r = torch.cat(x, dim=kwargs.get("dim", 0))
        elif op == "linear":
            r = F.linear(x.double(), *(t.double() for t in args[1:]))
        elif op == "add_rms_norm":
            residual, w = args[1], args[2]
            residual.add_(x)
            rf = residual.float() if residual.dtype != torch.float64 else residual
            r = rf * torch.rsqrt(rf.pow(2).mean(-1, keepdim=True) + kwargs["eps"]) * w
        else:
            raise ValueError(op)
        out.copy_(r.to(out.dtype))


# --------------------------------------------------------------------------
# Tensors and comparisons
# --------------------------------------------------------------------------


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def on_cpu(fn, *tensors, **kw):
    """fn computed on CPU copies, the result back on the tensors' device:
    the reference for uint16/32/64, which torch computes on CPU but need not
    on a GPU."""
    device = tensors[0].device
    return fn(*(t.cpu() for t in tensors), **kw).to(device)


class Maker:
    """Random tensors of a dtype on one device, in a chosen layout."""

    def __init__(self, torch, device):
        self.torch = torch
        self.device = device
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(1234)

    def dense(self, shape, dtype, low=None, high=None):
        torch = self.torch
        if dtype.is_floating_point:
            x = torch.randn(shape, device=self.device, generator=self.gen) * 3
            return x.to(dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, device=self.device, generator=self.gen).bool()
        if low is None:
            low, high = (0, 200) if dtype == torch.uint8 else (-100, 100)
        x = torch.randint(low, high, shape, device=self.device, generator=self.gen,
                          dtype=torch.int64)
        if dtype_name(dtype) in WIDE_UNSIGNED:  # converted where torch surely can
            return x.cpu().to(dtype).to(self.device)
        return x.to(dtype)

    def layout(self, shape, dtype, kind, **kw):
        """contiguous | transposed | sliced (offset by one element, so
        unaligned) | stepped (every other element of the last dim)."""
        shape = list(shape)
        if kind == "contiguous" or len(shape) == 0:
            return self.dense(shape, dtype, **kw)
        if kind == "transposed":
            if len(shape) < 2:
                return self.dense(shape, dtype, **kw)
            swapped = shape[:-2] + [shape[-1], shape[-2]]
            return self.dense(swapped, dtype, **kw).transpose(-1, -2)
        if kind == "sliced":
            return self.dense(shape[:-1] + [shape[-1] + 1], dtype, **kw)[..., 1:]
        if kind == "stepped":
            return self.dense(shape[:-1] + [shape[-1] * 2], dtype, **kw)[..., ::2]
        raise ValueError(kind)


LAYOUTS = ("contiguous", "transposed", "sliced", "stepped")


def tolerance(torch, dtype, kind):
    """(rtol, atol). kind: exact, elementwise, reduction or matmul."""
    if kind == "exact" or not dtype.is_floating_point:
        return 0.0, 0.0
    table = {
        "elementwise": {torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-12, 1e-12),
                        torch.float16: (2e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2)},
        "reduction": {torch.float32: (1e-5, 1e-6), torch.float64: (1e-10, 1e-12),
                      torch.float16: (2e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2)},
        "matmul": {torch.float32: (1e-4, 1e-4), torch.float64: (1e-10, 1e-10),
                   torch.float16: (1e-2, 1e-2), torch.bfloat16: (4e-2, 4e-2)},
    }
    return table[kind][dtype]


def compare(torch, got, expected, dtype, kind):
    rtol, atol = tolerance(torch, dtype, kind)
    if got.shape != expected.shape:
        raise AssertionError(f"shape {tuple(got.shape)}, expected {tuple(expected.shape)}")
    if kind == "matmul" and dtype.is_floating_point and expected.numel():
        # Relative to the size of the products, not of each (possibly tiny) sum.
        scale = max(1.0, float(expected.double().abs().max()))
        atol = atol * scale
    torch.testing.assert_close(got, expected.to(got.dtype), rtol=rtol, atol=atol,
                               equal_nan=True)


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


class Case:
    """One call: op(*args, **kwargs, out=out), then out compared with ref().
    `check`, when given, replaces the comparison (for outputs too large to
    compare element by element against a second copy)."""

    def __init__(self, op, dtype, name, args, kwargs, out, ref, kind="elementwise", check=None):
        self.op, self.dtype, self.name = op, dtype, name
        self.args, self.kwargs, self.out, self.ref, self.kind = args, kwargs, out, ref, kind
        self.check = check


def unary_cases(torch, mk, F):
    refs = {
        "abs": torch.abs,
        "neg": torch.neg,
        "exp": torch.exp,
        "silu": lambda x: F.silu(x.float()).to(x.dtype) if x.dtype != torch.float64 else F.silu(x),
    }
    float_types = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
    int_types = [torch.int32, torch.int64]
    for op, ref in refs.items():
        dtypes = float_types + (int_types if op in ("abs", "neg") else [])
        kind = "exact" if op in ("abs", "neg") else "elementwise"
        for dtype in dtypes:
            for lay in LAYOUTS:
                for shape in ([1027], [33, 65], [4, 5, 6]):
                    x = mk.layout(shape, dtype, lay)
                    yield Case(op, dtype, f"{lay}{shape}", [x], {}, torch.empty_like(x),
                               lambda x=x, ref=ref: ref(x), kind)
            x = mk.dense([], dtype)
            yield Case(op, dtype, "0-dim", [x], {}, torch.empty_like(x),
                       lambda x=x, ref=ref: ref(x), kind)
            x = mk.dense([0, 7], dtype)
            yield Case(op, dtype, "empty", [x], {}, torch.empty_like(x),
                       lambda x=x, ref=ref: ref(x), kind)
            # out aliasing the input exactly, which ABI.md allows.
            x = mk.dense([515], dtype)
            expected = ref(x.clone())
            yield Case(op, dtype, "in-place", [x], {}, x, lambda e=expected: e, kind)
            # A transposed out: strided writes.
            x = mk.dense([40, 24], dtype)
            out = torch.empty(24, 40, dtype=dtype, device=mk.device).t()
            yield Case(op, dtype, "transposed-out", [x], {}, out, lambda x=x, ref=ref: ref(x), kind)
        if op == "exp":
            x = torch.tensor([0.0, -float("inf"), float("inf"), float("nan"), 88.0, -104.0],
                             device=mk.device)
            yield Case(op, torch.float32, "special values", [x], {}, torch.empty_like(x),
                       lambda x=x: torch.exp(x))
    x = torch.tensor([-2**31, -5, 0, 7, 2**31 - 1], dtype=torch.int32, device=mk.device)
    yield Case("abs", torch.int32, "int32 extremes", [x], {}, torch.empty_like(x),
               lambda x=x: torch.abs(x), "exact")
    yield Case("neg", torch.int32, "int32 extremes", [x], {}, torch.empty_like(x),
               lambda x=x: torch.neg(x), "exact")


def half_exact(fn, x, y, **kw):
    """fn(x, y) rounded once: half types through float32. torch's own CPU
    kernels round alpha * y to half first on strided operands, a rounding
    the plugins do not make."""
    import torch

    if x.dtype in (torch.float16, torch.bfloat16):
        return fn(x.float(), y.float(), **kw).to(x.dtype)
    return fn(x, y, **kw)


def binary_cases(torch, mk):
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
              torch.int64]
    for op in ("add", "mul"):
        for dtype in dtypes:
            kind = "elementwise" if dtype.is_floating_point else "exact"
            alphas = [{}] if op == "mul" else (
                [{}, {"alpha": 2.5}, {"alpha": -1.0}] if dtype.is_floating_point
                else [{}, {"alpha": 3}, {"alpha": -2}])
            for kwargs in alphas:
                ref = (lambda x, y, kw=kwargs: half_exact(torch.add, x, y, **kw)) \
                    if op == "add" else (lambda x, y: half_exact(torch.mul, x, y))
                tag = f" alpha={kwargs['alpha']}" if kwargs else ""
                for lay in LAYOUTS:
                    x = mk.layout([37, 129], dtype, lay)
                    y = mk.layout([37, 129], dtype, "contiguous" if lay == "stepped" else lay)
                    yield Case(op, dtype, f"{lay}{tag}", [x, y], kwargs,
                               torch.empty(37, 129, dtype=dtype, device=mk.device),
                               lambda x=x, y=y, ref=ref: ref(x, y), kind)
                # Broadcast: [4, 1, 5] with [3, 5] -> [4, 3, 5]; and a 0-dim y.
                x = mk.dense([4, 1, 5], dtype)
                y = mk.dense([3, 5], dtype)
                yield Case(op, dtype, f"broadcast{tag}", [x, y], kwargs,
                           torch.empty(4, 3, 5, dtype=dtype, device=mk.device),
                           lambda x=x, y=y, ref=ref: ref(x, y), kind)
                x = mk.dense([1000, 3], dtype)
                y = mk.dense([], dtype)
                yield Case(op, dtype, f"0-dim y{tag}", [x, y], kwargs, torch.empty_like(x),
                           lambda x=x, y=y, ref=ref: ref(x, y), kind)
            # Large enough for many blocks and the grid-stride loop.
            x = mk.dense([1 << 22], dtype)
            y = mk.dense([1 << 22], dtype)
            yield Case(op, dtype, "4M contiguous", [x, y], {}, torch.empty_like(x),
                       lambda x=x, y=y, op=op: getattr(torch, op)(x, y), kind)
            # Bias-style broadcast of a row over a large matrix.
            x = mk.dense([2048, 1000], dtype)
            y = mk.dense([1000], dtype)
            yield Case(op, dtype, "row broadcast", [x, y], {}, torch.empty_like(x),
                       lambda x=x, y=y, op=op: getattr(torch, op)(x, y), kind)
            x = mk.dense([2, 3], dtype)
            yield Case(op, dtype, "in-place", [x, mk.dense([2, 3], dtype)], {}, x, None, kind)
    big = torch.tensor([2**31 - 1, -2**31, 5], dtype=torch.int32, device=mk.device)
    one = torch.tensor([1, -1, 2**30], dtype=torch.int32, device=mk.device)
    yield Case("add", torch.int32, "int32 wraps", [big, one], {}, torch.empty_like(big),
               lambda: torch.add(big, one), "exact")
    yield Case("mul", torch.int32, "int32 wraps", [big, one], {}, torch.empty_like(big),
               lambda: torch.mul(big, one), "exact")
    # uint16/32/64: torch multiplies them (modulo 2^bits) but adds none.
    for dtype in (torch.uint16, torch.uint32, torch.uint64):
        for lay in LAYOUTS:
            x = mk.layout([37, 129], dtype, lay, low=0, high=1 << 15)
            y = mk.layout([37, 129], dtype, lay, low=0, high=1 << 15)
            yield Case("mul", dtype, f"{lay} wraps", [x, y], {},
                       torch.empty(37, 129, dtype=dtype, device=mk.device),
                       lambda x=x, y=y: on_cpu(torch.mul, x, y), "exact")
        x, y = mk.dense([4, 1, 5], dtype, low=0, high=1000), mk.dense([3, 5], dtype, low=0, high=1000)
        yield Case("mul", dtype, "broadcast", [x, y], {},
                   torch.empty(4, 3, 5, dtype=dtype, device=mk.device),
                   lambda x=x, y=y: on_cpu(torch.mul, x, y), "exact")


def fix_inplace(torch, case):
    """In-place cases compute their reference before the call runs."""
    if case.ref is None:
        x, y = case.args
        expected = (torch.add(x, y, **case.kwargs) if case.op == "add" else torch.mul(x, y))
        case.ref = lambda e=expected: e
    return case


def clamp_ref(torch, x, min=None, max=None):
    """torch.clamp, which takes two tensor bounds or two scalars but not one
    of each: a scalar beside a tensor bound becomes a 0-dim tensor."""
    if isinstance(min, torch.Tensor) != isinstance(max, torch.Tensor):
        if min is not None and not isinstance(min, torch.Tensor):
            min = torch.tensor(min, dtype=x.dtype, device=x.device)
        if max is not None and not isinstance(max, torch.Tensor):
            max = torch.tensor(max, dtype=x.dtype, device=x.device)
    return torch.clamp(x, min, max)


def clamp_cases(torch, mk):
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
              torch.int64]
    for dtype in dtypes:
        fl = dtype.is_floating_point
        lo, hi = (-1.5, 2.25) if fl else (-20, 30)
        for lay in ("contiguous", "transposed", "sliced"):
            x = mk.layout([65, 33], dtype, lay)
            for kwargs in ({"min": lo}, {"max": hi}, {"min": lo, "max": hi},
                           {"min": hi, "max": lo}):
                yield Case("clamp", dtype, f"{lay} {kwargs}", [x], kwargs,
                           torch.empty(65, 33, dtype=dtype, device=mk.device),
                           lambda x=x, kw=kwargs: torch.clamp(x, **kw), "exact")
        x = mk.dense([6, 7, 8], dtype)
        tmin = mk.dense([7, 1], dtype) - (3 if fl else 30)
        tmax = mk.dense([8], dtype) + (3 if fl else 30)
        for kwargs, tag in (({"min": tmin}, "tensor min"), ({"max": tmax}, "tensor max"),
                            ({"min": tmin, "max": tmax}, "tensor min+max"),
                            ({"min": tmin, "max": hi}, "tensor min, scalar max"),
                            ({"min": lo, "max": tmax}, "scalar min, tensor max")):
            yield Case("clamp", dtype, f"broadcast {tag}", [x], kwargs, torch.empty_like(x),
                       lambda x=x, kw=kwargs: clamp_ref(torch, x, **kw), "exact")
        if fl:
            x = torch.tensor([float("nan"), -5.0, 0.5, 5.0, float("inf"), -float("inf")],
                             device=mk.device).to(dtype)
            yield Case("clamp", dtype, "NaN propagates", [x], {"min": -1.0, "max": 1.0},
                       torch.empty_like(x), lambda x=x: torch.clamp(x, -1.0, 1.0), "exact")
        elif dtype == torch.int64:
            x = torch.tensor([-(2**62), -5, 0, 5, 2**62], dtype=dtype, device=mk.device)
            yield Case("clamp", dtype, "bounds beyond int32", [x],
                       {"min": -(2**40), "max": 2**40}, torch.empty_like(x),
                       lambda x=x: torch.clamp(x, -(2**40), 2**40), "exact")


def stack_cases(torch, mk):
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
              torch.int64, torch.int16, torch.int8, torch.uint8, torch.bool]
    for dtype in dtypes:
        for dim in (0, 1, 2, -1):
            xs = [mk.dense([5, 7], dtype) for _ in range(3)]
            out_shape = list(torch.stack(xs, dim=dim).shape)
            yield Case("stack", dtype, f"3 x [5,7] dim={dim}", [xs], {"dim": dim},
                       torch.empty(out_shape, dtype=dtype, device=mk.device),
                       lambda xs=xs, d=dim: torch.stack(xs, dim=d), "exact")
        # Mixed layouts break the inputs into several launches.
        xs = [mk.layout([9, 11], dtype, lay) for lay in
              ("contiguous", "transposed", "contiguous", "sliced", "stepped")]
        yield Case("stack", dtype, "mixed layouts dim=1", [xs], {"dim": 1},
                   torch.empty(9, 5, 11, dtype=dtype, device=mk.device),
                   lambda xs=xs: torch.stack(xs, dim=1), "exact")
        # More inputs than one launch carries.
        xs = [mk.dense([3, 4], dtype) for _ in range(70)]
        yield Case("stack", dtype, "70 inputs", [xs], {"dim": 0},
                   torch.empty(70, 3, 4, dtype=dtype, device=mk.device),
                   lambda xs=xs: torch.stack(xs), "exact")
        xs = [mk.dense([], dtype) for _ in range(4)]
        yield Case("stack", dtype, "0-dim inputs", [xs], {"dim": 0},
                   torch.empty(4, dtype=dtype, device=mk.device),
                   lambda xs=xs: torch.stack(xs), "exact")
        xs = [mk.dense([0, 3], dtype) for _ in range(2)]
        yield Case("stack", dtype, "empty inputs", [xs], {"dim": 1},
                   torch.empty(0, 2, 3, dtype=dtype, device=mk.device),
                   lambda xs=xs: torch.stack(xs, dim=1), "exact")


WIDE_UNSIGNED = ("uint16", "uint32", "uint64")


def cast_cases(torch, mk):
    unsigned = [torch.uint8] + [getattr(torch, n) for n in WIDE_UNSIGNED]
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
              torch.int64, torch.int16, torch.int8, torch.bool] + unsigned
    for src in dtypes:
        for dst in dtypes:
            wide = dtype_name(src) in WIDE_UNSIGNED or dtype_name(dst) in WIDE_UNSIGNED
            if src.is_floating_point:
                # Fractions of both signs (truncation toward zero), zeros (bool),
                # all within every destination's range; non-negative for unsigned.
                low = 0 if dst in unsigned else -100
                base = torch.arange(low * 4, 400, device=mk.device, dtype=torch.float64) / 4
                base = base[torch.randperm(base.numel(), device=mk.device,
                                           generator=mk.gen)][:300]
                x = base.to(src).reshape(20, 15)
            else:
                low = 0 if src in unsigned or dst in unsigned else -100
                x = mk.dense([20, 15], src, low=low, high=100)
            for lay, xv in (("contiguous", x), ("transposed", x.t())):
                ref = (lambda xv=xv, dst=dst: on_cpu(lambda t: t.to(dst), xv)) if wide \
                    else (lambda xv=xv, dst=dst: xv.to(dst))
                yield Case("cast", src, f"to {dtype_name(dst)} {lay}", [xv], {},
                           torch.empty(xv.shape, dtype=dst, device=mk.device), ref, "exact")
    # uint64 beyond int64: 2^63 + 2^40 and 2^64 - 1 to the floats and back.
    x = torch.tensor([2**63 + 2**40, 2**64 - 1, 3], dtype=torch.uint64, device=mk.device)
    for dst in (torch.float64, torch.float32):
        yield Case("cast", torch.uint64, f"beyond int64 to {dtype_name(dst)}", [x], {},
                   torch.empty(3, dtype=dst, device=mk.device),
                   lambda x=x, dst=dst: on_cpu(lambda t: t.to(dst), x), "exact")
    x = torch.tensor([2.0**63 + 2.0**40, 2.0**63, 5.5], dtype=torch.float64, device=mk.device)
    yield Case("cast", torch.float64, "to uint64 beyond int64", [x], {},
               torch.empty(3, dtype=torch.uint64, device=mk.device),
               lambda x=x: on_cpu(lambda t: t.to(torch.uint64), x), "exact")
    x = torch.tensor([-2.7, -0.5, 0.0, 0.5, 2.7, 1e9], device=mk.device)
    yield Case("cast", torch.float32, "truncation toward zero", [x], {},
               torch.empty(6, dtype=torch.int64, device=mk.device),
               lambda x=x: x.to(torch.int64), "exact")
    x = torch.tensor([float("nan"), 0.0, -0.0, 1e-30], device=mk.device)
    yield Case("cast", torch.float32, "to bool: x != 0", [x], {},
               torch.empty(4, dtype=torch.bool, device=mk.device),
               lambda x=x: x.to(torch.bool), "exact")
    x = torch.tensor([2**40 + 1, -3, 7], dtype=torch.int64, device=mk.device)
    yield Case("cast", torch.int64, "int64 beyond 2^24 to float32", [x], {},
               torch.empty(3, dtype=torch.float32, device=mk.device),
               lambda x=x: x.to(torch.float32), "exact")


def silu_and_mul_cases(torch, mk, F):
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        def ref(x):
            d = x.shape[-1] // 2
            acc = torch.float64 if x.dtype == torch.float64 else torch.float32
            xf = x.to(acc)
            return F.silu(xf[..., :d]) * xf[..., d:]

        for shape in ([4, 256], [3, 5, 64], [1, 2], [1027, 22]):
            for lay in ("contiguous", "transposed", "sliced"):
                x = mk.layout(shape, dtype, lay)
                out_shape = shape[:-1] + [shape[-1] // 2]
                yield Case("silu_and_mul", dtype, f"{lay}{shape}", [x], {},
                           torch.empty(out_shape, dtype=dtype, device=mk.device),
                           lambda x=x, ref=ref: ref(x))


def rms_norm_cases(torch, mk):
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        def ref(x, w, eps):
            acc = torch.float64 if x.dtype == torch.float64 else torch.float32
            xf, wf = x.to(acc), w.to(acc)
            return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * wf

        # 128: a warp per row; 4096 and 5000: a block per row.
        for shape in ([16, 128], [8, 4096], [2, 3, 5000], [7], [300, 33]):
            for lay in ("contiguous", "sliced", "transposed"):
                x = mk.layout(shape, dtype, lay)
                w = mk.dense([shape[-1]], dtype)
                for eps in (1e-6, 0.5):
                    yield Case("rms_norm", dtype, f"{lay}{shape} eps={eps}", [x, w],
                               {"eps": eps}, torch.empty(shape, dtype=dtype, device=mk.device),
                               lambda x=x, w=w, e=eps, ref=ref: ref(x, w, e), "reduction")
        x = mk.dense([4, 64], dtype)
        w = mk.dense([128], dtype)[::2]
        yield Case("rms_norm", dtype, "strided weight", [x, w], {"eps": 1e-6},
                   torch.empty_like(x), lambda x=x, w=w, ref=ref: ref(x, w, 1e-6), "reduction")


def softmax_cases(torch, mk):
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        def ref(x, dim):
            acc = torch.float64 if x.dtype == torch.float64 else torch.float32
            return torch.softmax(x.to(acc), dim=dim)

        shapes_dims = (
            ([32, 100], -1),     # warp per row
            ([4, 5000], -1),     # block per row
            ([64, 2048], 0),     # a thread per row: strided softmax dim, many rows
            ([3000, 16], 0),     # strided dim, few rows: a block per row
            ([3, 17, 19], 1),
            ([5], 0),
        )
        for shape, dim in shapes_dims:
            for lay in ("contiguous", "transposed", "sliced"):
                x = mk.layout(shape, dtype, lay)
                yield Case("softmax", dtype, f"{lay}{shape} dim={dim}", [x], {"dim": dim},
                           torch.empty(shape, dtype=dtype, device=mk.device),
                           lambda x=x, d=dim, ref=ref: ref(x, d), "reduction")
        x = mk.dense([], dtype)
        yield Case("softmax", dtype, "0-dim", [x], {"dim": 0}, torch.empty_like(x),
                   lambda x=x, ref=ref: ref(x, 0), "reduction")
        x = mk.dense([3, 8], dtype)
        x[0, :3] = -float("inf")
        x[1, :] = -float("inf")
        yield Case("softmax", dtype, "-inf entries and an all -inf row", [x], {"dim": -1},
                   torch.empty_like(x), lambda x=x, ref=ref: ref(x, -1), "reduction")


def matmul_cases(torch, mk):
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        def ref(a, b):
            return torch.matmul(a.double(), b.double())

        m, k, n = 33, 70, 45
        for la in ("contiguous", "transposed"):
            for lb in ("contiguous", "transposed"):
                a = mk.layout([m, k], dtype, la)
                b = mk.layout([k, n], dtype, lb)
                yield Case("matmul", dtype, f"2-D a {la}, b {lb}", [a, b], {},
                           torch.empty(m, n, dtype=dtype, device=mk.device),
                           lambda a=a, b=b, ref=ref: ref(a, b), "matmul")
                a3 = mk.layout([3, m, k], dtype, la)
                b3 = mk.layout([3, k, n], dtype, lb)
                yield Case("matmul", dtype, f"3-D a {la}, b {lb}", [a3, b3], {},
                           torch.empty(3, m, n, dtype=dtype, device=mk.device),
                           lambda a=a3, b=b3, ref=ref: ref(a, b), "matmul")
        a3 = mk.dense([4, m, k], dtype)
        b = mk.dense([k, n], dtype)
        yield Case("matmul", dtype, "3-D a, shared 2-D b", [a3, b], {},
                   torch.empty(4, m, n, dtype=dtype, device=mk.device),
                   lambda a=a3, b=b, ref=ref: ref(a, b), "matmul")
        a = mk.dense([m, k], dtype)
        b3 = mk.dense([4, k, n], dtype)
        yield Case("matmul", dtype, "shared 2-D a, 3-D b", [a, b3], {},
                   torch.empty(4, m, n, dtype=dtype, device=mk.device),
                   lambda a=a, b=b3, ref=ref: ref(a, b), "matmul")
        a = mk.layout([m, k], dtype, "sliced")
        b = mk.dense([k, n], dtype)
        yield Case("matmul", dtype, "padded rows (sliced a)", [a, b], {},
                   torch.empty(m, n, dtype=dtype, device=mk.device),
                   lambda a=a, b=b, ref=ref: ref(a, b), "matmul")
        # torch.matmul's rules on the host: a GQA product of expanded K
        # heads (called once per KV head), and 1-D operands.
        q = mk.dense([2, 2, 3, 4, k], dtype)
        kt = mk.dense([2, 2, 5, k], dtype)[:, :, None].expand(2, 2, 3, 5, k).transpose(-1, -2)
        yield Case("matmul", dtype, "GQA: 5-D q @ expanded K^T", [q, kt], {},
                   torch.empty(2, 2, 3, 4, 5, dtype=dtype, device=mk.device),
                   lambda a=q, b=kt, ref=ref: ref(a, b), "matmul")
        v, b = mk.dense([k], dtype), mk.dense([2, k, n], dtype)
        yield Case("matmul", dtype, "1-D a @ 3-D b", [v, b], {},
                   torch.empty(2, n, dtype=dtype, device=mk.device),
                   lambda a=v, b=b, ref=ref: ref(a, b), "matmul")
        out = torch.empty(n, m, dtype=dtype, device=mk.device).t()
        a, b = mk.dense([m, k], dtype), mk.dense([k, n], dtype)
        yield Case("matmul", dtype, "column-major out", [a, b], {}, out,
                   lambda a=a, b=b, ref=ref: ref(a, b), "matmul")
        a, b = mk.dense([1, k], dtype), mk.dense([k, 1], dtype)
        yield Case("matmul", dtype, "1 x k @ k x 1", [a, b], {},
                   torch.empty(1, 1, dtype=dtype, device=mk.device),
                   lambda a=a, b=b, ref=ref: ref(a, b), "matmul")
        a, b = mk.dense([m, 0], dtype), mk.dense([0, n], dtype)
        yield Case("matmul", dtype, "k = 0 gives zeros", [a, b], {},
                   torch.full((m, n), 7.0, dtype=dtype, device=mk.device),
                   lambda a=a, b=b, ref=ref: ref(a, b), "matmul")
        a, b = mk.dense([512, 1024], dtype), mk.dense([1024, 768], dtype)
        yield Case("matmul", dtype, "512x1024 @ 1024x768", [a, b], {},
                   torch.empty(512, 768, dtype=dtype, device=mk.device),
                   lambda a=a, b=b, ref=ref: ref(a, b), "matmul")
        # No unit stride anywhere: refusal (UNSUPPORTED) or a right answer.
        a = mk.layout([m, k], dtype, "stepped")[::2]
        b = mk.dense([k, n], dtype)
        yield Case("matmul", dtype, "no unit stride (may be refused)", [a, b], {},
                   torch.empty(a.shape[0], n, dtype=dtype, device=mk.device),
                   lambda a=a, b=b, ref=ref: ref(a, b), "matmul")


def all_dtypes(torch):
    """The thirteen dtypes of the ABI."""
    return [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
            torch.int64, torch.int16, torch.int8, torch.uint8, torch.bool] + \
        [getattr(torch, n) for n in WIDE_UNSIGNED]


def gather_rows(torch, F, ids, table):
    """F.embedding for every dtype: torch has no uint16/32/64 index_select,
    so those tables are gathered through the signed type of their width."""
    signed = {"uint16": torch.int16, "uint32": torch.int32, "uint64": torch.int64}
    name = dtype_name(table.dtype)
    if name in signed:
        return F.embedding(ids.long(), table.view(signed[name])).view(table.dtype)
    return F.embedding(ids.long(), table)


# embedding and cat
def embedding_cases(torch, mk):
    import torch.nn.functional as F

    for dtype in all_dtypes(torch):
        table = mk.dense([50, 24], dtype)
        for id_dtype in (torch.int64, torch.int32):
            ids = torch.randint(0, 50, (3, 7), dtype=id_dtype, device=mk.device)
            yield Case("embedding", dtype, f"{dtype_name(id_dtype)} ids [3,7]", [ids, table], {},
                       torch.empty(3, 7, 24, dtype=dtype, device=mk.device),
                       lambda ids=ids, w=table: gather_rows(torch, F, ids, w), "exact")
        ids = torch.randint(0, 50, (9, 4), device=mk.device).t()
        w = mk.layout([50, 24], dtype, "transposed")
        yield Case("embedding", dtype, "transposed ids, table and out", [ids, w], {},
                   torch.empty(24, 9, 4, dtype=dtype, device=mk.device).permute(2, 1, 0),
                   lambda ids=ids, w=w: gather_rows(torch, F, ids, w), "exact")
        ids = torch.tensor(7, device=mk.device)
        yield Case("embedding", dtype, "0-dim id", [ids, table], {},
                   torch.empty(24, dtype=dtype, device=mk.device),
                   lambda ids=ids, w=table: gather_rows(torch, F, ids, w), "exact")
        ids = torch.empty(0, 3, dtype=torch.int64, device=mk.device)
        yield Case("embedding", dtype, "no ids", [ids, table], {},
                   torch.empty(0, 3, 24, dtype=dtype, device=mk.device),
                   lambda ids=ids, w=table: gather_rows(torch, F, ids, w), "exact")


def cat_cases(torch, mk):
    for dtype in all_dtypes(torch):
        for dim, second in ((0, [2, 7]), (1, [5, 3]), (-1, [5, 3])):
            # contiguous, sliced and transposed inputs of different sizes at dim
            xs = [mk.dense([5, 7], dtype), mk.layout(second, dtype, "sliced"),
                  mk.layout([5, 7], dtype, "transposed")]
            out_shape = list(torch.cat([t.cpu() for t in xs], dim=dim).shape)
            yield Case("cat", dtype, f"mixed layouts dim={dim}", [xs], {"dim": dim},
                       torch.empty(out_shape, dtype=dtype, device=mk.device),
                       lambda xs=xs, d=dim: on_cpu(lambda *t: torch.cat(t, dim=d), *xs),
                       "exact")
        xs = [mk.dense([0, 3], dtype), mk.dense([2, 3], dtype)]
        yield Case("cat", dtype, "an empty input", [xs], {"dim": 0},
                   torch.empty(2, 3, dtype=dtype, device=mk.device),
                   lambda xs=xs: on_cpu(lambda *t: torch.cat(t), *xs), "exact")


def noop_cases(torch, mk):
    for dtype in all_dtypes(torch):
        x, y = mk.dense([3, 4], dtype), mk.dense([5], dtype)
        yield Case("noop", dtype, "two tensors", [x, y], {}, None, None, "exact")


# --- attention -------------------------------------------------------------


def rotary_ref(torch, x, c, s, interleaved=False):
    h = c.shape[-1]
    xf, cf, sf = x.double(), c.double(), s.double()
    if interleaved:
        a, b = xf[..., 0 : 2 * h : 2], xf[..., 1 : 2 * h : 2]
        rot = torch.stack((a * cf - b * sf, b * cf + a * sf), -1).flatten(-2)
    else:
        a, b = xf[..., :h], xf[..., h : 2 * h]
        rot = torch.cat((a * cf - b * sf, b * cf + a * sf), -1)
    return torch.cat((rot, xf[..., 2 * h :]), -1)


def sdpa_ref(torch, q, k, v, mask=None, is_causal=False, scale=None, enable_gqa=False, lower_right=False):
    import torch.nn.functional as F

    L, S = q.shape[-2], k.shape[-2]
    if lower_right:
        mask, is_causal = torch.ones(L, S, dtype=torch.bool, device=q.device).tril(S - L), False
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.double()
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask,
                                          is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def attention_cases(torch, mk):
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        # rotary: [B, H, S, D] with cos [S, h]; [B, S, H, D] with cos [S, 1, h];
        # partial rotary; a transposed (strided) input; in place.
        for xs, cs in (([2, 4, 5, 64], [5, 32]), ([2, 5, 4, 64], [5, 1, 32]), ([1, 2, 3, 80], [3, 16])):
            for inter in (False, True):
                x, c, s = mk.dense(xs, dtype), mk.dense(cs, dtype), mk.dense(cs, dtype)
                yield Case("rotary_embedding", dtype, f"{xs} cos {cs} interleaved={inter}", [x, c, s],
                           {"interleaved": inter}, torch.empty(xs, dtype=dtype, device=mk.device),
                           lambda x=x, c=c, s=s, i=inter: rotary_ref(torch, x, c, s, i))
        x = mk.dense([2, 5, 4, 64], dtype).transpose(1, 2)
        c, s = mk.dense([5, 32], dtype), mk.dense([5, 32], dtype)
        yield Case("rotary_embedding", dtype, "transposed", [x, c, s], {},
                   torch.empty(x.shape, dtype=dtype, device=mk.device),
                   lambda x=x, c=c, s=s: rotary_ref(torch, x, c, s))
        x = mk.dense([2, 4, 5, 64], dtype)
        want = rotary_ref(torch, x, c, s)
        yield Case("rotary_embedding", dtype, "in place", [x, c, s], {}, x, lambda want=want: want)
        # attention: decode, prefill, several key chunks, GQA, masks, causal.
        shapes = (([1, 8, 1, 64], [1, 8, 300, 64]), ([2, 4, 33, 64], [2, 4, 33, 64]),
                  ([1, 2, 5, 128], [1, 2, 1000, 128]))
        for qs, ks in shapes:
            for causal, lr in ((False, False), (True, False), (True, True)):
                q, k, v = mk.dense(qs, dtype), mk.dense(ks, dtype), mk.dense(ks, dtype)
                kw = {"is_causal": causal, "lower_right": lr}
                yield Case("scaled_dot_product_attention", dtype, f"{qs} x {ks} {kw}", [q, k, v], kw,
                           torch.empty(qs, dtype=dtype, device=mk.device),
                           lambda q=q, k=k, v=v, kw=kw: sdpa_ref(torch, q, k, v, **kw), "matmul")
        q, k, v = mk.dense([2, 8, 3, 64], dtype), mk.dense([2, 2, 40, 64], dtype), mk.dense([2, 2, 40, 32], dtype)
        kw = {"enable_gqa": True, "scale": 0.2}
        yield Case("scaled_dot_product_attention", dtype, "gqa Ev=32 scale", [q, k, v], kw,
                   torch.empty([2, 8, 3, 32], dtype=dtype, device=mk.device),
                   lambda q=q, k=k, v=v, kw=kw: sdpa_ref(torch, q, k, v, **kw), "matmul")
        k, v = mk.dense([2, 8, 40, 64], dtype), mk.dense([2, 8, 40, 64], dtype)
        keep = torch.rand(3, 40, device=mk.device) > 0.4
        keep[1] = False  # a fully masked row: 0, as in torch
        additive = mk.dense([2, 1, 3, 40], dtype)
        for name, mask in (("bool mask", keep), ("float mask", additive)):
            yield Case("scaled_dot_product_attention", dtype, name, [q, k, v, mask], {},
                       torch.empty([2, 8, 3, 64], dtype=dtype, device=mk.device),
                       lambda q=q, k=k, v=v, m=mask: sdpa_ref(torch, q, k, v, m), "matmul")


def linear_cases(torch, mk):
    import torch.nn.functional as F

    def ref(x, w, b=None):
        return F.linear(x.double(), w.double(), None if b is None else b.double())

    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        # decode rows, a prefill block, and a batch of 3-D input
        for xs, (n, k) in (([1, 256], (768, 256)), ([8, 1024], (1024, 1024)),
                           ([2, 33, 256], (688, 256)), ([5], (7, 5))):
            for lay in ("contiguous", "transposed", "sliced"):
                x = mk.dense(xs, dtype)
                w = mk.layout([n, k], dtype, lay)
                for b in (None, mk.dense([n], dtype)):
                    args = [x, w] if b is None else [x, w, b]
                    yield Case("linear", dtype, f"{xs} x {lay} W[{n},{k}]" +
                               (" + bias" if b is not None else ""), args, {},
                               torch.empty(xs[:-1] + [n], dtype=dtype, device=mk.device),
                               lambda a=args: ref(*a), "matmul")
        x = mk.layout([6, 64], dtype, "transposed")
        w = mk.dense([32, 64], dtype)
        yield Case("linear", dtype, "transposed input, strided out", [x, w], {},
                   torch.empty(32, 6, dtype=dtype, device=mk.device).t(),
                   lambda x=x, w=w: ref(x, w), "matmul")
        x, w = mk.dense([0, 16], dtype), mk.dense([8, 16], dtype)
        yield Case("linear", dtype, "no rows", [x, w], {},
                   torch.empty(0, 8, dtype=dtype, device=mk.device), lambda x=x, w=w: ref(x, w),
                   "matmul")


def add_rms_norm_cases(torch, mk):
    """residual += x, out = rms_norm(residual): both results are checked, the
    references computed before the call writes the residual."""
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        acc = torch.float64 if dtype == torch.float64 else torch.float32
        for shape in ([1, 256], [8, 4096], [2, 3, 5000], [300, 33]):
            for lay in ("contiguous", "sliced", "transposed"):
                x = mk.layout(shape, dtype, lay)
                residual = mk.layout(shape, dtype, "contiguous" if lay == "transposed" else lay)
                w = mk.dense([shape[-1]], dtype)
                # The sum rounds to the dtype before the norm, as torch's two
                # ops (x + residual, then rms_norm) do.
                summed = (x.to(acc) + residual.to(acc)).to(dtype)
                sf = summed.to(acc)
                want = sf * torch.rsqrt(sf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.to(acc)
                out = torch.empty(shape, dtype=dtype, device=mk.device)

                def check(out, residual=residual, summed=summed, want=want, dtype=dtype):
                    compare(torch, residual, summed, dtype, "elementwise")
                    compare(torch, out, want, dtype, "reduction")

                yield Case("add_rms_norm", dtype, f"{lay}{shape}", [x, residual, w],
                           {"eps": 1e-6}, out, None, "reduction", check)


def all_cases(torch, mk):
    import torch.nn.functional as F

    yield from unary_cases(torch, mk, F)
    for case in binary_cases(torch, mk):
        yield fix_inplace(torch, case)
    yield from clamp_cases(torch, mk)
    yield from stack_cases(torch, mk)
    yield from cast_cases(torch, mk)
    yield from silu_and_mul_cases(torch, mk, F)
    yield from rms_norm_cases(torch, mk)
    yield from softmax_cases(torch, mk)
    yield from matmul_cases(torch, mk)
    yield from noop_cases(torch, mk)
    yield from attention_cases(torch, mk)
    yield from embedding_cases(torch, mk)
    yield from cat_cases(torch, mk)
    yield from linear_cases(torch, mk)
    yield from add_rms_norm_cases(torch, mk)


def big_index_case(torch, mk):
    """More than 2^31 elements through the strided path: 64-bit indexing."""
    free, _ = torch.cuda.mem_get_info()
    rows, cols = (1 << 16) + 1, (1 << 15) + 1  # 2^31 + 3 * 2^15 + 1 elements
    need = rows * cols * 2 * 3 + (1 << 30)
    if free < need:
        return None, f"needs {need >> 30} GiB free, found {free >> 30} GiB"
    x = torch.ones(rows, 1, dtype=torch.float16, device=mk.device).expand(rows, cols)
    y = torch.full((1, cols), 2.0, dtype=torch.float16, device=mk.device)
    out = torch.empty(rows, cols, dtype=torch.float16, device=mk.device)

    def check(out):
        if not bool((out == 3).all()):
            bad = int((out != 3).sum())
            raise AssertionError(f"{bad} of {out.numel()} elements differ from 1 + 2 = 3")

    return Case("add", torch.float16, f"{rows}x{cols} broadcast (>2^31 elements)", [x, y], {},
                out, None, check=check), None


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


class Results:
    def __init__(self, backend):
        self.backend = backend
        self.rows = []
        self.t0 = time.time()

    def add(self, case_or_op, dtype, name, status, detail=""):
        self.rows.append({"op": case_or_op, "dtype": dtype_name(dtype) if dtype else None,
                          "case": name, "status": status, "detail": detail[:600]})
        if status not in ("pass", "refused"):
            print(f"  {status.upper()}: {case_or_op} {dtype_name(dtype) if dtype else ''} "
                  f"{name}: {detail[:600]}", flush=True)

    def summary(self):
        counts = {}
        for r in self.rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        return counts


def run_case(torch, backend, results, case, stream=None, served=None):
    if case.op not in served:
        served[case.op] = {}
    key = dtype_name(case.dtype)
    if key not in served[case.op]:
        served[case.op][key] = backend.serving_plugin(case.op, key)
    try:
        backend.run(case.op, case.args, case.kwargs, case.out, stream)
        if case.out is not None and case.out.is_cuda:
            torch.cuda.synchronize()
        if case.op == "noop":
            results.add(case.op, case.dtype, case.name, "pass")
            return
        if case.check is not None:
            case.check(case.out)
        else:
            compare(torch, case.out, case.ref(), case.dtype, case.kind)
        results.add(case.op, case.dtype, case.name, "pass")
    except Refused as e:
        status = "refused" if "may be refused" in case.name else "fail"
        results.add(case.op, case.dtype, case.name, status, f"refused: {e}")
    except AssertionError as e:
        results.add(case.op, case.dtype, case.name, "fail", str(e).replace("\n", " | "))
    except Exception as e:
        results.add(case.op, case.dtype, case.name, "error",
                    f"{type(e).__name__}: {e}".replace("\n", " | "))


def stream_checks(torch, backend, results, mk):
    """On a torch.cuda.Stream: the result is right, the kernel was queued
    behind the stream's earlier work (not run on another stream), and the
    call returned without waiting for that work. Both ways of naming the
    stream: stream=s, and torch.cuda.stream(s) as the current stream."""
    probes = []
    x = mk.dense([1 << 20], torch.float32)
    y = mk.dense([1 << 20], torch.float32)
    probes.append(("add", torch.float32, [x, y], {}, torch.empty_like(x),
                   lambda: torch.add(x, y), "elementwise"))
    s2 = mk.dense([256, 1000], torch.float16)
    probes.append(("softmax", torch.float16, [s2], {"dim": -1}, torch.empty_like(s2),
                   lambda: torch.softmax(s2.float(), -1), "reduction"))
    a, b = mk.dense([256, 512], torch.float32), mk.dense([512, 128], torch.float32)
    probes.append(("matmul", torch.float32, [a, b], {}, torch.empty(256, 128, device=mk.device),
                   lambda: torch.matmul(a.double(), b.double()), "matmul"))
    xs = [mk.dense([64, 64], torch.bfloat16) for _ in range(4)]
    probes.append(("stack", torch.bfloat16, [xs], {"dim": 1},
                   torch.empty(64, 4, 64, dtype=torch.bfloat16, device=mk.device),
                   lambda: torch.stack(xs, dim=1), "exact"))

    stream = torch.cuda.Stream()
    # About 0.25 s at 2 GHz (longer while clocks ramp up): ages against a
    # launch, which takes microseconds once the warm-up below is done.
    sleep_cycles = int(5e8)
    for how in ("stream=s", "current stream"):
        for op, dtype, args, kwargs, out, ref, kind in probes:
            name = f"user stream ({how})"
            try:
                # Warm up on this stream first: first-use work (module load,
                # cuBLAS workspace) may legitimately wait once.
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    backend.run(op, args, kwargs, out, stream if how == "stream=s" else None)
                torch.cuda.synchronize()
                out.fill_(float("nan") if dtype.is_floating_point else 0)
                torch.cuda.synchronize()
                with torch.cuda.stream(stream):
                    torch.cuda._sleep(sleep_cycles)
                    t0 = time.perf_counter()
                    backend.run(op, args, kwargs, out, stream if how == "stream=s" else None)
                    call_s = time.perf_counter() - t0
                still_busy = not stream.query()
                # Read `out` on the default stream without waiting for s.
                early = out.clone()
                torch.cuda.synchronize()
                compare(torch, out, ref(), dtype, kind)
                problems = []
                if call_s > 0.1:
                    problems.append(f"the call took {call_s:.3f} s: it waited for the stream")
                if not still_busy:
                    problems.append("the stream was idle right after the call: the kernel "
                                    "may have run elsewhere, or the call synchronised")
                if not bool(early.isnan().all()):
                    problems.append("out was already written when read on another stream "
                                    "before the user stream's earlier work finished")
                if problems:
                    results.add(op, dtype, name, "fail", "; ".join(problems))
                else:
                    results.add(op, dtype, name, "pass",
                                f"call {call_s * 1e6:.0f} us while the stream slept")
            except Refused as e:
                results.add(op, dtype, name, "fail", f"refused: {e}")
            except AssertionError as e:
                results.add(op, dtype, name, "fail", str(e).replace("\n", " | "))
            except Exception as e:
                results.add(op, dtype, name, "error", f"{type(e).__name__}: {e}")


def embedding_range_check(torch, backend, results, mk):
    """An id past the table is an error naming it and the table's size, and
    out keeps what it held."""
    table = mk.dense([50, 24], torch.float32)
    ids = torch.tensor([[3, 49], [50, 0]], device=mk.device)
    out = torch.full((2, 2, 24), 7.0, device=mk.device)
    name = "id 50 of a 50-row table"
    try:
        backend.run("embedding", [ids, table], {}, out, None)
        if out.is_cuda:
            torch.cuda.synchronize()
        results.add("embedding", torch.float32, name, "fail", "no error was raised")
        return
    except Exception as e:
        message = str(e)
    if out.is_cuda:
        torch.cuda.synchronize()
    if "50" not in message or "rows" not in message:
        results.add("embedding", torch.float32, name, "fail",
                    f"the error does not name the id and the table size: {message}")
    elif not bool((out == 7.0).all()):
        results.add("embedding", torch.float32, name, "fail", "out was written")
    else:
        results.add("embedding", torch.float32, name, "pass")


def other_device_check(torch, backend, results, mk):
    """With two GPUs: tensors on cuda:1 while cuda:0 is current."""
    if torch.cuda.device_count() < 2:
        results.add("add", torch.float32, "tensors on cuda:1", "skipped", "one GPU")
        return
    x = torch.randn(1000, device="cuda:1")
    y = torch.randn(1000, device="cuda:1")
    out = torch.empty_like(x)
    try:
        with torch.cuda.device(0):
            backend.run("add", [x, y], {}, out, None)
        torch.cuda.synchronize(1)
        compare(torch, out, x + y, torch.float32, "elementwise")
        results.add("add", torch.float32, "tensors on cuda:1", "pass")
    except Exception as e:
        results.add("add", torch.float32, "tensors on cuda:1", "fail", f"{e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["torchferry", "torch"],
                        default="torchferry")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cpu: a dry run without a GPU (default cuda)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--ops", default="all", help="comma-separated ops (default all)")
    parser.add_argument("--no-big", action="store_true",
                        help="skip the case of more than 2^31 elements")
    args = parser.parse_args(argv)

    report = {"backend": args.backend, "status": "skipped", "cases": []}

    def finish(code, status, reason=""):
        report["status"] = status
        if reason:
            report["reason"] = reason
            print(f"{status.upper()}: {reason}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        return code

    try:
        import torch
    except Exception as e:
        return finish(EXIT_SKIPPED, "skipped", f"torch does not import: {e}")
    report["torch"] = torch.__version__
    report["torch_cuda"] = torch.version.cuda
    on_cpu = args.device == "cpu"
    if not on_cpu and not torch.cuda.is_available():
        return finish(EXIT_SKIPPED, "skipped",
                      f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA "
                      "device; the CUDA op checks need an NVIDIA GPU")
    report["device"] = args.device
    report["gpu"] = "none (cpu dry run)" if on_cpu else torch.cuda.get_device_name(0)
    report["capability"] = "-" if on_cpu else ".".join(
        map(str, torch.cuda.get_device_capability(0)))
    # Compare against full float32 products, as the plugin computes them.
    torch.backends.cuda.matmul.allow_tf32 = False

    try:
        if args.backend == "torchferry":
            backend = TorchferryBackend()
        else:
            backend = TorchBackend()
    except Exception as e:
        traceback.print_exc()
        return finish(EXIT_SKIPPED, "skipped",
                      f"the {args.backend} backend could not start: {type(e).__name__}: {e}")
    print(f"backend {backend.name}: {backend.describe()}", flush=True)
    print(f"GPU {report['gpu']} (sm {report['capability']}), torch {torch.__version__}",
          flush=True)

    results = Results(backend.name)
    mk = Maker(torch, args.device)
    wanted = None if args.ops == "all" else set(args.ops.split(","))
    served = {}
    t0 = time.time()
    for case in all_cases(torch, mk):
        if wanted is None or case.op in wanted:
            run_case(torch, backend, results, case, served=served)
    if args.backend == "torchferry" and (wanted is None or "embedding" in wanted):
        embedding_range_check(torch, backend, results, mk)  # our error's words
    if not on_cpu and not args.no_big and (wanted is None or "add" in wanted):
        case, why = big_index_case(torch, mk)
        if case is None:
            results.add("add", torch.float16, ">2^31 elements", "skipped", why)
        else:
            run_case(torch, backend, results, case, served=served)
            del case
            torch.cuda.empty_cache()
    if not on_cpu:
        stream_checks(torch, backend, results, mk)
        other_device_check(torch, backend, results, mk)

    report["cases"] = results.rows
    report["summary"] = results.summary()
    report["served_by"] = served
    report["seconds"] = round(time.time() - t0, 1)
    not_cuda = [] if on_cpu else sorted({
        f"{op}/{dt}={p}" for op, d in served.items() for dt, p in d.items()
        if p not in (None, "cuda")})
    if not_cuda:
        report["not_served_by_cuda"] = not_cuda
        print(f"NOTE: served by another plugin: {', '.join(not_cuda)}", flush=True)
    failed = sum(v for k, v in report["summary"].items() if k in ("fail", "error"))
    print(f"{backend.name}: {len(results.rows)} cases in {report['seconds']} s: "
          f"{report['summary']}", flush=True)
    return finish(1 if failed else 0, "fail" if failed else "pass")


if __name__ == "__main__":
    sys.exit(main())
