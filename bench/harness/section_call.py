"""Section 3: Python to kernel. `torchferry.ops.noop` with 1, 3 and 8 tensors
(bridge, checks, dispatch, a kernel that reads every view) against an
apache-tvm-ffi function taking the same tensors and reading every view, and
the two doors torch's dispatcher offers: the same op as the custom op
`torch.ops.torchferry.noop` (what compiled graphs call) and a
`torch.library.custom_op` that does nothing."""

import typing

import torch

import torchferry
from torchferry import _C, bridge

from .results import Case, Section, Target
from .section_bridge import on_path, paths
from .timing import Variant, at_threads, compare, python_timer

SHAPE = [8, 4096]
COUNTS = (1, 3, 8)
REFERENCE = "torchferry noop"
TVM = "tvm-ffi function"
TORCH_DOOR = "torch.ops.torchferry.noop"
CUSTOM_OP = "custom_op doing nothing"
SHIM_PAIR = "torch's shim pair × n"
# The reference again with torch (and the plugin) at one thread: a call that
# does no parallel work must cost the same at any count.
ONE_THREAD = f"{REFERENCE}, 1 thread"


def _nothing_op():
    """A torch.library.custom_op of a tensor list that does nothing: the
    least a call through torch's dispatcher costs."""
    op = getattr(_nothing_op, "op", None)
    if op is None:

        # typing.List: torch before 2.7 does not take list[torch.Tensor].
        @torch.library.custom_op("torchferry_bench::nothing", mutates_args=())
        def nothing(tensors: typing.List[torch.Tensor]) -> None:  # noqa: UP006
            return None

        op = _nothing_op.op = nothing
    return op


def _variants(ctx, n):
    auto, others = paths()
    tensors = {f"t{j}": torch.randn(SHAPE, device=ctx.device) for j in range(n)}
    call = f"f({', '.join(tensors)})"

    def noop_on(path):
        return on_path(path, python_timer(call, ctx.sync, f=torchferry.ops.noop, **tensors))

    variants = [Variant(REFERENCE, noop_on(auto), note=f"{auto} path")]
    if ctx.threads > 1 and ctx.device == "cpu":
        variants.append(Variant(ONE_THREAD, noop_on(auto), note=f"{auto} path"))
    variants += [Variant(f"{REFERENCE} [{p}]", noop_on(p)) for p in others]
    if bridge.shim_available():
        # What torch's conversion and delete cost for the call's n tensors,
        # timed in a C++ loop: no shim-path call can cost less than this
        # plus the rest of the call, which the offset path measures.
        first = next(iter(tensors.values()))
        variants.append(Variant(SHIM_PAIR, lambda k: n * _C._time_shim_pair(first, k)))
    tvm = ctx.peers["apache-tvm-ffi"]
    if tvm.ok:
        variants.append(Variant(TVM, python_timer(call, ctx.sync, f=tvm.value[n], **tensors), note=f"tvm-ffi {tvm.version}"))
    else:
        variants.append(Variant(TVM, reason=tvm.reason))
    listed = f"f([{', '.join(tensors)}])"
    if hasattr(torch.ops.torchferry, "noop"):
        variants.append(Variant(TORCH_DOOR, python_timer(listed, ctx.sync, f=torch.ops.torchferry.noop, **tensors), note="torchferry.library"))
    else:
        variants.append(Variant(TORCH_DOOR, reason=torchferry.COMPILE_UNAVAILABLE or "torchferry.library did not load"))
    if hasattr(torch.library, "custom_op"):
        variants.append(Variant(CUSTOM_OP, python_timer(listed, ctx.sync, f=_nothing_op(), **tensors)))
    else:
        variants.append(Variant(CUSTOM_OP, reason=f"torch {torch.__version__} has no torch.library.custom_op (torch >= 2.4)"))
    if ctx.threads > 1 and ctx.device == "cpu":
        # Each round sets its own count: the one-thread column's must not
        # carry over into the next variant's.
        for v in variants:
            if v.timer is not None:
                v.timer = at_threads(1 if v.name == ONE_THREAD else ctx.threads, v.timer)
    return variants


def run(ctx):
    section = Section(
        3,
        "call",
        "Python to kernel",
        f"ns per call from Python; float32 tensors of shape {SHAPE}. Reference: `torchferry.ops.noop` on "
        "the path torchferry chose; the tvm-ffi peer is a typed C++ function of as many `TensorView`s; "
        f"`{TORCH_DOOR}` is the same op through torch's dispatcher (the custom op compiled graphs call), "
        f"`{CUSTOM_OP}` a `torch.library.custom_op` of the tensor list whose body is `return None`. "
        f"Every column runs with torch at {torch.get_num_threads()} intra-op thread(s) but `{ONE_THREAD}`, the "
        "reference at one thread in the same rounds (shown when the run's count is above 1).",
        layout="wide",
    )
    try:
        auto, _ = paths()
        for i, n in enumerate(COUNTS):
            ctx.progress.update(f"{n} tensors", i + 1, len(COUNTS))
            case = Case({"tensors": n}, compare(_variants(ctx, n), ctx.settings), REFERENCE, _targets(auto, n))
            section.cases.append(case)
            if n == 3:
                section.notes += _floor_note(case, auto)
    finally:
        bridge.set_path("auto")
    return section


def _on(path, auto):
    return REFERENCE if path == auto else f"{REFERENCE} [{path}]"


def _targets(auto, n):
    """noop(3 tensors): at least 2x faster than tvm-ffi's on the path
    torchferry chose and 4x on the offset path; on the shim path, torchferry's
    share (the call less torch's pair for each tensor) no more than the whole
    call on the offset path."""
    if n != 3:
        return []
    offset = _on("offset", auto)
    targets = [
        Target(TVM, "min_ratio", 2, f"noop(3) on the {auto} path ≥ 2× faster than tvm-ffi's"),
    ]
    if auto != "offset":
        targets.append(Target(TVM, "min_ratio", 4, "noop(3) on the offset path ≥ 4× faster than tvm-ffi's", over=offset))
    else:
        targets[0] = Target(TVM, "min_ratio", 4, "noop(3) on the offset path ≥ 4× faster than tvm-ffi's")
    if bridge.shim_available():
        targets.append(
            Target(
                _on("shim", auto),
                "max_share",
                1.0,
                "shim noop(3) − torch's pair × 3 ≤ offset noop(3)",
                minus=SHIM_PAIR,
                over=offset,
            )
        )
    return targets


def _floor_note(case, auto):
    """The least a shim-path call of these tensors could cost: the offset
    path's call (which holds no handle) plus torch's pair for each tensor; and
    how that floor compares with tvm-ffi's call."""
    r = case.results
    names = [_on("shim", auto), _on("offset", auto), SHIM_PAIR, TVM]
    if not all(name in r and r[name].ok for name in names):
        return []
    shim, offset, pair, tvm = (r[name].median_ns for name in names)
    floor = offset + pair
    return [
        f"noop(3) on the shim path: {shim:.0f} ns; its floor, the offset path's call ({offset:.0f} ns) plus "
        f"torch's pair for each tensor ({pair:.0f} ns), is {floor:.0f} ns, so the shim path is "
        f"{shim / floor:.2f}× its floor, and at that floor it would be {tvm / floor:.2f}× faster than tvm-ffi's "
        f"({tvm:.0f} ns)."
    ]
