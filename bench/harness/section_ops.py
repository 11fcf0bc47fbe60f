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

    def __init__(self, name, tensors, ferry, eager, eager_text, op=None):
        self.name = name
        self.op = op or name  # the op that serves it, where the case's name says more
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
]

# GEMM rows (issue 12): matmul by a weight in both layouts real models use,
# [K, N] contiguous and nn.Linear's weight.t() (a [N, K] weight read
# transposed), at the shapes of a decode step (1 and 8 rows) and two where
# memory or arithmetic dominates. Each shape is [m, K, N], float32 only.
GEMM_SHAPES = ([1, 256, 256], [8, 256, 256], [1, 1024, 1024], [8, 1024, 1024])
GEMM_LARGE_SHAPES = ([1, 4096, 4096], [1024, 1024, 1024])
GEMM_QUICK_SHAPES = ([8, 1024, 1024],)


def _gemm_tensors(transposed):
    def make(shape, dtype, device):
        m, k, n = shape
        weight = torch.randn([n, k] if transposed else [k, n], dtype=dtype, device=device) / math.sqrt(k)
        return {
            "a": torch.randn([m, k], dtype=dtype, device=device),
            "b": weight.t() if transposed else weight,
            "out": torch.empty([m, n], dtype=dtype, device=device),
        }

    return make


GEMM_OPS = [
    OpCase("matmul [K,N]", _gemm_tensors(False), "tf.matmul(a, b, out=out)", "torch.matmul(a, b, out=out)",
           "torch.matmul(a, b, out=c), b a contiguous [K, N]", op="matmul"),
    OpCase("matmul W.t()", _gemm_tensors(True), "tf.matmul(a, b, out=out)", "torch.matmul(a, b, out=out)",
           "torch.matmul(a, b, out=c), b = W.t() of a contiguous [N, K] W", op="matmul"),
]

FERRY, EAGER, GAP = "torchferry", "torch eager", "gap (noop)"


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _shapes(ctx):
    return list(QUICK_SHAPES) if ctx.quick else list(SMALL_SHAPES) + [LARGE_SHAPE]


def _case(ctx, op, dtype, shape, large=None, small_target=0.5):
    device = ctx.device
    tensors = op.tensors(shape, dtype, device)
    names = dict(tensors, tf=torchferry.ops, torch=torch, F=F, eps=EPS, d=shape[-1] // 2, d2=shape[-1])
    served_by = plugins.kernel_for(op.op, device, _dtype_name(dtype))
    if served_by is None:
        ferry = Variant(FERRY, reason=f"no loaded plugin serves {op.op} on {device} for {_dtype_name(dtype)}")
    else:
        ferry = Variant(FERRY, python_timer(op.ferry, ctx.sync, **names), note=f"plugin {served_by}")
    noop_args = ", ".join(tensors)
    variants = [
        ferry,
        Variant(EAGER, python_timer(op.eager, ctx.sync, **names), note=op.eager_text),
        Variant(GAP, python_timer(f"noop({noop_args})", ctx.sync, noop=torchferry.ops.noop, **tensors),
                note=f"ops.noop({noop_args})"),
    ]
    if large is None:
        large = shape == LARGE_SHAPE
    targets = [
        Target(FERRY, "max_ratio", 1.05, "large: within 5% of torch eager")
        if large
        else Target(FERRY, "max_ratio", small_target, f"≤ {small_target}× torch eager's time"),
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
        f"case's [m, k] by a [k, {MATMUL_N}] matrix; the `matmul [K,N]` and `matmul W.t()` rows are [m, K] by a "
        "[K, N] weight, contiguous or nn.Linear's layout (shape [m, K, N], float32)."
        + (" --quick runs one shape and no large one." if ctx.quick else f" {LARGE_SHAPE} is the large shape, where memory bandwidth dominates."),
        layout="wide",
    )
    section.no_ratio = [GAP]
    todo = [(op, dtype, shape) for op in OPS for dtype in DTYPES for shape in shapes]
    for i, (op, dtype, shape) in enumerate(todo):
        ctx.progress.update(f"{op.name} {_dtype_name(dtype)} {shape}", i + 1, len(todo))
        section.cases.append(_case(ctx, op, dtype, shape))
    _scaled_gap_estimates(section.cases)
    # The GEMM rows: no scaled gap estimate (their "large" shapes are not the
    # small ones scaled up).
    gemm = [(s, False) for s in (GEMM_QUICK_SHAPES if ctx.quick else GEMM_SHAPES)]
    gemm += [] if ctx.quick else [(s, True) for s in GEMM_LARGE_SHAPES]
    for i, (op, (shape, large)) in enumerate((op, g) for op in GEMM_OPS for g in gemm):
        ctx.progress.update(f"{op.name} {shape}", i + 1, len(GEMM_OPS) * len(gemm))
        section.cases.append(_case(ctx, op, torch.float32, shape, large=large, small_target=0.8))
    section.notes.append("torch eager calls: " + "; ".join(f"{op.name}: `{op.eager_text}`" for op in OPS + GEMM_OPS))
    return section
