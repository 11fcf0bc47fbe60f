"""Section 4: small ops end to end, the plugin that serves them (the CPU
plugin on CPU tensors) against torch eager, with the dispatch gap."""

import dataclasses
import math

import torch
import torch.nn.functional as F

import torchferry
from torchferry import plugins

from .results import Case, Section, Target
from .timing import Variant, at_threads, compare, python_timer

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

    def __init__(self, name, tensors, ferry, eager, eager_text, op=None, eager_only=()):
        self.eager_only = eager_only  # tensors only the eager call reads: not the gap's
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


# embedding and cat
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
    # embedding and cat
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

# --- attention: each op at the shapes of a decoder's layer, [B, H, L, D] ---


def _rotary(shape, dtype, device):
    b, h, l, d = shape
    return {
        "x": torch.randn(shape, dtype=dtype, device=device),
        "c": torch.randn([l, d // 2], dtype=dtype, device=device),
        "s": torch.randn([l, d // 2], dtype=dtype, device=device),
        "c2": torch.randn([l, d], dtype=dtype, device=device),
        "s2": torch.randn([l, d], dtype=dtype, device=device),
        "out": torch.empty(shape, dtype=dtype, device=device),
    }


def _attention(shape, dtype, device):
    b, h, l, s, e = shape
    return {
        "q": torch.randn([b, h, l, e], dtype=dtype, device=device),
        "k": torch.randn([b, h, s, e], dtype=dtype, device=device),
        "v": torch.randn([b, h, s, e], dtype=dtype, device=device),
        "out": torch.empty([b, h, l, e], dtype=dtype, device=device),
    }


ROTARY = OpCase(
    "rotary_embedding",
    _rotary,
    "tf.rotary_embedding(x, c, s, out=out)",
    "torch.add(x * c2, torch.cat((-x[..., d:], x[..., :d]), -1) * s2, out=out)",
    "x * cos + rotate_half(x) * sin, transformers' apply_rotary_pos_emb",
    eager_only=("c2", "s2"),
)
SDPA = OpCase(
    "scaled_dot_product_attention",
    _attention,
    "tf.scaled_dot_product_attention(q, k, v, is_causal=causal, lower_right=causal, out=out)",
    "F.scaled_dot_product_attention(q, k, v, is_causal=causal)",
    "F.scaled_dot_product_attention(q, k, v, is_causal=...): no out= variant",
)
# (op, shapes, causal): rotary [B, H, L, D]; attention [B, H, L, S, E].
ATTENTION_ROWS = [
    (ROTARY, ([1, 8, 1, 64], [1, 8, 32, 64]), False),
    (SDPA, ([1, 8, 1, 32, 64], [1, 8, 1, 1024, 64]), False),
    (SDPA, ([1, 8, 128, 128, 64],), True),
]
QUICK_ATTENTION_ROWS = [(ROTARY, ([1, 8, 1, 64],), False), (SDPA, ([1, 8, 1, 32, 64],), False)]


# GEMM rows: matmul by a weight in both layouts real models use,
# [K, N] contiguous and nn.Linear's weight.t() (a [N, K] weight read
# transposed), at the shapes of a decode step (1 and 8 rows) and two where
# memory or arithmetic dominates. Each shape is [m, K, N], float32 only.
GEMM_SHAPES = ([1, 256, 256], [8, 256, 256], [1, 1024, 1024], [8, 1024, 1024])
GEMM_LARGE_SHAPES = ([1, 4096, 4096], [1024, 1024, 1024])
GEMM_QUICK_SHAPES = ([8, 1024, 1024],)
# nn.Linear's call at a prefill's size, where arithmetic dominates: held to
# 10% of torch rather than 5%, the margin a blocked GEMM beside oneDNN's is given.
LINEAR_SHAPE = [64, 4096, 4096]
LINEAR_LIMIT = 1.10


def _gemm_tensors(transposed):
    def make(shape, dtype, device):
        m, k, n = shape
        weight = torch.randn([n, k] if transposed else [k, n], dtype=dtype, device=device) / math.sqrt(k)
        return {
            "a": torch.randn([m, k], dtype=dtype, device=device),
            "b": weight.t() if transposed else weight,
            "out": torch.empty([m, n], dtype=dtype, device=device),
            **({"w": weight} if transposed else {}),
        }

    return make


LINEAR = OpCase("linear", _gemm_tensors(True), "tf.linear(a, w, out=out)", "torch.matmul(a, b, out=out)",
                "torch.matmul(a, W.t(), out=c): F.linear's product, W a contiguous [N, K]", op="linear",
                eager_only=("b",))

GEMM_OPS = [
    OpCase("matmul [K,N]", _gemm_tensors(False), "tf.matmul(a, b, out=out)", "torch.matmul(a, b, out=out)",
           "torch.matmul(a, b, out=c), b a contiguous [K, N]", op="matmul"),
    OpCase("matmul W.t()", _gemm_tensors(True), "tf.matmul(a, b, out=out)", "torch.matmul(a, b, out=out)",
           "torch.matmul(a, b, out=c), b = W.t() of a contiguous [N, K] W", op="matmul", eager_only=("w",)),
]

# The small shapes' goal: at least 35 of the 48 small cases at <= 0.5x.
SMALL_COUNT, SMALL_NEED = 48, 35

FERRY, EAGER, GAP = "torchferry", "torch eager", "gap (noop)"
# The same pair with torch (and so the CPU plugin) at one intra-op thread,
# in the same rounds: what a kernel costs without help from other cores.
FERRY_1, EAGER_1 = "torchferry, 1 thread", "torch eager, 1 thread"


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _shapes(ctx):
    return list(QUICK_SHAPES) if ctx.quick else list(SMALL_SHAPES) + [LARGE_SHAPE]


# torch splits an op over threads only past this many elements
# (at::internal::GRAIN_SIZE): below it both columns would time the same
# single-threaded call again, so the 1-thread pair is left out there.
TORCH_GRAIN = 32768


def _one_thread(ctx, elements=None):
    """Whether the 1-thread pair is measured beside the run's own: only when
    the run's count is not already 1, not on a GPU (no torch threads), and,
    for a row of `elements`, where torch could use a second thread."""
    if elements is not None and elements < TORCH_GRAIN:
        return False
    return ctx.threads > 1 and ctx.device == "cpu"


def _threads_text(n):
    return f"{n} thread{'' if n == 1 else 's'}"


def _case(ctx, op, dtype, shape, small_op=True, causal=False, large=None, small_target=0.5, limit=None, need=None):
    """small_op: one of the small ops, held to their ratio targets; the
    attention rows are held to the dispatch gap alone. `limit`: the large
    shape's bound, 5% over torch unless given; `need`: how many of the small
    target's cases must meet it."""
    device = ctx.device
    tensors = op.tensors(shape, dtype, device)
    d = shape[-1] // 2
    names = dict(tensors, tf=torchferry.ops, torch=torch, F=F, eps=EPS, d=d, d2=shape[-1], causal=causal)
    served_by = plugins.kernel_for(op.op, device, _dtype_name(dtype))
    if served_by is None:
        ferry = Variant(FERRY, reason=f"no loaded plugin serves {op.op} on {device} for {_dtype_name(dtype)}")
    else:
        ferry = Variant(FERRY, python_timer(op.ferry, ctx.sync, **names), note=f"plugin {served_by}")
    eager = Variant(EAGER, python_timer(op.eager, ctx.sync, **names), note=op.eager_text)
    gap_tensors = {k: t for k, t in tensors.items() if k not in op.eager_only}
    noop_args = ", ".join(gap_tensors)
    gap = Variant(GAP, python_timer(f"noop({noop_args})", ctx.sync, noop=torchferry.ops.noop, **gap_tensors),
                  note=f"ops.noop({noop_args})")
    if large is None:
        large = shape == LARGE_SHAPE
    at = f" at {_threads_text(ctx.threads)}" if ctx.device == "cpu" else ""

    def goal(variant, over, where):
        if limit is not None:
            return Target(variant, "max_ratio", limit, f"within {round((limit - 1) * 100)}% of torch eager{where}",
                          over=over)
        if large:
            return Target(variant, "max_ratio", 1.05, f"large: within 5% of torch eager{where}", over=over)
        return Target(variant, "max_ratio", small_target, f"≤ {small_target}× torch eager's time{where}", over=over,
                      need=need if over is None else None)

    variants, ratio_over = [ferry, eager], {}
    targets = [goal(FERRY, None, at)] if small_op else []
    tensor_elements = sum(t.numel() for t in tensors.values())
    if _one_thread(ctx, tensor_elements):
        # The pair again at one thread, interleaved in the same rounds; its
        # ratio is over torch at one thread, never over torch at many.
        ferry_timer = ferry.timer
        variants += [
            Variant(FERRY_1, ferry_timer and at_threads(1, ferry_timer), reason=ferry.reason, note=ferry.note),
            Variant(EAGER_1, at_threads(1, eager.timer), note=op.eager_text),
        ]
        # Each round sets its own count: a 1-thread round must not carry over.
        ferry.timer = ferry_timer and at_threads(ctx.threads, ferry_timer)
        eager.timer = at_threads(ctx.threads, eager.timer)
        gap.timer = at_threads(ctx.threads, gap.timer)
        ratio_over = {FERRY_1: EAGER_1}
        if small_op:
            targets.append(goal(FERRY_1, EAGER_1, " at 1 thread"))
    variants.append(gap)
    targets.append(Target(GAP, "max_ns", 300, "dispatch gap ≤ 0.3 µs"))
    numel = math.prod(shape)
    label_shape = str(shape) + (" causal" if causal else "")
    # A comparison's time stays what three variants had: the 1-thread pair
    # costs rounds (never fewer than min_rounds), not run time.
    share = 3 / len(variants)
    settings = dataclasses.replace(
        ctx.settings,
        rounds=max(ctx.settings.min_rounds, round(ctx.settings.rounds * share)),
        case_budget_s=ctx.settings.case_budget_s * share,
    )
    return Case(
        {"op": op.name, "dtype": _dtype_name(dtype), "shape": label_shape, "plugin": served_by or "none"},
        compare(variants, settings),
        reference=EAGER,
        targets=targets,
        extra={"elements": numel, "tensor_elements": tensor_elements, "large": large, "limit": limit},
        ratio_over=ratio_over,
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


def _method_threads(ctx):
    if ctx.device != "cpu":
        return "torch eager"
    text = (f"torch eager with {_threads_text(ctx.threads)} (torch's default unless TORCHFERRY_BENCH_THREADS "
            "says otherwise; the CPU plugin follows torch's count)")
    if _one_thread(ctx):
        text += (f"; the `{FERRY_1}` and `{EAGER_1}` columns are the same pair with torch and the plugin at one "
                 f"thread, in the same rounds, and `{FERRY_1}`'s ratio is over `{EAGER_1}`; they are left out of "
                 f"rows whose tensors hold fewer than {TORCH_GRAIN} elements in all, below which torch uses one "
                 "thread anyway")
    return text


def run(ctx):
    shapes = _shapes(ctx)
    section = Section(
        4,
        "ops",
        "Small ops end to end",
        "ns per call from Python, output preallocated where torch allows `out=`. Reference: "
        f"{_method_threads(ctx)}. **Dispatch gap** = "
        "`torchferry.ops.noop` with the op's tensors (inputs and output): bridge, checks and the call "
        "into a plugin kernel that does nothing, measured in the same rounds. matmul multiplies the "
        f"case's [m, k] by a [k, {MATMUL_N}] matrix; the `matmul [K,N]` and `matmul W.t()` rows are [m, K] by a "
        "[K, N] weight, contiguous or nn.Linear's layout (shape [m, K, N], float32); the `linear` row is "
        f"`ops.linear` at {LINEAR_SHAPE} (in nn.Linear's layout), held to {round((LINEAR_LIMIT - 1) * 100)}% of torch."
        + (" --quick runs one shape and no large one." if ctx.quick else f" {LARGE_SHAPE} is the large shape, where memory bandwidth dominates."),
        layout="wide",
    )
    section.no_ratio = [GAP]
    if ctx.device == "cpu":
        section.headers = {FERRY: f"torchferry, {_threads_text(ctx.threads)}",
                           EAGER: f"torch eager, {_threads_text(ctx.threads)}"}
    todo = [(op, dtype, shape) for op in OPS for dtype in DTYPES for shape in shapes]
    # The goal for the small shapes is a share of them, not each one.
    small_count = sum(1 for _, _, shape in todo if shape != LARGE_SHAPE)
    need = SMALL_NEED if small_count == SMALL_COUNT else None
    for i, (op, dtype, shape) in enumerate(todo):
        ctx.progress.update(f"{op.name} {_dtype_name(dtype)} {shape}", i + 1, len(todo))
        section.cases.append(_case(ctx, op, dtype, shape, need=need))
    _scaled_gap_estimates(section.cases)
    # attention: its own shapes, after the small ops (not in their count).
    rows = QUICK_ATTENTION_ROWS if ctx.quick else ATTENTION_ROWS
    attention = [(op, dtype, shape, causal) for op, shapes, causal in rows for dtype in DTYPES for shape in shapes]
    for i, (op, dtype, shape, causal) in enumerate(attention):
        ctx.progress.update(f"{op.name} {_dtype_name(dtype)} {shape}", i + 1, len(attention))
        section.cases.append(_case(ctx, op, dtype, shape, small_op=False, causal=causal))
    section.notes.append(
        "rotary_embedding shapes are [B, H, L, D] (cos and sin [L, D/2]); scaled_dot_product_attention "
        "shapes are [B, H, L, S, E], held to the dispatch gap only."
    )
    # The GEMM rows: no scaled gap estimate (their "large" shapes are not the
    # small ones scaled up).
    gemm = [(s, False) for s in (GEMM_QUICK_SHAPES if ctx.quick else GEMM_SHAPES)]
    gemm += [] if ctx.quick else [(s, True) for s in GEMM_LARGE_SHAPES]
    todo = [(op, shape, large, None) for op in GEMM_OPS for shape, large in gemm]
    todo.append((LINEAR, LINEAR_SHAPE, True, LINEAR_LIMIT))
    for i, (op, shape, large, limit) in enumerate(todo):
        ctx.progress.update(f"{op.name} {shape}", i + 1, len(todo))
        section.cases.append(_case(ctx, op, torch.float32, shape, large=large, small_target=0.8, limit=limit))
    section.notes.append(
        "torch eager calls: "
        + "; ".join(f"{op.name}: `{op.eager_text}`" for op in OPS + [ROTARY, SDPA] + GEMM_OPS + [LINEAR])
    )
    return section
