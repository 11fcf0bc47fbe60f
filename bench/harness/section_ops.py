"""Section 4: small ops end to end, the plugin that serves them (the CPU
plugin on CPU tensors) against torch eager, with the dispatch gap."""

import math

import torch
import torch.nn.functional as F

import torchferry
from torchferry import plugins

from .results import Case, Section, Target
from .timing import Variant, compare, python_timer

SMALL_SHAPES = ([1, 4096], [8, 4096], [1, 8192])
LARGE_SHAPE = [4096, 4096]
QUICK_SHAPES = ([8, 4096],)
DTYPES = (torch.float32, torch.float16)
MATMUL_N = 16  # matmul multiplies the case's [m, k] by a [k, 16] matrix
EPS = 1e-6


class OpCase:
    """How to call one op both ways. `tensors(shape, dtype, device)` makes the
    arguments; `ferry` and `eager` are statements over them; `all` names every
    tensor, inputs and outputs, which is what the gap's noop receives."""

    def __init__(self, name, tensors, ferry, eager, eager_text):
        self.name = name
        self.tensors = tensors
        self.ferry = ferry
        self.eager = eager
        self.eager_text = eager_text


def _unary(shape, dtype, device):
    return {"x": torch.randn(shape, dtype=dtype, device=device), "out": torch.empty(shape, dtype=dtype, device=device)}


def _binary(shape, dtype, device):
    return dict(_unary(shape, dtype, device), y=torch.randn(shape, dtype=dtype, device=device))


def _gated(shape, dtype, device):
    half = shape[:-1] + [shape[-1] // 2]
    return {"x": torch.randn(shape, dtype=dtype, device=device), "out": torch.empty(half, dtype=dtype, device=device)}


def _norm(shape, dtype, device):
    return dict(_unary(shape, dtype, device), w=torch.randn(shape[-1:], dtype=dtype, device=device))


def _matmul(shape, dtype, device):
    m, k = shape
    return {
        "a": torch.randn([m, k], dtype=dtype, device=device) / math.sqrt(k),
        "b": torch.randn([k, MATMUL_N], dtype=dtype, device=device),
        "out": torch.empty([m, MATMUL_N], dtype=dtype, device=device),
    }


# The LLM ops of issue 12.
EMBEDDING_ROWS = 64  # embedding picks shape[0] rows of a [64, shape[-1]] table


def _embedding(shape, dtype, device):
    rows, dim = shape[0], shape[-1]
    return {
        "ids": torch.randint(0, EMBEDDING_ROWS, [rows], device=device),
        "w": torch.randn([EMBEDDING_ROWS, dim], dtype=dtype, device=device),
        "out": torch.empty([rows, dim], dtype=dtype, device=device),
    }


def _halves(shape, dtype, device):
    half = shape[:-1] + [shape[-1] // 2]
    return {
        "x": torch.randn(half, dtype=dtype, device=device),
        "y": torch.randn(half, dtype=dtype, device=device),
        "out": torch.empty(shape, dtype=dtype, device=device),
    }


OPS = [
    OpCase("abs", _unary, "tf.abs(x, out=out)", "torch.abs(x, out=out)", "torch.abs(x, out=y)"),
    OpCase("add", _binary, "tf.add(x, y, out=out)", "torch.add(x, y, out=out)", "torch.add(x, y, out=z)"),
    OpCase(
        "silu_and_mul",
        _gated,
        "tf.silu_and_mul(x, out=out)",
        "torch.mul(F.silu(x[..., :d]), x[..., d:], out=out)",
        "torch.mul(F.silu(x[..., :d]), x[..., d:], out=y): two ATen ops and a temporary",
    ),
    OpCase(
        "rms_norm",
        _norm,
        "tf.rms_norm(x, w, eps, out=out)",
        "F.rms_norm(x, (d2,), w, eps)",
        "F.rms_norm(x, (n,), w, eps): no out= variant, allocates its result",
    ),
    OpCase("softmax", _unary, "tf.softmax(x, -1, out=out)", "torch.softmax(x, -1, out=out)", "torch.softmax(x, -1, out=y)"),
    OpCase(
        "matmul",
        _matmul,
        "tf.matmul(a, b, out=out)",
        "torch.matmul(a, b, out=out)",
        f"torch.matmul(a, b, out=c), b of shape [k, {MATMUL_N}]",
    ),
    # The LLM ops of issue 12.
    OpCase(
        "embedding",
        _embedding,
        "tf.embedding(ids, w, out=out)",
        "torch.index_select(w, 0, ids, out=out)",
        f"torch.index_select(w, 0, ids, out=y), ids [m] into a [{EMBEDDING_ROWS}, n] table",
    ),
    OpCase(
        "cat",
        _halves,
        "tf.cat([x, y], -1, out=out)",
        "torch.cat([x, y], -1, out=out)",
        "torch.cat([x, y], -1, out=z), two halves of the last dim",
    ),
]

FERRY, EAGER, GAP = "torchferry", "torch eager", "gap (noop)"


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _shapes(ctx):
    return list(QUICK_SHAPES) if ctx.quick else list(SMALL_SHAPES) + [LARGE_SHAPE]


def _case(ctx, op, dtype, shape):
    device = ctx.device
    tensors = op.tensors(shape, dtype, device)
    names = dict(tensors, tf=torchferry.ops, torch=torch, F=F, eps=EPS, d=shape[-1] // 2, d2=shape[-1])
    served_by = plugins.kernel_for(op.name, device, _dtype_name(dtype))
    if served_by is None:
        ferry = Variant(FERRY, reason=f"no loaded plugin serves {op.name} on {device} for {_dtype_name(dtype)}")
    else:
        ferry = Variant(FERRY, python_timer(op.ferry, ctx.sync, **names), note=f"plugin {served_by}")
    noop_args = ", ".join(tensors)
    variants = [
        ferry,
        Variant(EAGER, python_timer(op.eager, ctx.sync, **names), note=op.eager_text),
        Variant(GAP, python_timer(f"noop({noop_args})", ctx.sync, noop=torchferry.ops.noop, **tensors),
                note=f"ops.noop({noop_args})"),
    ]
    large = shape == LARGE_SHAPE
    targets = [
        Target(FERRY, "max_ratio", 1.05, "large: within 5% of torch eager")
        if large
        else Target(FERRY, "max_ratio", 0.5, "≤ 0.5× torch eager's time"),
        Target(GAP, "max_ns", 300, "dispatch gap ≤ 0.3 µs"),
    ]
    numel = math.prod(shape)
    return Case(
        {"op": op.name, "dtype": _dtype_name(dtype), "shape": str(shape), "plugin": served_by or "none"},
        compare(variants, ctx.settings),
        reference=EAGER,
        targets=targets,
        extra={"elements": numel, "large": large},
    )


def _scaled_gap_estimates(cases):
    """The other definition of the gap, kept in the JSON: call time minus a
    kernel time estimated from the large shape's time per element (an
    underestimate of the gap where small shapes run from cache)."""
    large = {}
    for c in cases:
        r = c.results[FERRY]
        if c.extra["large"] and r.ok:
            large[(c.label["op"], c.label["dtype"])] = r.median_ns / c.extra["elements"]
    for c in cases:
        per_element = large.get((c.label["op"], c.label["dtype"]))
        r = c.results[FERRY]
        if per_element is not None and r.ok and not c.extra["large"]:
            kernel = per_element * c.extra["elements"]
            c.extra["kernel_estimate_scaled_ns"] = round(kernel, 1)
            c.extra["gap_estimate_scaled_ns"] = round(r.median_ns - kernel, 1)


def run(ctx):
    shapes = _shapes(ctx)
    section = Section(
        4,
        "ops",
        "Small ops end to end",
        "ns per call from Python, output preallocated where torch allows `out=`. Reference: torch eager "
        f"with {torch.get_num_threads()} intra-op thread(s) (TORCHFERRY_BENCH_THREADS; the CPU plugin runs "
        "each call on one). **Dispatch gap** = "
        "`torchferry.ops.noop` with the op's tensors (inputs and output): bridge, checks and the call "
        "into a plugin kernel that does nothing, measured in the same rounds. matmul multiplies the "
        f"case's [m, k] by a [k, {MATMUL_N}] matrix."
        + (" --quick runs one shape and no large one." if ctx.quick else f" {LARGE_SHAPE} is the large shape, where memory bandwidth dominates."),
        layout="wide",
    )
    section.no_ratio = [GAP]
    todo = [(op, dtype, shape) for op in OPS for dtype in DTYPES for shape in shapes]
    for i, (op, dtype, shape) in enumerate(todo):
        ctx.progress.update(f"{op.name} {_dtype_name(dtype)} {shape}", i + 1, len(todo))
        section.cases.append(_case(ctx, op, dtype, shape))
    _scaled_gap_estimates(section.cases)
    section.notes.append("torch eager calls: " + "; ".join(f"{op.name}: `{op.eager_text}`" for op in OPS))
    return section
